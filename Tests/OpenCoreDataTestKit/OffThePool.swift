import Foundation

/// Runs blocking work (waiting for a child process, sleeping between polls) on a thread of its
/// own and awaits its result; work that can't fail makes a call that needs no `try`.
///
/// Swift Testing runs every test at once on the concurrency pool, which has one thread per core:
/// two on the CI machines. A test that blocks one of those threads for seconds stalls every other
/// test, and tests with deadlines of their own (a page waiting for messages, a browser test's time
/// limit) then fail on a slower machine. Work handed to this function blocks only its own thread.
public func offThePool<T: Sendable, Failure: Error>(_ work: @escaping @Sendable () throws(Failure) -> T) async throws(Failure) -> T {
    let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, Failure>, Never>) in
        Thread { continuation.resume(returning: Result(catching: work)) }.start()
    }
    return try result.get()
}

extension Process {
    /// Waits, off the concurrency pool, until the process exits.
    public func exited() async {
        await offThePool { self.waitUntilExit() }
    }
}
