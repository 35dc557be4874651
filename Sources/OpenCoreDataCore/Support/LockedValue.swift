import Foundation

/// A value guarded by a lock: every read and write goes through `withLock`.
///
/// It is `Sendable` when its value is: the lock makes access exclusive, but it can't make a
/// non-`Sendable` value safe to hand to another thread.
final class LockedValue<Value> {
    private var value: Value
    private let lock = NSLock()

    init(_ value: Value) { self.value = value }

    /// Runs `body` with the value, the lock held.
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

// The lock serializes every access to `value`, which is itself `Sendable`.
extension LockedValue: @unchecked Sendable where Value: Sendable {}
