import Foundation
import OpenCoreData
import OpenCoreDataTestKit
import Synchronization
import Testing

/// Queues, child contexts and merging between contexts.
@Suite struct ConcurrencyTests {
    private func container() throws -> NSPersistentContainer {
        let container = NSPersistentContainer(name: "Company", managedObjectModel: TestSupport.makeCompanyModel())
        container.persistentStoreDescriptions[0].url = TestSupport.temporaryDirectory().appendingPathComponent("Company.sqlite")
        var loadError: Error?
        container.loadPersistentStores { _, error in loadError = error }
        if let loadError { throw loadError }
        return container
    }

    @MainActor
    @Test func childContextSavesIntoParent() throws {
        let container = try container()
        let parent = container.viewContext
        let child = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        child.parent = parent
        let childID = try child.performAndWait { () -> NSManagedObjectID in
            let department = NSEntityDescription.insertNewObject(forEntityName: "Department", into: child)
            department.setValue("Child", forKey: "name")
            let person = NSEntityDescription.insertNewObject(forEntityName: "Employee", into: child)
            person.setValue("Kid", forKey: "name")
            person.setValue(department, forKey: "department")
            try child.save()
            return department.objectID
        }
        // The parent has the changes, unsaved; the store does not yet.
        #expect(parent.hasChanges)
        let inParent = parent.object(with: childID)
        #expect(inParent.value(forKey: "name") as? String == "Child")
        #expect((inParent.value(forKey: "employees") as? Set<NSManagedObject>)?.first?.value(forKey: "name") as? String == "Kid")
        let store = container.newBackgroundContext()
        #expect(try store.performAndWait { try store.count(for: NSFetchRequest<NSManagedObject>(entityName: "Department")) } == 0)
        try parent.save()
        #expect(try store.performAndWait { try store.count(for: NSFetchRequest<NSManagedObject>(entityName: "Department")) } == 1)
        // A child fetch sees the parent's unsaved changes.
        let unsaved = NSEntityDescription.insertNewObject(forEntityName: "Department", into: parent)
        unsaved.setValue("Pending", forKey: "name")
        let names = try child.performAndWait {
            try child.fetch(NSFetchRequest<NSManagedObject>(entityName: "Department")).compactMap { $0.value(forKey: "name") as? String }.sorted()
        }
        #expect(names == ["Child", "Pending"])
    }

    @MainActor
    @Test func backgroundSavesMergeIntoTheViewContext() async throws {
        let container = try container()
        let view = container.viewContext
        view.automaticallyMergesChangesFromParent = true
        let department = NSEntityDescription.insertNewObject(forEntityName: "Department", into: view)
        department.setValue("Before", forKey: "name")
        try view.save()
        let id = department.objectID
        try await container.performBackgroundTask { context in
            let copy = context.object(with: id)
            copy.setValue("After", forKey: "name")
            try context.save()
        }
        // The merge is delivered on the view context's queue.
        let merged = try await eventually { department.value(forKey: "name") as? String == "After" }
        #expect(merged)
    }

    /// Whether a block is running, and whether one ran.
    private final class BlockProbe: Sendable {
        let state = Mutex<(inside: Bool, entered: Bool)>((false, false))
    }

    /// The non-async `perform(_:)` (an async caller would get the async overload).
    private static func enqueue(_ context: NSManagedObjectContext, _ block: @escaping @Sendable () -> Void) {
        context.perform(block)
    }

    /// A main-queue context's `perform` block (on the main queue) and its `performAndWait` from
    /// another thread (run on that thread) take the same lock: the second waits for the first.
    @Test func mainQueueBlocksAndPerformAndWaitNeverOverlap() async throws {
        let context = NSManagedObjectContext(concurrencyType: .mainQueueConcurrencyType)
        let probe = BlockProbe()
        Self.enqueue(context) {
            probe.state.withLock { $0 = (true, true) }
            Thread.sleep(forTimeInterval: 0.3)
            probe.state.withLock { $0.inside = false }
        }
        try #require(try await eventually(every: .milliseconds(5)) { probe.state.withLock { $0.entered } }, "the main queue ran the block")
        let overlapped = await offThePool { context.performAndWait { probe.state.withLock { $0.inside } } }
        #expect(!overlapped, "performAndWait ran while the main queue's block was still running")
    }

    @Test func mergeChangesFromContextDidSave() throws {
        let container = try container()
        let first = container.newBackgroundContext()
        let second = container.newBackgroundContext()
        let id = try first.performAndWait { () -> NSManagedObjectID in
            let department = NSEntityDescription.insertNewObject(forEntityName: "Department", into: first)
            department.setValue("One", forKey: "name")
            try first.save()
            return department.objectID
        }
        let copy = second.performAndWait { () -> NSManagedObject in
            let copy = second.object(with: id)
            _ = copy.value(forKey: "name")
            return copy
        }
        let center = NotificationCenter.default
        let saved = SavedNotes()
        let token = center.addObserver(forName: .NSManagedObjectContextDidSave, object: first, queue: nil) { saved.add($0) }
        defer { center.removeObserver(token) }
        try first.performAndWait {
            first.object(with: id).setValue("Two", forKey: "name")
            try first.save()
        }
        let note = try #require(saved.first)
        second.performAndWait {
            second.mergeChanges(fromContextDidSave: note)
            #expect(copy.value(forKey: "name") as? String == "Two")
        }
        // Remote-save merging by object IDs.
        try first.performAndWait {
            first.delete(first.object(with: id))
            try first.save()
        }
        NSManagedObjectContext.mergeChanges(fromRemoteContextSave: [NSDeletedObjectsKey: [id]], into: [second])
        second.performAndWait { #expect(second.registeredObject(for: id) == nil) }
    }

    @Test func concurrentBackgroundContextsSaveSafely() async throws {
        let container = try container()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<4 {
                group.addTask {
                    try await container.performBackgroundTask { context in
                        for index in 0..<25 {
                            let person = NSEntityDescription.insertNewObject(forEntityName: "Employee", into: context)
                            person.setValue("w\(worker)-\(index)", forKey: "name")
                            try context.save()
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let count = try await container.newBackgroundContext().perform {
            try NSManagedObjectContext.currentCount(entity: "Employee")
        }
        #expect(count == 100)
    }
}

extension NSManagedObjectContext {
    /// Uses `NSFetchRequest.execute()`, which runs in the context performing the current block.
    static func currentCount(entity: String) throws -> Int {
        try NSFetchRequest<NSManagedObject>(entityName: entity).execute().count
    }
}

/// Keeps notifications received on any thread.
final class SavedNotes: @unchecked Sendable {
    private let lock = NSLock()
    private var notes: [Notification] = []
    func add(_ note: Notification) { lock.lock(); notes.append(note); lock.unlock() }
    var first: Notification? { lock.lock(); defer { lock.unlock() }; return notes.first }
    var last: Notification? { lock.lock(); defer { lock.unlock() }; return notes.last }
}
