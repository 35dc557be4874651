import Foundation

/// How long a test waits for something that should happen (a notification, a page update, a child
/// process's first save) before it records a failure.
///
/// Generous on purpose: it only guards against a hang, and a test that succeeds stops waiting as
/// soon as the thing happens. Swift Testing starts every test at once, so on a 2-core machine a
/// waiting test may get no thread for tens of seconds while the others run; a slower CI machine
/// stretches that further.
public let patience: TimeInterval = 120
