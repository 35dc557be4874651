import Foundation
import OpenCoreData
@testable import OpenCoreDataCore
import Testing

/// Controllers over a context that merges changes gathered from batch requests with
/// `mergeChanges(fromRemoteContextSave:into:)`, as apps import large feeds.
@Suite struct MergedChangesTests {
    /// The players' store, a context showing them in a controller sorted by name (its delegate a
    /// table that checks each update), and another context to run batch requests on.
    struct Stage {
        let context: NSManagedObjectContext
        let elsewhere: NSManagedObjectContext
        let controller: NSFetchedResultsController<NSManagedObject>
        let table = TestTableView()

        init() throws {
            let coordinator = try TestSupport.coordinator(FetchedResultsPropertyTests.model()).0
            context = TestSupport.context(coordinator)
            elsewhere = TestSupport.context(coordinator)
            let request = NSFetchRequest<NSManagedObject>(entityName: "Player")
            request.sortDescriptors = [NSSortDescriptor(key: "name", ascending: true)]
            controller = NSFetchedResultsController(fetchRequest: request, managedObjectContext: context, sectionNameKeyPath: nil, cacheName: nil)
            controller.delegate = table
            try controller.performFetch()
            table.reload(from: controller)
        }

        /// Batch-inserts players of these names elsewhere; their IDs.
        func batchInsert(_ names: [String]) throws -> [NSManagedObjectID] {
            let request = NSBatchInsertRequest(entityName: "Player", objects: names.map { ["name": $0, "score": Int64(1)] })
            request.resultType = .objectIDs
            return try #require((try elsewhere.execute(request) as? NSBatchInsertResult)?.result as? [NSManagedObjectID])
        }

        /// Batch-deletes elsewhere the players of this name; their IDs.
        func batchDelete(named name: String) throws -> [NSManagedObjectID] {
            let fetch = NSFetchRequest<NSFetchRequestResult>(entityName: "Player")
            fetch.predicate = NSPredicate(format: "name == %@", name)
            let request = NSBatchDeleteRequest(fetchRequest: fetch)
            request.resultType = .resultTypeObjectIDs
            return try #require((try elsewhere.execute(request) as? NSBatchDeleteResult)?.result as? [NSManagedObjectID])
        }

        /// The names the controller and the table show.
        var shown: (controller: [String], table: [String]) {
            ((controller.fetchedObjects ?? []).map { $0.value(forKey: "name") as? String ?? "nil" },
             table.sections.flatMap(\.rows).map { $0.value(forKey: "name") as? String ?? "nil" })
        }
    }

    /// Changes gathered from two batch requests list a player as inserted and as deleted: it is
    /// gone, so the merge neither registers nor announces it, and the controller never shows it.
    @Test func anObjectInsertedAndDeletedInTheGatheredChangesIsNeverShown() throws {
        let stage = try Stage()
        let inserted = try stage.batchInsert(["Ann", "Bob"])
        let deleted = try stage.batchDelete(named: "Ann")
        #expect(deleted == [inserted[0]])

        let notes = SavedNotes()
        let observer = NotificationCenter.default.addObserver(forName: .NSManagedObjectContextObjectsDidChange, object: stage.context, queue: nil) { notes.add($0) }
        defer { NotificationCenter.default.removeObserver(observer) }
        NSManagedObjectContext.mergeChanges(fromRemoteContextSave: [NSInsertedObjectsKey: inserted, NSDeletedObjectsKey: deleted], into: [stage.context])

        let announced = try #require(notes.last?.userInfo?[NSInsertedObjectsKey] as? Set<NSManagedObject>)
        #expect(announced.map(\.objectID) == [inserted[1]])
        #expect(stage.context.registeredObject(for: inserted[0]) == nil)
        #expect(stage.shown.controller == ["Bob"])
        #expect(stage.shown.table == ["Bob"])
        #expect(stage.table.failures.isEmpty, "\(stage.table.failures)")
    }

    /// A merge while an unsaved insert the controller showed is deleted (and the deletion not yet
    /// processed) leaves the controller and its table without it: the local deletion is announced
    /// before the merged changes, so the controller doesn't meet the forgotten object again as a
    /// new fault of its ID.
    @Test func aMergeAfterAnUnsavedInsertIsDeletedLeavesItOut() throws {
        let stage = try Stage()
        let mine = NSEntityDescription.insertNewObject(forEntityName: "Player", into: stage.context)
        mine.setValue("Zed", forKey: "name")
        try stage.context.obtainPermanentIDs(for: [mine])
        stage.context.processPendingChanges()
        #expect(stage.shown.controller == ["Zed"])

        stage.context.delete(mine)
        let theirs = try stage.batchInsert(["Amy"])
        NSManagedObjectContext.mergeChanges(fromRemoteContextSave: [NSInsertedObjectsKey: theirs], into: [stage.context])

        #expect(stage.shown.controller == ["Amy"])
        #expect(stage.shown.table == ["Amy"])
        #expect(stage.table.failures.isEmpty, "\(stage.table.failures)")
        #expect(!(stage.controller.fetchedObjects ?? []).contains { $0.objectID == mine.objectID })
    }

    /// Undo after a merge deleted an object the undone event changed leaves the object deleted:
    /// undo puts back this context's changes, not rows another context removed. The controller
    /// doesn't show it again, and the next save has nothing to write for it.
    @Test func undoLeavesAnObjectDeletedElsewhereDeleted() throws {
        let stage = try Stage()
        let ids = try stage.batchInsert(["Ann", "Bob"])
        NSManagedObjectContext.mergeChanges(fromRemoteContextSave: [NSInsertedObjectsKey: ids], into: [stage.context])
        stage.context.undoManager = UndoManager()
        stage.context.object(with: ids[0]).setValue("Anna", forKey: "name")
        stage.context.processPendingChanges()
        #expect(stage.shown.controller == ["Anna", "Bob"])

        let deleted = try stage.batchDelete(named: "Ann")
        NSManagedObjectContext.mergeChanges(fromRemoteContextSave: [NSDeletedObjectsKey: deleted], into: [stage.context])
        #expect(stage.shown.controller == ["Bob"])

        stage.context.undoManager?.undo()
        stage.context.processPendingChanges()
        #expect(stage.shown.controller == ["Bob"])
        #expect(stage.shown.table == ["Bob"])
        #expect(stage.table.failures.isEmpty, "\(stage.table.failures)")
        #expect(stage.context.registeredObject(for: ids[0]) == nil)
        #expect(!stage.context.hasChanges)
        try stage.context.save()
    }
}
