import Foundation
import OpenCoreData
import Testing

/// The idioms of Core Data test suites written for Apple's platforms: a SQLite store at
/// `/dev/null`, and waiting for the did-save notification of a save with nothing to save.
@MainActor
@Suite("Test-stack idioms")
struct TestStackIdiomTests {
    /// Apple's test stack: a container whose one store is a SQLite store at /dev/null.
    static func inMemoryContainer(url: URL = URL(fileURLWithPath: "/dev/null")) throws -> NSPersistentContainer {
        let container = NSPersistentContainer(name: "Company", managedObjectModel: TestSupport.makeCompanyModel())
        let description = NSPersistentStoreDescription(url: url)
        description.type = NSSQLiteStoreType
        container.persistentStoreDescriptions = [description]
        var loadError: Error?
        container.loadPersistentStores { _, error in loadError = error }
        if let loadError { throw loadError }
        return container
    }

    @Test("a SQLite store at /dev/null is an empty database in memory of its own", arguments: ["/dev/null", "/dev/null/CompanyTests"])
    func devNullStore(path: String) throws {
        let before = try FileManager.default.attributesOfItem(atPath: "/dev/null")[.type] as? FileAttributeType
        let first = try Self.inMemoryContainer(url: URL(fileURLWithPath: path))
        let second = try Self.inMemoryContainer(url: URL(fileURLWithPath: path))
        let context = first.viewContext
        let company = NSEntityDescription.insertNewObject(forEntityName: "Company", into: context)
        company.setValue("Acme", forKey: "name")
        let department = NSEntityDescription.insertNewObject(forEntityName: "Department", into: context)
        department.setValue("Research", forKey: "name")
        department.setValue(company, forKey: "company")
        try context.save()

        // A SQL fetch, a count and a relationship fault, from a second context.
        let other = first.newBackgroundContext()
        try other.performAndWait {
            let request = NSFetchRequest<NSManagedObject>(entityName: "Department")
            request.predicate = NSPredicate(format: "company.name == %@", "Acme")
            let departments = try other.fetch(request)
            #expect(departments.count == 1)
            #expect((departments.first?.value(forKey: "company") as? NSManagedObject)?.value(forKey: "name") as? String == "Acme")
        }
        #expect(first.persistentStoreCoordinator.persistentStores.first?.type == NSSQLiteStoreType)
        // Each store is its own database.
        #expect(try second.viewContext.count(for: NSFetchRequest<NSManagedObject>(entityName: "Company")) == 0)

        // Destroying it removes the store, never /dev/null.
        try first.persistentStoreCoordinator.destroyPersistentStore(at: URL(fileURLWithPath: path), ofType: NSSQLiteStoreType)
        #expect(first.persistentStoreCoordinator.persistentStores.isEmpty)
        #expect(try FileManager.default.attributesOfItem(atPath: "/dev/null")[.type] as? FileAttributeType == before)
    }

    @Test("batch requests and history work on the /dev/null store")
    func devNullBatchAndHistory() throws {
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: TestSupport.makeCompanyModel())
        try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: URL(fileURLWithPath: "/dev/null"),
                                           options: [NSPersistentHistoryTrackingKey: true as NSNumber])
        let context = TestSupport.context(coordinator)
        for name in ["A", "B", "C"] {
            NSEntityDescription.insertNewObject(forEntityName: "Company", into: context).setValue(name, forKey: "name")
        }
        try context.save()
        let delete = NSBatchDeleteRequest(fetchRequest: NSFetchRequest<NSFetchRequestResult>(entityName: "Company"))
        delete.resultType = .resultTypeCount
        #expect((try context.execute(delete) as? NSBatchDeleteResult)?.result as? Int == 3)
        let history = try context.execute(NSPersistentHistoryChangeRequest.fetchHistory(after: nil as NSPersistentHistoryToken?)) as? NSPersistentHistoryResult
        #expect((history?.result as? [NSPersistentHistoryTransaction])?.count == 2)
    }

    @Test("a save with nothing to save posts will-save and did-save with empty sets, and writes nothing")
    func emptySaveNotifications() throws {
        let (coordinator, url) = try TestSupport.coordinator(TestSupport.makeCompanyModel())
        let context = TestSupport.context(coordinator)
        let storeURL = try #require(url)
        let before = try TestSupport.snapshot(storeURL.deletingLastPathComponent())
        let names = Recorder()
        let observers = [Notification.Name.NSManagedObjectContextWillSave, .NSManagedObjectContextDidSave, NSManagedObjectContext.didSaveObjectIDsNotification].map { name in
            NotificationCenter.default.addObserver(forName: name, object: context, queue: nil) { notification in
                names.record(notification)
            }
        }
        defer { observers.forEach(NotificationCenter.default.removeObserver) }
        #expect(!context.hasChanges)
        try context.save()
        let posted = names.notifications
        #expect(posted.map(\.name) == [.NSManagedObjectContextWillSave, .NSManagedObjectContextDidSave, NSManagedObjectContext.didSaveObjectIDsNotification])
        let didSave = try #require(posted.first { $0.name == .NSManagedObjectContextDidSave })
        for key in [NSInsertedObjectsKey, NSUpdatedObjectsKey, NSDeletedObjectsKey] {
            #expect((didSave.userInfo?[key] as? Set<NSManagedObject>)?.isEmpty == true, "\(key)")
        }
        #expect(try TestSupport.snapshot(storeURL.deletingLastPathComponent()) == before)
    }
}

/// Collects notifications posted on any thread.
final class Recorder: @unchecked Sendable {
    private let lock = NSLock()
    private var recorded: [Notification] = []

    func record(_ notification: Notification) {
        lock.withLock { recorded.append(notification) }
    }

    var notifications: [Notification] { lock.withLock { recorded } }
}
