import Foundation
import OpenCoreData
import Testing

/// A stand-in for UITableView: it applies a fetched results controller's batch of changes with
/// UITableView's batch-update rules and records an "Invalid update" exactly where UITableView would
/// raise one (bad index paths, conflicting operations, row counts that don't add up).
final class TestTableView: NSFetchedResultsControllerDelegate {
    private(set) var sections: [(name: String, rows: [NSManagedObject])] = []
    private(set) var failures: [String] = []
    private(set) var batches = 0
    private(set) var log: [String] = []

    private var sectionDeletes: [Int] = []
    private var sectionInserts: [(Int, String)] = []
    private var rowDeletes: [IndexPath] = []
    private var rowInserts: [(IndexPath, NSManagedObject)] = []
    private var moves: [(IndexPath, IndexPath, NSManagedObject)] = []
    private var reloads: [(IndexPath, NSManagedObject)] = []
    private var inBatch = false

    /// Loads the controller's current content, as `reloadData()` does.
    func reload<T>(from controller: NSFetchedResultsController<T>) {
        sections = (controller.sections ?? []).map { ($0.name, ($0.objects ?? []).compactMap { $0 as? NSManagedObject }) }
    }

    func controllerWillChangeContent(_ controller: NSFetchedResultsController<NSFetchRequestResult>) {
        if inBatch { failures.append("willChangeContent twice without didChangeContent") }
        inBatch = true
        sectionDeletes = []; sectionInserts = []; rowDeletes = []; rowInserts = []; moves = []; reloads = []
    }

    func controller(_ controller: NSFetchedResultsController<NSFetchRequestResult>, didChange sectionInfo: NSFetchedResultsSectionInfo,
                    atSectionIndex sectionIndex: Int, for type: NSFetchedResultsChangeType) {
        if !inBatch { failures.append("section change outside a batch") }
        if !rowDeletes.isEmpty || !rowInserts.isEmpty || !moves.isEmpty || !reloads.isEmpty { failures.append("section change after object changes") }
        switch type {
        case .delete: sectionDeletes.append(sectionIndex)
        case .insert: sectionInserts.append((sectionIndex, sectionInfo.name))
        default: failures.append("section change of type \(type)")
        }
        log.append("section \(type) \(sectionIndex) \(sectionInfo.name)")
    }

    func controller(_ controller: NSFetchedResultsController<NSFetchRequestResult>, didChange anObject: Any, at indexPath: IndexPath?,
                    for type: NSFetchedResultsChangeType, newIndexPath: IndexPath?) {
        guard let object = anObject as? NSManagedObject else { failures.append("change of a non-object"); return }
        switch type {
        case .delete:
            guard let indexPath else { failures.append("delete without indexPath"); return }
            rowDeletes.append(indexPath)
        case .insert:
            guard let newIndexPath else { failures.append("insert without newIndexPath"); return }
            rowInserts.append((newIndexPath, object))
        case .move:
            guard let indexPath, let newIndexPath else { failures.append("move without both index paths"); return }
            if indexPath == newIndexPath { failures.append("move to the same index path \(indexPath)") }
            moves.append((indexPath, newIndexPath, object))
        case .update:
            guard let indexPath else { failures.append("update without indexPath"); return }
            reloads.append((indexPath, object))
        }
        log.append("\(type) \(indexPath.map { "\($0.section).\($0.row)" } ?? "-") → \(newIndexPath.map { "\($0.section).\($0.row)" } ?? "-")")
    }

    func controllerDidChangeContent(_ controller: NSFetchedResultsController<NSFetchRequestResult>) {
        inBatch = false
        batches += 1
        apply(expected: controller)
    }

    private func invalid(_ message: String) { failures.append("Invalid update: \(message)") }

    private func apply(expected controller: NSFetchedResultsController<NSFetchRequestResult>) {
        let old = sections
        let expected = (controller.sections ?? []).map { ($0.name, ($0.objects ?? []).compactMap { $0 as? NSManagedObject }) }
        // Every old index path may be the source of one operation only.
        var sources: Set<IndexPath> = []
        let deletedSections = Set(sectionDeletes)
        for path in rowDeletes + moves.map(\.0) + reloads.map(\.0) {
            guard old.indices.contains(path.section), old[path.section].rows.indices.contains(path.row) else { return invalid("index path \(path) out of range before the update") }
            if !sources.insert(path).inserted { return invalid("two operations on the old row \(path)") }
        }
        // Deleting rows of a deleted section is accepted; moving or reloading them is not.
        for path in moves.map(\.0) + reloads.map(\.0) where deletedSections.contains(path.section) {
            return invalid("row moved or reloaded from deleted section \(path.section)")
        }
        let insertedSections = Set(sectionInserts.map(\.0))
        for path in moves.map(\.1) where insertedSections.contains(path.section) {
            return invalid("row moved into inserted section \(path.section)")
        }
        var destinations: Set<IndexPath> = []
        for path in rowInserts.map(\.0) + moves.map(\.1) where !destinations.insert(path).inserted {
            return invalid("two rows inserted at \(path)")
        }
        // Sections after the update.
        var newSections: [(name: String, rows: [NSManagedObject?], oldIndex: Int?)] = []
        for (index, section) in old.enumerated() where !deletedSections.contains(index) { newSections.append((section.name, [], index)) }
        for (index, name) in sectionInserts.sorted(by: { $0.0 < $1.0 }) {
            guard index <= newSections.count else { return invalid("section insert at \(index) out of range") }
            newSections.insert((name, [], nil), at: index)
        }
        guard newSections.count == expected.count else { return invalid("section count \(newSections.count) after the update, but the data source has \(expected.count)") }
        let movedOut = Set(moves.map(\.0))
        let deletedRows = Set(rowDeletes)
        let incoming = rowInserts + moves.map { ($0.1, $0.2) }
        for (sectionIndex, section) in newSections.enumerated() {
            let stayers: [NSManagedObject] = section.oldIndex.map { oldIndex in
                old[oldIndex].rows.enumerated().filter { !deletedRows.contains(IndexPath(row: $0.offset, section: oldIndex)) && !movedOut.contains(IndexPath(row: $0.offset, section: oldIndex)) }.map(\.element)
            } ?? []
            let arriving = incoming.filter { $0.0.section == sectionIndex }.sorted { $0.0.row < $1.0.row }
            let count = stayers.count + arriving.count
            guard count == expected[sectionIndex].1.count else {
                return invalid("section \(sectionIndex) would have \(count) rows, but the data source has \(expected[sectionIndex].1.count)")
            }
            var rows = [NSManagedObject?](repeating: nil, count: count)
            for (path, object) in arriving {
                guard path.row < count else { return invalid("row inserted at \(path) out of range") }
                rows[path.row] = object
            }
            var remaining = stayers.makeIterator()
            for row in rows.indices where rows[row] == nil { rows[row] = remaining.next() }
            newSections[sectionIndex].rows = rows
        }
        sections = newSections.map { ($0.name, $0.rows.compactMap { $0 }) }
        for (path, object) in reloads {
            let final = sections.firstIndex { $0.rows.contains { $0 === object } }
            if final == nil { invalid("reloaded row \(path) is gone") }
        }
        // What the table shows must be what the data source says.
        if sections.count != expected.count {
            return invalid("after the update the table shows \(sections.count) sections but the data source has \(expected.count)")
        }
        func names(_ rows: [NSManagedObject]) -> [String] { rows.map { $0.objectID.uriRepresentation().lastPathComponent } }
        for (index, section) in sections.enumerated() {
            if section.name != expected[index].0 || section.rows.count != expected[index].1.count || zip(section.rows, expected[index].1).contains(where: { $0 !== $1 }) {
                let differing = zip(section.rows, expected[index].1).filter { $0 !== $1 }.map { "\($0.0.objectID.uriRepresentation().lastPathComponent) (deleted \($0.0.isDeleted), context \($0.0.managedObjectContext != nil)) is not the data source's (deleted \($0.1.isDeleted))" }
                return invalid("after the update section \(index) shows \(names(section.rows)) but the data source has \(names(expected[index].1))\(differing.isEmpty ? "" : ": \(differing)")")
            }
        }
    }
}

/// A controller over `request`, fetched, with a table that applies its callbacks.
func tracked(_ request: NSFetchRequest<NSManagedObject>, in context: NSManagedObjectContext,
                     sectionNameKeyPath: String?) throws -> (NSFetchedResultsController<NSManagedObject>, TestTableView) {
    let controller = NSFetchedResultsController(fetchRequest: request, managedObjectContext: context, sectionNameKeyPath: sectionNameKeyPath, cacheName: nil)
    let table = TestTableView()
    controller.delegate = table
    try controller.performFetch()
    table.reload(from: controller)
    return (controller, table)
}
