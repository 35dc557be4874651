import Foundation
import OpenCoreData
@testable import OpenCoreDataCore
import Testing

/// A controller over numeric sort keys reads its rows without SQLite's primary-key tie-break and
/// puts ties in key order itself (`SortedRows.orderNumericTiesByKey`).
@Suite struct SortedRowsTieOrderTests {
    /// Rows of (key, group or NULL, score) in chunks of `chunkSize`, in the given order.
    private func rows(_ values: [(key: Int64, group: Int64?, score: Double)], chunkSize: Int) -> SortedRows {
        var rows = SortedRows()
        var chunk = SortedRowsChunk(kinds: [.integer, .double], capacity: chunkSize)
        for value in values {
            chunk.keys.append(value.key)
            chunk.columns[0].appendInteger(value.group ?? 0, isNull: value.group == nil)
            chunk.columns[1].appendDouble(value.score)
            if chunk.count == chunkSize {
                rows.chunks.append(chunk)
                chunk = SortedRowsChunk(kinds: [.integer, .double], capacity: chunkSize)
            }
        }
        if chunk.count > 0 { rows.chunks.append(chunk) }
        return rows
    }

    @Test func tiesOutOfKeyOrderAreSortedByKeyWithinTheirRun() {
        // Runs: (nil, 1) ×3, (1, 2) ×4 spanning a chunk boundary, (1, NaN) ×2, (2, 5) ×1; each out of order.
        let values: [(key: Int64, group: Int64?, score: Double)] = [
            (9, nil, 1), (3, nil, 1), (5, nil, 1),
            (8, 1, 2), (2, 1, 2), (7, 1, 2), (4, 1, 2),
            (11, 1, .nan), (10, 1, .nan),
            (1, 2, 5),
            (-2, 3, 0), (-1, 3, 0), (6, 3, 0),  // unsaved rows (negative keys) tie after saved ones, oldest first
        ]
        var sorted = rows(values, chunkSize: 5)
        sorted.orderNumericTiesByKey()
        #expect(sorted.chunks.flatMap(\.keys) == [3, 5, 9, 2, 4, 7, 8, 10, 11, 1, 6, -1, -2])
        // Values stay where they were: only keys move within a run.
        var groups: [Int64] = []
        for chunk in sorted.chunks {
            for row in 0..<chunk.count {
                if case .integer(let number) = chunk.columns[0][row] { groups.append(number) } else { groups.append(-99) }
            }
        }
        #expect(groups == values.map { $0.group ?? -99 })
    }

    @Test func tiesInOrderAreLeftAsTheyAre() {
        var values: [(key: Int64, group: Int64?, score: Double)] = []
        for index in 0..<3000 {
            let group = Int64(index / 700)
            let score = Double((index / 3) % 5)
            values.append((key: Int64(index + 1), group: group, score: score))
        }
        var sorted = rows(values, chunkSize: 1024)
        sorted.orderNumericTiesByKey()
        #expect(sorted.chunks.flatMap(\.keys) == values.map(\.key))
    }

    /// A controller over a SQLite store with many ties on numeric keys (an integer section key and a
    /// double, one NULL group): its order is a plain fetch's (which breaks ties in SQL), before and
    /// after changes, with sections and a batch size.
    @Test func aControllerOverNumericKeysOrdersTiesAsAFetchDoes() throws {
        let item = NSEntityDescription(name: "Item", properties: [
            NSAttributeDescription(name: "group", type: .integer32AttributeType),
            NSAttributeDescription(name: "score", type: .doubleAttributeType),
        ])
        let model = NSManagedObjectModel()
        model.entities = [item]
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (coordinator, _) = try TestSupport.coordinator(model, url: directory.appendingPathComponent("ties.sqlite"))
        let context = TestSupport.context(coordinator)
        try context.performAndWait {
            for index in 0..<3000 {
                let object = NSManagedObject(entity: item, insertInto: context)
                object.setValue(index % 11 == 0 ? nil : Int32(index % 7), forKey: "group")
                object.setValue(Double(index % 3), forKey: "score")
            }
            try context.save()
            let request = NSFetchRequest<NSManagedObject>(entityName: "Item")
            request.sortDescriptors = [NSSortDescriptor(key: "group", ascending: true), NSSortDescriptor(key: "score", ascending: false)]
            request.fetchBatchSize = 20
            let controller = NSFetchedResultsController(fetchRequest: request, managedObjectContext: context, sectionNameKeyPath: "group", cacheName: nil)
            final class Tracking: NSFetchedResultsControllerDelegate {}
            let delegate = Tracking()
            controller.delegate = delegate
            try controller.performFetch()
            func expectFetchOrder(_ moment: String) throws {
                let fetched = try context.fetch(request).map(\.objectID)
                #expect(controller.fetchedObjects?.map(\.objectID) == fetched, "\(moment): the controller's order is the fetch's")
            }
            try expectFetchOrder("after performFetch")
            #expect(controller.sections?.count == 8)
            // Changes that create new ties: moved rows are placed among equal ones by key.
            let objects = try context.fetch(request)
            for object in objects.prefix(200) { object.setValue(Double(7), forKey: "score") }
            for object in objects.suffix(100) { context.delete(object) }
            try context.save()
            try expectFetchOrder("after changes")
        }
    }
}
