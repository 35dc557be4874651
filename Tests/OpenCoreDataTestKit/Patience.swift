import Foundation

/// How long a test waits for something that should happen (a notification, a page update, a child
/// process's first save) before it records a failure.
///
/// Generous on purpose: it only guards against a hang, and a test that succeeds stops waiting as
/// soon as the thing happens. Swift Testing starts every test at once, so on a 2-core machine a
/// waiting test may get no thread for tens of seconds while the others run; a slower CI machine
/// stretches that further.
public let patience: TimeInterval = 120

/// Checks `condition` every `interval` until it holds; whether it held.
///
/// It gives up only when `seconds` have passed *and* it has checked `seconds / interval` times.
/// Wall-clock time alone is no measure here: while the pool's threads run other tests, a waiting
/// test gets no turn, and the thing it waits for (a message, a notification) gets none either; a
/// deadline counted only in seconds then fails a test for time it never had. Counting checks
/// stretches the wait by however long the test went without a thread.
///
/// Between checks the task sleeps, giving its thread back, and waits for a turn on the shared
/// pool. It runs on the caller's actor, so the condition may read the caller's state.
public func eventually(
    within seconds: TimeInterval = patience, every interval: Duration = .milliseconds(10),
    isolation: isolated (any Actor)? = #isolation, _ condition: () async throws -> Bool
) async throws -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + .seconds(seconds)
    let intervalSeconds = Double(interval.components.seconds) + Double(interval.components.attoseconds) / 1e18
    let checksOwed = intervalSeconds > 0 ? Int((seconds / intervalSeconds).rounded(.up)) : 0
    var checks = 0
    while try await !condition() {
        checks += 1
        guard clock.now < deadline || checks < checksOwed else { return false }
        try await Task.sleep(for: interval)
        // A check counts only once the shared pool has had a turn: a test on the main actor
        // keeps checking while other tests hold every pool thread, and what it waits for (an
        // async observer's task) may need one.
        await Task.detached {}.value
    }
    return true
}
