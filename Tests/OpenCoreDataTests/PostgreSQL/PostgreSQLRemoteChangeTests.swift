import Foundation
import OpenCoreData
import OpenCoreDataTestKit
import Testing
@testable import OpenCoreDataCore
@testable import OpenCoreDataPostgreSQL

/// Saves through one coordinator reach a fetched results controller on another, through the
/// PostgreSQL store's notices (`LISTEN`/`NOTIFY`), and a dropped listening connection comes back.
@Suite struct PostgreSQLRemoteChangeTests {
    @Test func aNoticeListsTheSavedObjectsOrSaysEverything() throws {
        let notice = SQLServerChangeNotice(origin: "AB12", inserted: [(3, 17), (3, 18)], updated: [(5, 2)], deleted: [])
        #expect(notice.payload == "o:AB12;i:3.17,3.18;u:5.2;d:")
        let read = try #require(SQLServerChangeNotice(payload: notice.payload))
        #expect(read == notice && read.isComplete && read.origin == "AB12")
        #expect(read.inserted.map(\.key) == [17, 18] && read.updated.map(\.entity) == [5])
        let huge = SQLServerChangeNotice(origin: "AB12", inserted: (0..<2_000).map { (3, Int64($0)) }, updated: [], deleted: [])
        #expect(huge.payload == "o:AB12;*")
        let everything = try #require(SQLServerChangeNotice(payload: huge.payload))
        #expect(!everything.isComplete && everything.origin == "AB12")
        #expect(SQLServerChangeNotice(payload: "x:1.2") == nil && SQLServerChangeNotice(payload: "i:1") == nil)
        #expect(SQLServerChangeNotice.channel(forStore: "0A1B-2C") == "ocd_0a1b2c")
    }

    /// What one remote change notification said.
    struct Received: Sendable {
        let storeID: String?
        /// Counts of the IDs under each key; nil when the key is absent.
        let inserted: Int?
        let updated: Int?
        let deleted: Int?
        /// The transaction number of `NSPersistentHistoryTokenKey`'s token, when there is one.
        var token: Int64?
        var insertedIDs: [NSManagedObjectID]?
    }

    /// Collects the remote change notifications a coordinator posts; merges them into a context
    /// first when given one.
    final class Inbox: @unchecked Sendable {
        private let lock = NSLock()
        private var items: [Received] = []
        private var observer: (any NSObjectProtocol)?

        init(_ coordinator: NSPersistentStoreCoordinator, mergingInto context: NSManagedObjectContext? = nil) {
            observer = NotificationCenter.default.addObserver(forName: .NSPersistentStoreRemoteChange, object: coordinator, queue: nil) { [weak self] note in
                let info = note.userInfo ?? [:]
                if let context { NSManagedObjectContext.mergeChanges(fromRemoteContextSave: info, into: [context]) }
                let item = Received(storeID: info[NSStoreUUIDKey] as? String, inserted: (info[NSInsertedObjectsKey] as? [NSManagedObjectID])?.count,
                                    updated: (info[NSUpdatedObjectsKey] as? [NSManagedObjectID])?.count, deleted: (info[NSDeletedObjectsKey] as? [NSManagedObjectID])?.count,
                                    token: (info[NSPersistentHistoryTokenKey] as? NSPersistentHistoryToken)?.transactionNumbers.values.first,
                                    insertedIDs: info[NSInsertedObjectsKey] as? [NSManagedObjectID])
                self?.append(item)
            }
        }
        private func append(_ item: Received) { lock.withLock { items.append(item) } }
        var received: [Received] { lock.withLock { items } }
        deinit { if let observer { NotificationCenter.default.removeObserver(observer) } }
    }

    /// A database filled with the company through one coordinator (its writer context), and a
    /// second coordinator on it that posts remote change notifications.
    static func companyWatchedByASecondCoordinator() throws
        -> (database: PostgreSQLStoreTests.Database, writer: NSManagedObjectContext, watching: NSPersistentStoreCoordinator, store: NSPersistentStore) {
        let database = PostgreSQLStoreTests.Database()
        let writer = try database.context(PostgreSQLStoreTests.model)
        try PostgreSQLStoreTests.fill(writer)
        let watching = NSPersistentStoreCoordinator(managedObjectModel: PostgreSQLStoreTests.model)
        let store = try watching.addPersistentStore(ofType: NSPostgreSQLStoreType, configurationName: nil, at: database.url,
                                                    options: [NSPersistentStoreRemoteChangeNotificationPostOptionKey: true])
        return (database, writer, watching, store)
    }

    @Test(.enabled(if: PostgreSQLTestServer.isAvailable, PostgreSQLTestServer.skipReason))
    func aSaveThroughOneCoordinatorMovesAControllerOnAnother() async throws {
        let (database, writer, watching, _) = try Self.companyWatchedByASecondCoordinator()
        let model = PostgreSQLStoreTests.model
        let viewer = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        viewer.persistentStoreCoordinator = watching
        let request = NSFetchRequest<NSManagedObject>(entityName: "Employee")
        request.sortDescriptors = [NSSortDescriptor(key: "department.name", ascending: true), NSSortDescriptor(key: "name", ascending: true)]
        let controller = NSFetchedResultsController(fetchRequest: request, managedObjectContext: viewer, sectionNameKeyPath: "department.name", cacheName: nil)
        // As an app's table view would: without a delegate a controller doesn't track changes.
        let table = TestTableView()
        try viewer.performAndWait {
            controller.delegate = table
            try controller.performFetch()
            table.reload(from: controller)
        }
        let inbox = Inbox(watching, mergingInto: viewer)

        try writer.performAndWait {
            let all = try writer.fetch(NSFetchRequest<NSManagedObject>(entityName: "Employee"))
            let department = all.first { $0.value(forKey: "name") as? String == "Peter" }!.value(forKey: "department")
            let newcomer = NSEntityDescription.insertNewObject(forEntityName: "Employee", into: writer)
            newcomer.setValue("Nina", forKey: "name")
            newcomer.setValue(department, forKey: "department")
            writer.delete(all.first { $0.value(forKey: "name") as? String == "Milton" }!)
            all.first { $0.value(forKey: "name") as? String == "Bob" }!.setValue("Bobby", forKey: "name")
            try writer.save()
        }
        // Compared by ID: an object deleted elsewhere can't be read once merged (its fault can't be fulfilled).
        func shown() -> [URL] {
            viewer.performAndWait { (controller.fetchedObjects ?? []).map { $0.objectID.uriRepresentation() } }
        }
        let fresh = try database.context(model)
        let (expected, expectedNames) = try fresh.performAndWait {
            let objects = try fresh.fetch(request)
            return (objects.map { $0.objectID.uriRepresentation() }, objects.compactMap { $0.value(forKey: "name") as? String })
        }
        #expect(expectedNames.contains("Nina") && !expectedNames.contains("Milton") && expectedNames.contains("Bobby"))
        let caughtUp = try await eventually { shown() == expected }
        #expect(caughtUp, "the controller shows \(shown()), a fresh fetch \(expected); notifications: \(inbox.received)")
        guard caughtUp else { return }
        let shownNames = viewer.performAndWait { (controller.fetchedObjects ?? []).compactMap { $0.value(forKey: "name") as? String } }
        #expect(shownNames == expectedNames)
        viewer.performAndWait {
            #expect(table.failures.isEmpty, "\(table.failures)")
            #expect(table.sections.flatMap(\.rows).map { $0.objectID.uriRepresentation() } == expected)
        }
        let last = try #require(inbox.received.last)
        #expect(last.inserted == 1 && (last.updated ?? 0) >= 1 && last.deleted == 1)
        #expect(last.storeID == watching.persistentStores.first?.identifier)

        // A save through the watching coordinator itself: notified, with nothing to merge again
        // (its contexts merge it already), and the controller shows the new object once.
        let before = inbox.received.count
        let sibling = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        sibling.persistentStoreCoordinator = watching
        try sibling.performAndWait {
            let local = NSEntityDescription.insertNewObject(forEntityName: "Employee", into: sibling)
            local.setValue("Omar", forKey: "name")
            try sibling.save()
        }
        let ownHeard = try await eventually { inbox.received.dropFirst(before).contains { $0.inserted == 0 } }
        #expect(ownHeard, "own save: \(inbox.received.dropFirst(before))")
        try viewer.performAndWait {
            viewer.refreshAllObjects()
            try controller.performFetch()
            let names = (controller.fetchedObjects ?? []).compactMap { $0.value(forKey: "name") as? String }
            #expect(names.filter { $0 == "Omar" }.count == 1)
        }
    }

    @Test(.enabled(if: PostgreSQLTestServer.isAvailable, PostgreSQLTestServer.skipReason))
    func aDroppedListenerReconnectsAndSaysAnythingMayHaveChanged() async throws {
        let (database, writer, watching, store) = try Self.companyWatchedByASecondCoordinator()
        defer { withExtendedLifetime(database) {} }  // its schema is dropped when it goes
        let inbox = Inbox(watching)
        let channel = SQLServerChangeNotice.channel(forStore: try #require(store.identifier))

        // The server ends the listening connection, as a restart or a network failure would.
        let admin = try PostgreSQLConnection.open(PostgreSQLTestServer.location())
        defer { admin.close() }
        let ended = try admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = 'LISTEN \(channel)'")
        #expect(ended.count == 1)
        let toldToCatchUp = try await eventually {
            inbox.received.contains { $0.storeID != nil && $0.inserted == nil }
        }
        #expect(toldToCatchUp, "no catch-up notification after the connection came back")

        // Listening again: the next save is heard with its objects.
        let before = inbox.received.count
        try writer.performAndWait {
            let project = NSEntityDescription.insertNewObject(forEntityName: "Project", into: writer)
            project.setValue("After", forKey: "title")
            try writer.save()
        }
        let heard = try await eventually {
            inbox.received.dropFirst(before).contains { $0.inserted == 1 }
        }
        #expect(heard)
    }
}
