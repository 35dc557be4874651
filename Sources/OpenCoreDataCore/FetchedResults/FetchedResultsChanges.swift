import Foundation

/// The changes of one batch, expressed as UITableView batch updates need them, computed from the
/// rows the batch touched only (never from all rows).
///
/// Rows that did not change keep their relative order (the results are sorted and their keys did
/// not change). A changed row that survives is an `.update` when its place among the unchanged
/// rows, its section and its order relative to other updated rows stay the same, and a `.move`
/// otherwise. A move whose old and new index paths are equal is reported as a delete and an
/// insert, since a table view rejects a move onto its own index path; so is a move out of a
/// deleted section or into an inserted one.
struct FetchedResultsChanges {
    /// A row's place: its position among all rows, its section and its row in the section.
    struct Place {
        let position: Int
        let section: Int
        let row: Int

        init(position: Int, section: Int, row: Int) {
            self.position = position
            self.section = section
            self.row = row
        }

        var path: IndexPath { IndexPath(row: row, section: section) }
    }

    /// A row the batch touched: where it was, where it is, and whether its object changed (rather
    /// than entering or leaving a window of the results).
    struct TouchedRow {
        let object: NSManagedObject
        let old: Place?
        let new: Place?
        let changed: Bool
    }

    struct ObjectChange {
        let object: NSManagedObject
        let type: NSFetchedResultsChangeType
        let old: IndexPath?
        let new: IndexPath?
    }

    var deletedSections: [(index: Int, name: String)] = []
    var insertedSections: [(index: Int, name: String)] = []
    var objects: [ObjectChange] = []
    /// Rows removed from the old order and inserted into the new one (deletes, inserts, moves).
    var removedPositions: [(position: Int, object: NSManagedObject)] = []
    var insertedPositions: [(position: Int, object: NSManagedObject)] = []
    /// Changed objects still in the results (updated or moved): what a snapshot marks reloaded.
    var changedSurvivors: [NSManagedObject] = []

    var isEmpty: Bool { deletedSections.isEmpty && insertedSections.isEmpty && objects.isEmpty }

    init(rows: [TouchedRow], oldSections: [String], newSections: [String]) {
        // Most batches leave the sections as they were: then no set of names is needed.
        let sameSections = oldSections == newSections
        let oldNames = sameSections ? [] : Set(oldSections)
        let newNames = sameSections ? [] : Set(newSections)
        if !sameSections {
            for (index, name) in oldSections.enumerated() where !newNames.contains(name) { deletedSections.append((index, name)) }
            for (index, name) in newSections.enumerated() where !oldNames.contains(name) { insertedSections.append((index, name)) }
        }

        // Each row's old and new position (-1: none), read once so that sorting and ranking
        // compare plain integers.
        let oldPositionOf = rows.map { $0.old?.position ?? -1 }
        let newPositionOf = rows.map { $0.new?.position ?? -1 }
        // Ranks among the rows the batch did not touch: a touched row's place less the touched rows before it.
        let oldPositions = oldPositionOf.filter { $0 >= 0 }.sorted()
        let newPositions = newPositionOf.filter { $0 >= 0 }.sorted()
        func rank(_ position: Int, among sorted: [Int]) -> Int {
            var low = 0, high = sorted.count
            while low < high {
                let middle = (low + high) / 2
                if sorted[middle] < position { low = middle + 1 } else { high = middle }
            }
            return position - low
        }

        // Rows that were and are in the results, by their index in `rows`, with their rank among
        // the untouched rows in the new order.
        var survivors: [Int] = []
        var stays: [Bool] = []
        var newRanks: [Int] = []
        objects.reserveCapacity(rows.count)
        survivors.reserveCapacity(rows.count)
        stays.reserveCapacity(rows.count)
        newRanks.reserveCapacity(rows.count)
        for (index, row) in rows.enumerated() {
            switch (row.old, row.new) {
            case let (old?, nil):
                objects.append(ObjectChange(object: row.object, type: .delete, old: old.path, new: nil))
                removedPositions.append((old.position, row.object))
            case let (nil, new?):
                objects.append(ObjectChange(object: row.object, type: .insert, old: nil, new: new.path))
                insertedPositions.append((new.position, row.object))
            case let (old?, new?):
                // A survivor stays in place when its section and its rank among the untouched rows hold…
                let sameSection = sameSections ? old.section == new.section : oldSections[old.section] == newSections[new.section]
                let newRank = rank(new.position, among: newPositions)
                survivors.append(index)
                newRanks.append(newRank)
                stays.append(sameSection && rank(old.position, among: oldPositions) == newRank)
            default:
                break
            }
        }
        // Survivors in their new order.
        let byNewPosition = survivors.indices.sorted { newPositionOf[survivors[$0]] < newPositionOf[survivors[$1]] }
        // …and its order among the staying survivors of the same rank holds too (else all of them move).
        var groupStart = 0
        while groupStart < byNewPosition.count {
            var groupEnd = groupStart + 1
            while groupEnd < byNewPosition.count && newRanks[byNewPosition[groupEnd]] == newRanks[byNewPosition[groupStart]] { groupEnd += 1 }
            if groupEnd - groupStart > 1 {
                let staying = byNewPosition[groupStart..<groupEnd].filter { stays[$0] }
                let inOrder = zip(staying, staying.dropFirst()).allSatisfy { oldPositionOf[survivors[$0]] < oldPositionOf[survivors[$1]] }
                if !inOrder { for member in staying { stays[member] = false } }
            }
            groupStart = groupEnd
        }

        for survivor in byNewPosition {
            let row = rows[survivors[survivor]]
            let (old, new) = (row.old!, row.new!)
            if row.changed { changedSurvivors.append(row.object) }
            if stays[survivor] {
                if row.changed { objects.append(ObjectChange(object: row.object, type: .update, old: old.path, new: new.path)) }
                continue
            }
            removedPositions.append((old.position, row.object))
            insertedPositions.append((new.position, row.object))
            if (old.section != new.section || old.row != new.row) && (sameSections || (newNames.contains(oldSections[old.section]) && oldNames.contains(newSections[new.section]))) {
                objects.append(ObjectChange(object: row.object, type: .move, old: old.path, new: new.path))
            } else {
                objects.append(ObjectChange(object: row.object, type: .delete, old: old.path, new: nil))
                objects.append(ObjectChange(object: row.object, type: .insert, old: nil, new: new.path))
            }
        }
    }

    /// The change of the ordered object IDs: removals at old positions, insertions at new ones,
    /// each by offset (positions are distinct, so the difference is valid).
    ///
    /// The standard library's `CollectionDifference.init?(_:)` is generic code outside this
    /// module, never specialized: it sorts and validates the changes through witness tables and
    /// tuple metadata lookups, about 13,000 instructions a change. The difference is put together
    /// from its two sorted arrays instead (see `CollectionDifferenceAssembly`).
    func difference(id: (NSManagedObject) -> NSManagedObjectID) -> CollectionDifference<NSManagedObjectID> {
        let removals = removedPositions.sorted { $0.position < $1.position }.map { CollectionDifference<NSManagedObjectID>.Change.remove(offset: $0.position, element: id($0.object), associatedWith: nil) }
        let insertions = insertedPositions.sorted { $0.position < $1.position }.map { CollectionDifference<NSManagedObjectID>.Change.insert(offset: $0.position, element: id($0.object), associatedWith: nil) }
        return CollectionDifferenceAssembly.difference(removals: removals, insertions: insertions)
    }
}

/// Builds a `CollectionDifference` from removals and insertions already sorted by offset, as its
/// initializer would store them, without running that initializer's generic sort and checks.
///
/// A `CollectionDifference` holds exactly its two public arrays, `insertions` and `removals`, in
/// that order. That layout is checked once, against a difference the standard library builds
/// itself; should a toolchain ever lay it out otherwise, the standard initializer is used.
enum CollectionDifferenceAssembly {
    /// Whether a difference is its insertions and removals, laid out in that order.
    static let layoutIsKnown: Bool = {
        typealias Difference = CollectionDifference<Int>
        guard MemoryLayout<Difference>.size == MemoryLayout<([Difference.Change], [Difference.Change])>.size,
              MemoryLayout<CollectionDifference<NSManagedObjectID>>.size == MemoryLayout<Difference>.size,
              let made = Difference([.insert(offset: 3, element: 30, associatedWith: nil), .remove(offset: 1, element: 10, associatedWith: nil),
                                     .remove(offset: 2, element: 20, associatedWith: nil)]) else { return false }
        let parts = unsafeBitCast(made, to: ([Difference.Change], [Difference.Change]).self)
        return parts.0 == made.insertions && parts.1 == made.removals && made.insertions.count == 1 && made.removals.count == 2
    }()

    /// The difference of `removals` and `insertions`, each sorted by offset with distinct offsets
    /// and no associations.
    static func difference<Element>(removals: [CollectionDifference<Element>.Change],
                                    insertions: [CollectionDifference<Element>.Change]) -> CollectionDifference<Element> {
        guard layoutIsKnown else { return CollectionDifference(removals + insertions)! }
        let assembled = unsafeBitCast((insertions, removals), to: CollectionDifference<Element>.self)
        assert(assembled.insertions.count == insertions.count && CollectionDifference(removals + insertions) != nil,
               "The changes of an assembled difference must be sorted by offset, with distinct offsets.")
        return assembled
    }
}
