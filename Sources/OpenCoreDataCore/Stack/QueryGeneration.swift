import Foundation

/// One generation of a coordinator's stores: for each store that can keep one (SQLite in WAL
/// mode), a read snapshot of it taken at the same moment, under the coordinator's lock. Stores
/// that can't (in memory, other journal modes, server and custom stores) are read as they are
/// now, which is what Core Data does for them too.
///
/// A pinned context's reads run with the generation in `reading`; the store reads from its
/// snapshot instead of its own connection. The snapshots are let go with the last token or context
/// that holds the generation.
/// Unchecked Sendable: the snapshots are immutable references, each used under its store's rules.
final class QueryGeneration: @unchecked Sendable {
    /// The generation the current read is for, if any.
    @TaskLocal static var reading: QueryGeneration?

    /// The coordinator whose stores it snapshots.
    private(set) weak var coordinator: NSPersistentStoreCoordinator?
    /// A snapshot with the store it was taken of (held weakly: a store removed and freed is never
    /// mistaken for another).
    struct Snapshot {
        weak var store: NSPersistentStore?
        let snapshot: AnyObject
    }
    private let snapshots: [Snapshot]
    /// A number for logs, increasing with each generation made.
    let number: Int

    private static let counter = LockedValue(0)

    init(coordinator: NSPersistentStoreCoordinator, snapshots: [Snapshot]) {
        self.coordinator = coordinator
        self.snapshots = snapshots
        number = Self.counter.withLock { $0 += 1; return $0 }
    }

    /// Whether no store keeps a snapshot: reads under it are plain reads.
    var isEmpty: Bool { snapshots.isEmpty }

    /// The snapshot kept for `store`, if any.
    func snapshot(of store: NSPersistentStore) -> AnyObject? {
        snapshots.first { $0.store === store }?.snapshot
    }
}

/// A store that can keep reading the state of one moment while others write.
protocol SnapshotReadingStore: NSPersistentStore {
    /// A snapshot of the store as it is now, or nil when the store can't keep one.
    func makeReadSnapshot() throws -> AnyObject?
}

extension NSPersistentStoreCoordinator {
    /// The newest generation of the stores, snapshotted together.
    func makeQueryGeneration() throws -> QueryGeneration {
        try withLock {
            var snapshots: [QueryGeneration.Snapshot] = []
            for case let store as any SnapshotReadingStore in stores {
                if let snapshot = try store.makeReadSnapshot() { snapshots.append(.init(store: store, snapshot: snapshot)) }
            }
            return QueryGeneration(coordinator: self, snapshots: snapshots)
        }
    }
}
