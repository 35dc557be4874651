import Foundation

/// Runs blocking work (waiting for a child process, sleeping between polls) on a thread of its
/// own and awaits its result.
///
/// Swift Testing runs every test at once on the concurrency pool, which has one thread per core:
/// two on the CI machines. A test that blocks one of those threads for seconds stalls every other
/// test, and tests with deadlines of their own (a page waiting for messages, a browser test's time
/// limit) then fail on a slower machine. Work handed to this function blocks only its own thread.
public func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}

/// ``offThePool(_:)`` for work that cannot fail.
public func offThePool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: work()) }.start()
    }
}

extension Process {
    /// Waits, off the concurrency pool, until the process exits.
    public func exited() async {
        nonisolated(unsafe) let process = self
        await offThePool { process.waitUntilExit() }
    }
}
