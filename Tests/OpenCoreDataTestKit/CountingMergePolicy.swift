import Foundation
import OpenCoreData

/// The object-trump merge policy, counting the optimistic-locking conflicts it resolves (from any
/// thread). Shared by the merge policy tests and the reliability suite's worker process.
public final class CountingMergePolicy: NSMergePolicy, @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    /// How many conflicts the policy has resolved.
    public var resolved: Int { lock.withLock { count } }

    /// An object-trump policy with a count of zero.
    public init() { super.init(merge: .mergeByPropertyObjectTrumpMergePolicyType) }

    public override func resolve(optimisticLockingConflicts list: [NSMergeConflict]) throws {
        lock.withLock { count += list.count }
        try super.resolve(optimisticLockingConflicts: list)
    }
}
