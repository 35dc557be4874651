import Foundation
import OpenCoreData

/// A merge policy (object trump unless told otherwise), counting the optimistic-locking conflicts it resolves (from any
/// thread). Shared by the merge policy tests and the reliability suite's worker process.
public final class CountingMergePolicy: NSMergePolicy, @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    /// How many conflicts the policy has resolved.
    public var resolved: Int { lock.withLock { count } }

    /// A policy of the given type (object trump by default) with a count of zero.
    public init(_ type: NSMergePolicyType = .mergeByPropertyObjectTrumpMergePolicyType) { super.init(merge: type) }

    public override func resolve(optimisticLockingConflicts list: [NSMergeConflict]) throws {
        lock.withLock { count += list.count }
        try super.resolve(optimisticLockingConflicts: list)
    }
}
