import Foundation
import GRDB
import OpenCoreData
import Testing

/// Store options: the SQLite maintenance and lock-timeout options act, and the options that mean
/// nothing on Linux are accepted.
@Suite struct StoreOptionTests {
    /// A SQLite store holding `count` Employees, closed again; returns its URL.
    private static func storeWithEmployees(_ count: Int, model: NSManagedObjectModel) throws -> URL {
        let (coordinator, url) = try TestSupport.coordinator(model)
        let context = TestSupport.context(coordinator)
        for index in 0..<count {
            let employee = NSEntityDescription.insertNewObject(forEntityName: "Employee", into: context)
            employee.setValue("Employee \(index)", forKey: "name")
            employee.setValue(Data(repeating: UInt8(index % 256), count: 512), forKey: "photo")
        }
        try context.save()
        try coordinator.remove(coordinator.persistentStores[0])
        return try #require(url)
    }

    private static func read<T>(_ url: URL, _ body: (Database) throws -> T) throws -> T {
        var configuration = Configuration()
        configuration.readonly = true
        return try DatabaseQueue(path: url.path, configuration: configuration).read(body)
    }

    private static func hasStatistics(_ url: URL) throws -> Bool {
        try read(url) { try $0.tableExists("sqlite_stat1") }
    }

    @Test func analyzeOptionRefreshesThePlannerStatistics() throws {
        let model = TestSupport.makeCompanyModel()
        let url = try Self.storeWithEmployees(50, model: model)
        #expect(try !Self.hasStatistics(url))
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url, options: [NSSQLiteAnalyzeOption: true])
        #expect(try Self.hasStatistics(url))
        #expect(try TestSupport.context(coordinator).count(for: NSFetchRequest<NSManagedObject>(entityName: "Employee")) == 50)
    }

    @Test func manualVacuumOptionRebuildsTheFileWithoutFreePages() throws {
        let model = TestSupport.makeCompanyModel()
        let url = try Self.storeWithEmployees(400, model: model)
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url, options: nil)
        let context = TestSupport.context(coordinator)
        for employee in try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Employee")).dropFirst(10) { context.delete(employee) }
        try context.save()
        try coordinator.remove(coordinator.persistentStores[0])
        #expect(try Self.read(url) { try Int.fetchOne($0, sql: "PRAGMA freelist_count") ?? 0 } > 0)

        let vacuumed = NSPersistentStoreCoordinator(managedObjectModel: model)
        try vacuumed.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url, options: [NSSQLiteManualVacuumOption: NSNumber(value: true)])
        #expect(try Self.read(url) { try Int.fetchOne($0, sql: "PRAGMA freelist_count") ?? -1 } == 0)
        #expect(try TestSupport.context(vacuumed).count(for: NSFetchRequest<NSManagedObject>(entityName: "Employee")) == 10)
    }

    @Test func readOnlyStoresRunNoMaintenance() throws {
        let model = TestSupport.makeCompanyModel()
        let url = try Self.storeWithEmployees(20, model: model)
        let before = try Data(contentsOf: url)
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url,
                                           options: [NSReadOnlyPersistentStoreOption: true, NSSQLiteAnalyzeOption: true, NSSQLiteManualVacuumOption: true])
        #expect(try TestSupport.context(coordinator).count(for: NSFetchRequest<NSManagedObject>(entityName: "Employee")) == 20)
        try coordinator.remove(coordinator.persistentStores[0])
        #expect(try Data(contentsOf: url) == before)
    }

    @Test func timeoutOptionBoundsTheWaitForAnotherConnectionsLock() throws {
        let model = TestSupport.makeCompanyModel()
        let url = try Self.storeWithEmployees(1, model: model)
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url, options: [NSPersistentStoreTimeoutOption: 0.3])
        let context = TestSupport.context(coordinator)
        NSEntityDescription.insertNewObject(forEntityName: "Employee", into: context).setValue("Waiting", forKey: "name")

        // Another connection holds the write lock for longer than the timeout.
        let other = try DatabaseQueue(path: url.path)
        let start = Date()
        try other.inDatabase { db in
            try db.execute(sql: "BEGIN IMMEDIATE")
            #expect(throws: NSError.self) { try context.save() }
            try db.execute(sql: "ROLLBACK")
        }
        // Far below the 10 s the store waits without the option.
        #expect(Date().timeIntervalSince(start) < 5)
        // The changes are kept, and save once the lock is gone.
        try context.save()
        #expect(try TestSupport.context(coordinator).count(for: NSFetchRequest<NSManagedObject>(entityName: "Employee")) == 2)
    }

    @Test func optionsWithoutMeaningHereAreAccepted() throws {
        let model = TestSupport.makeCompanyModel()
        let options: [AnyHashable: Any] = [
            NSPersistentStoreFileProtectionKey: "NSFileProtectionComplete",
            NSPersistentStoreConnectionPoolMaxSizeKey: 4,
            NSValidateXMLStoreOption: true,
            NSBinaryStoreSecureDecodingClasses: [NSString.self],
            NSBinaryStoreInsecureDecodingCompatibilityOption: false,
            NSPersistentStoreDeferredLightweightMigrationOptionKey: true,
            NSPersistentStoreOSCompatibility: 150000,
        ]
        for type in [NSSQLiteStoreType, NSBinaryStoreType, NSInMemoryStoreType] {
            let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
            let url = type == NSInMemoryStoreType ? nil : TestSupport.temporaryDirectory().appendingPathComponent("Options.store")
            try coordinator.addPersistentStore(ofType: type, configurationName: nil, at: url, options: options)
            try coordinator.finishDeferredLightweightMigration()
            try coordinator.finishDeferredLightweightMigrationTask()
            let context = TestSupport.context(coordinator)
            NSEntityDescription.insertNewObject(forEntityName: "Employee", into: context).setValue("Ok", forKey: "name")
            try context.save()
            if let url {
                try coordinator.destroyPersistentStore(at: url, ofType: type, options: [NSPersistentStoreForceDestroyOption: true])
                #expect(!FileManager.default.fileExists(atPath: url.path))
            }
        }
    }

    /// Opening a store and fetching from it changes nothing in its file: no bytes of the database
    /// (not even SQLite's change counter or schema cookie), no side files left behind.
    @Test func openingAndFetchingLeavesTheFileAsItWas() throws {
        let model = TestSupport.makeCompanyModel()
        let url = try Self.storeWithEmployees(3, model: model)
        let directory = url.deletingLastPathComponent()
        let bytes = try Data(contentsOf: url)
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()

        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        let store = try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url, options: nil)
        let fetched = try TestSupport.context(coordinator).fetch(NSFetchRequest<NSManagedObject>(entityName: "Employee"))
        #expect(fetched.count == 3)
        try coordinator.remove(store)

        #expect(try Data(contentsOf: url) == bytes, "the database file changed though nothing was saved")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == files)
    }

    /// `NSSQLitePragmasOption`'s `journal_mode` is Core Data's way to keep a store in one file
    /// (`"DELETE"`): the store honours it, and without it the store is in WAL mode again.
    @Test func journalModePragmaIsHonoured() throws {
        let model = TestSupport.makeCompanyModel()
        let url = TestSupport.temporaryDirectory().appendingPathComponent("Journal.sqlite")
        let options: [AnyHashable: Any] = [NSSQLitePragmasOption: ["journal_mode": "DELETE"]]
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        let store = try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url, options: options)
        let context = TestSupport.context(coordinator)
        NSEntityDescription.insertNewObject(forEntityName: "Employee", into: context).setValue("One file", forKey: "name")
        try context.save()
        #expect(!FileManager.default.fileExists(atPath: url.path + "-wal"), "a DELETE-journal store has no WAL file")
        #expect(try Self.read(url) { try String.fetchOne($0, sql: "PRAGMA journal_mode") } == "delete")
        try coordinator.remove(store)

        let (reopened, _) = try TestSupport.coordinator(model, url: url)
        #expect(try TestSupport.context(reopened).count(for: NSFetchRequest<NSManagedObject>(entityName: "Employee")) == 1)
        #expect(try Self.read(url) { try String.fetchOne($0, sql: "PRAGMA journal_mode") } == "wal")
    }

    /// A description's `options` and `sqlitePragmas` are typed `[String: NSObject]` as in Core
    /// Data: Swift values set on it read back as their Foundation objects, and a pragma set
    /// through the description reaches the store a container loads.
    @Test func descriptionOptionsAreObjectsAndReachTheStore() throws {
        let url = TestSupport.temporaryDirectory().appendingPathComponent("Described.sqlite")
        let description = NSPersistentStoreDescription(url: url)
        description.setOption(true as NSNumber, forKey: NSPersistentHistoryTrackingKey)
        description.setOption("author", forKey: "CustomOption")
        description.timeout = 2.5
        description.setValue("DELETE" as NSString, forPragmaNamed: "journal_mode")
        let options: [String: NSObject] = description.options
        #expect(options[NSPersistentHistoryTrackingKey] == NSNumber(value: true))
        #expect(options["CustomOption"] as? String == "author")
        #expect(options[NSPersistentStoreTimeoutOption] as? TimeInterval == 2.5)
        #expect(options[NSMigratePersistentStoresAutomaticallyOption] as? Bool == true)
        let pragmas: [String: NSObject] = description.sqlitePragmas
        #expect(pragmas["journal_mode"] as? String == "DELETE")
        #expect((options[NSSQLitePragmasOption] as? [String: Any])?["journal_mode"] as? String == "DELETE")

        let container = NSPersistentContainer(name: "Described", managedObjectModel: TestSupport.makeCompanyModel())
        container.persistentStoreDescriptions = [description]
        var loadError: Error?
        container.loadPersistentStores { _, error in loadError = error }
        #expect(loadError == nil)
        #expect(try Self.read(url) { try String.fetchOne($0, sql: "PRAGMA journal_mode") } == "delete")
        #expect(container.persistentStoreCoordinator.persistentStores.first?.options?[NSPersistentHistoryTrackingKey] as? Bool == true)
        for store in container.persistentStoreCoordinator.persistentStores { try container.persistentStoreCoordinator.remove(store) }
    }
}
