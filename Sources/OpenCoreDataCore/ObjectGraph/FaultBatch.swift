import Foundation

/// The ordered object IDs of a fetch made with a `fetchBatchSize`: the fetch reads only IDs, and
/// the first time a fault of the result fires, the rows of its whole batch are loaded in one query.
///
/// Invariant: `ids[index]` is the ID of the object whose `faultBatchIndex` is `index`; batches are
/// `[k * size, (k + 1) * size)`.
final class FaultBatch {
    let ids: [NSManagedObjectID]
    let size: Int
    private var loaded: Set<Int> = []

    init(ids: [NSManagedObjectID], size: Int) {
        self.ids = ids
        self.size = max(size, 1)
    }

    /// Loads the batch that holds `index` into the context's faults, once.
    func loadBatch(containing index: Int, in context: NSManagedObjectContext) {
        let batch = index / size
        guard loaded.insert(batch).inserted else { return }
        let range = (batch * size)..<min((batch + 1) * size, ids.count)
        guard let parent = context.parentStore else { return }
        // Ignored: a batch that can't be read leaves its objects faults: each then loads its own row when
        // it fires, and that load reports the store's error (see `fireFaultIfNeeded`).
        try? context.fillFaults(ids[range].compactMap { context.registeredObject(for: $0) }, parent: parent)
    }
}
