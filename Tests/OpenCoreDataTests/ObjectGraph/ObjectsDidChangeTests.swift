import Foundation
import OpenCoreData
import Testing

/// What `NSManagedObjectContextObjectsDidChange` tells observers (a fetched results controller
/// among them) when a change undoes what an earlier notification announced: an inserted object
/// deleted, a child's save changing an object the parent inserted, a rollback, a refresh.
struct ObjectsDidChangeTests {
    /// The names in each ObjectsDidChange notification of a context, by key.
    private final class Announcements: @unchecked Sendable {
        var posted: [[String: Set<String>]] = []
        private var token: NSObjectProtocol?

        init(_ context: NSManagedObjectContext) {
            token = NotificationCenter.default.addObserver(forName: .NSManagedObjectContextObjectsDidChange, object: context, queue: nil) { [unowned self] note in
                var keys: [String: Set<String>] = [:]
                for key in [NSInsertedObjectsKey, NSUpdatedObjectsKey, NSDeletedObjectsKey, NSRefreshedObjectsKey] {
                    let objects = (note.userInfo?[key] as? Set<NSManagedObject>) ?? []
                    keys[key] = Set(objects.map { $0.primitiveValue(forKey: "name") as? String ?? "?" })
                }
                posted.append(keys)
            }
        }

        deinit { token.map(NotificationCenter.default.removeObserver) }
    }

    @Test func deletingAnAnnouncedInsertedObjectAnnouncesItDeleted() throws {
        let (context, _, _, _) = try CurrentEventChangesTests.savedGraph()
        let carol = NSEntityDescription.insertNewObject(forEntityName: "Owner", into: context)
        carol.setValue("Carol", forKey: "name")
        context.processPendingChanges()
        let announcements = Announcements(context)
        let dave = NSEntityDescription.insertNewObject(forEntityName: "Owner", into: context)
        dave.setValue("Dave", forKey: "name")
        context.delete(carol)
        context.delete(dave)
        context.processPendingChanges()
        // Carol was announced inserted, so she is announced deleted; Dave never was announced.
        #expect(announcements.posted.count == 1)
        #expect(announcements.posted.first?[NSDeletedObjectsKey] == ["Carol"])
        #expect(announcements.posted.first?[NSInsertedObjectsKey] == [])
        #expect(context.insertedObjects.isEmpty && context.deletedObjects.isEmpty)
        try context.save()
        let stored = try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Owner")).compactMap { $0.value(forKey: "name") as? String }
        #expect(stored.sorted() == ["Alice", "Bob"])
    }

    @Test func aChildsSaveListsTheParentsInsertedObjectAsUpdated() throws {
        let (parent, _, _, _) = try CurrentEventChangesTests.savedGraph()
        let carol = NSEntityDescription.insertNewObject(forEntityName: "Owner", into: parent)
        carol.setValue("Carol", forKey: "name")
        try parent.obtainPermanentIDs(for: [carol])
        parent.processPendingChanges()
        let announcements = Announcements(parent)
        let child = NSManagedObjectContext(concurrencyType: .confinementConcurrencyType)
        child.parent = parent
        child.object(with: carol.objectID).setValue(50, forKey: "age")
        try child.save()
        parent.processPendingChanges()
        #expect(carol.value(forKey: "age") as? Int64 == 50)
        #expect(carol.isInserted)
        #expect(announcements.posted.contains { $0[NSUpdatedObjectsKey] == ["Carol"] })
        #expect(carol.changedValuesForCurrentEvent().isEmpty)
    }

    @Test func rollbackAnnouncesWhatItDiscards() throws {
        let (context, alice, bob, _) = try CurrentEventChangesTests.savedGraph()
        let carol = NSEntityDescription.insertNewObject(forEntityName: "Owner", into: context)
        carol.setValue("Carol", forKey: "name")
        alice.setValue(31, forKey: "age")
        context.delete(bob)
        context.processPendingChanges()
        let announcements = Announcements(context)
        let dave = NSEntityDescription.insertNewObject(forEntityName: "Owner", into: context)
        dave.setValue("Dave", forKey: "name")
        context.rollback()
        // At once, without processPendingChanges: Carol (announced) goes, Dave (never announced)
        // isn't mentioned, Alice and Bob are back as stored.
        #expect(announcements.posted.count == 1)
        #expect(announcements.posted.first?[NSDeletedObjectsKey] == ["Carol"])
        #expect(announcements.posted.first?[NSRefreshedObjectsKey] == ["Alice", "Bob"])
        #expect(alice.value(forKey: "age") as? Int64 == 30)
        context.processPendingChanges()
        #expect(announcements.posted.count == 1)
    }

    @Test func refreshDiscardingChangesAnnouncesTheObjectRefreshed() throws {
        let (context, alice, bob, rex) = try CurrentEventChangesTests.savedGraph()
        alice.setValue(31, forKey: "age")
        context.processPendingChanges()
        let announcements = Announcements(context)
        context.refresh(alice, mergeChanges: false)
        context.refresh(bob, mergeChanges: true)
        // Unchanged and turned into a fault: its values are the store's either way.
        context.refresh(rex, mergeChanges: false)
        context.processPendingChanges()
        #expect(rex.isFault)
        #expect(announcements.posted.count == 1)
        #expect(announcements.posted.first?[NSRefreshedObjectsKey] == ["Alice", "Bob"])
        #expect(alice.value(forKey: "age") as? Int64 == 30)
        #expect(!alice.hasChanges)
    }

    @Test func aDeleteDiscardedInItsOwnEventIsNotAnnounced() throws {
        let (context, _, bob, _) = try CurrentEventChangesTests.savedGraph()
        let announcements = Announcements(context)
        context.delete(bob)
        context.refresh(bob, mergeChanges: false)
        context.processPendingChanges()
        #expect(announcements.posted.count == 1)
        #expect(announcements.posted.first?[NSDeletedObjectsKey] == [])
        #expect(announcements.posted.first?[NSRefreshedObjectsKey] == ["Bob"])
        #expect(!bob.isDeleted && context.deletedObjects.isEmpty)
    }

    /// The same four, seen through a fetched results controller over the owners by age.
    @Test func aControllerFollowsEachOfThem() throws {
        let (context, alice, bob, _) = try CurrentEventChangesTests.savedGraph()
        let request = NSFetchRequest<NSManagedObject>(entityName: "Owner")
        request.sortDescriptors = [NSSortDescriptor(key: "age", ascending: true), NSSortDescriptor(key: "name", ascending: true)]
        let controller = NSFetchedResultsController(fetchRequest: request, managedObjectContext: context, sectionNameKeyPath: nil, cacheName: nil)
        let table = TestTableView()
        controller.delegate = table
        try controller.performFetch()
        table.reload(from: controller)
        func shown() -> [String] { table.sections.flatMap(\.rows).map { $0.value(forKey: "name") as? String ?? "?" } }
        #expect(shown() == ["Bob", "Alice"])

        let carol = NSEntityDescription.insertNewObject(forEntityName: "Owner", into: context)
        carol.setValue("Carol", forKey: "name")
        context.processPendingChanges()
        #expect(shown() == ["Bob", "Carol", "Alice"])
        context.delete(carol)
        context.processPendingChanges()
        #expect(shown() == ["Bob", "Alice"])

        alice.setValue(1, forKey: "age")
        context.processPendingChanges()
        #expect(shown() == ["Alice", "Bob"])
        context.refresh(alice, mergeChanges: false)
        context.processPendingChanges()
        #expect(shown() == ["Bob", "Alice"])

        let dave = NSEntityDescription.insertNewObject(forEntityName: "Owner", into: context)
        dave.setValue("Dave", forKey: "name")
        bob.setValue(99, forKey: "age")
        context.processPendingChanges()
        #expect(shown() == ["Dave", "Alice", "Bob"])
        context.rollback()
        #expect(shown() == ["Bob", "Alice"])

        let erin = NSEntityDescription.insertNewObject(forEntityName: "Owner", into: context)
        erin.setValue("Erin", forKey: "name")
        try context.obtainPermanentIDs(for: [erin])
        context.processPendingChanges()
        #expect(shown() == ["Bob", "Erin", "Alice"])
        let child = NSManagedObjectContext(concurrencyType: .confinementConcurrencyType)
        child.parent = context
        child.object(with: erin.objectID).setValue(100, forKey: "age")
        try child.save()
        context.processPendingChanges()
        #expect(shown() == ["Bob", "Alice", "Erin"])
        #expect(table.failures.isEmpty, "\(table.failures)")
    }
}
