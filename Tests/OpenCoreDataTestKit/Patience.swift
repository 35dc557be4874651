import Foundation

/// How long a test waits for something that should happen (a notification, a page update, a child
/// process's first save) before it records a failure.
///
/// Generous on purpose: it only guards against a hang, and a test that succeeds stops waiting as
/// soon as the thing happens. Swift Testing starts every test at once, so on a 2-core machine a
/// waiting test may get no thread for tens of seconds while the others run; a slower CI machine
/// stretches that further.
public let patience: TimeInterval = 120

/// Checks `condition` every `interval` until it holds or `seconds` have passed; whether it held.
/// Between checks the task sleeps, giving its thread back. It runs on the caller's actor, so the
/// condition may read the caller's state.
public func eventually(
    within seconds: TimeInterval = patience, every interval: Duration = .milliseconds(10),
    isolation: isolated (any Actor)? = #isolation, _ condition: () async throws -> Bool
) async throws -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while try await !condition() {
        guard Date() < deadline else { return false }
        try await Task.sleep(for: interval)
    }
    return true
}
