import Foundation
import OpenCoreData
import Testing

/// `NSPersistentStoreCoordinator.migratePersistentStore`: a store's objects moved into a new
/// store of any type at a new place, which takes the old store's place in the coordinator.
@Suite struct MigratePersistentStoreTests {
    /// A company with two departments (one with an ordered list of teams), three employees (one a
    /// Manager, the boss of another) and a project two of them share, saved.
    private static func populate(_ context: NSManagedObjectContext) throws {
        func insert(_ entity: String, _ values: [String: Any]) -> NSManagedObject {
            let object = NSEntityDescription.insertNewObject(forEntityName: entity, into: context)
            for (key, value) in values { object.setValue(value, forKey: key) }
            return object
        }
        let company = insert("Company", ["name": "Acme", "founded": Date(timeIntervalSinceReferenceDate: 1000)])
        let sales = insert("Department", ["name": "Sales", "budget": Decimal(string: "1234.5")!, "company": company])
        let lab = insert("Department", ["name": "Lab", "company": company])
        let boss = insert("Manager", ["name": "Ada", "bonus": Int64(7), "department": lab])
        let ann = insert("Employee", ["name": "Ann", "salary": Int64(500), "photo": Data([1, 2, 3]), "department": sales, "boss": boss])
        _ = insert("Employee", ["name": "Bob", "department": sales])
        let project = insert("Project", ["title": "Rocket"])
        project.mutableSetValue(forKey: "members").addObjects(from: [ann, boss])
        let teams = sales.mutableOrderedSetValue(forKey: "teams")
        for title in ["Gamma", "Alpha", "Beta"] { teams.add(insert("Team", ["title": title])) }
        try context.save()
    }

    /// Everything `populate` saved, as read through `context`: checks every attribute and
    /// relationship kind made it.
    private static func expectPopulated(_ context: NSManagedObjectContext) throws {
        func fetch(_ entity: String, _ format: String? = nil) throws -> [NSManagedObject] {
            let request = NSFetchRequest<NSManagedObject>(entityName: entity)
            request.predicate = format.map { NSPredicate(format: $0) }
            return try context.fetch(request)
        }
        #expect(try fetch("Company").count == 1)
        #expect(try fetch("Employee").count == 3)
        #expect(try fetch("Manager").count == 1)
        let ann = try #require(try fetch("Employee", "name == 'Ann'").first)
        #expect(ann.value(forKey: "salary") as? Int64 == 500)
        #expect(ann.value(forKey: "photo") as? Data == Data([1, 2, 3]))
        #expect(ann.value(forKeyPath: "department.name") as? String == "Sales")
        #expect(ann.value(forKeyPath: "department.company.name") as? String == "Acme")
        let boss = try #require(ann.value(forKey: "boss") as? NSManagedObject)
        #expect(boss.entity.name == "Manager")
        #expect(boss.value(forKey: "bonus") as? Int64 == 7)
        #expect((boss.value(forKey: "reports") as? Set<NSManagedObject>)?.count == 1)
        let project = try #require(try fetch("Project").first)
        let members = (project.value(forKey: "members") as? Set<NSManagedObject>)?.compactMap { $0.value(forKey: "name") as? String }.sorted()
        #expect(members == ["Ada", "Ann"])
        let sales = try #require(try fetch("Department", "name == 'Sales'").first)
        #expect(sales.value(forKey: "budget") as? Decimal == Decimal(string: "1234.5"))
        let teams = try #require(sales.value(forKey: "teams") as? NSOrderedSet)
        #expect(teams.array.compactMap { ($0 as? NSManagedObject)?.value(forKey: "title") as? String } == ["Gamma", "Alpha", "Beta"])
        #expect((try fetch("Department", "name == 'Lab'").first?.value(forKey: "employees") as? Set<NSManagedObject>)?.count == 1)
    }

    @Test(arguments: [(NSSQLiteStoreType, NSBinaryStoreType), (NSBinaryStoreType, NSSQLiteStoreType), (NSSQLiteStoreType, NSSQLiteStoreType)])
    func movesEveryObjectToAFileStoreOfAnyType(from sourceType: String, to destinationType: String) throws {
        let model = TestSupport.makeCompanyModel()
        let (coordinator, sourceURL) = try TestSupport.coordinator(model, type: sourceType)
        let old = try #require(coordinator.persistentStores.first)
        let oldIdentifier = old.identifier
        try Self.populate(TestSupport.context(coordinator))
        coordinator.setMetadata(coordinator.metadata(for: old).merging(["app.schemaNote": "kept"]) { $1 }, for: old)
        try TestSupport.context(coordinator).save()

        let destination = TestSupport.temporaryDirectory().appendingPathComponent("Moved.store")
        let moved = try coordinator.migratePersistentStore(old, to: destination, options: nil, withType: destinationType)

        // The new store took the old one's place; the old file still holds everything.
        #expect(coordinator.persistentStores.count == 1)
        #expect(coordinator.persistentStores.first === moved)
        #expect(moved.type == destinationType)
        #expect(moved.url == destination)
        #expect(moved.identifier != oldIdentifier)
        #expect(old.persistentStoreCoordinator == nil)
        try Self.expectPopulated(TestSupport.context(coordinator))
        let oldReader = NSPersistentStoreCoordinator(managedObjectModel: model)
        try oldReader.addPersistentStore(ofType: sourceType, configurationName: nil, at: sourceURL, options: nil)
        try Self.expectPopulated(TestSupport.context(oldReader))
        #expect(try TestSupport.context(oldReader).count(for: NSFetchRequest<NSManagedObject>(entityName: "Employee")) == 3)

        // The new file holds it all on its own, with the old store's own metadata key.
        let reader = NSPersistentStoreCoordinator(managedObjectModel: model)
        let reopened = try reader.addPersistentStore(ofType: destinationType, configurationName: nil, at: destination, options: nil)
        try Self.expectPopulated(TestSupport.context(reader))
        #expect(reader.metadata(for: reopened)["app.schemaNote"] as? String == "kept")
        #expect(reader.metadata(for: reopened)[NSStoreUUIDKey] as? String == moved.identifier)

        // Saves go to the new store.
        let context = TestSupport.context(coordinator)
        let carol = NSEntityDescription.insertNewObject(forEntityName: "Employee", into: context)
        carol.setValue("Carol", forKey: "name")
        try context.save()
        #expect(carol.objectID.uriRepresentation().host == moved.identifier)
        #expect(try TestSupport.context(oldReader).count(for: NSFetchRequest<NSManagedObject>(entityName: "Employee")) == 3)
    }

    @Test(arguments: [NSSQLiteStoreType, NSBinaryStoreType, NSInMemoryStoreType])
    func anEmptyStoreMovesWithItsMetadataKeys(destinationType: String) throws {
        let model = TestSupport.makeCompanyModel()
        let (coordinator, _) = try TestSupport.coordinator(model)
        let old = coordinator.persistentStores[0]
        coordinator.setMetadata(coordinator.metadata(for: old).merging(["app.version": 3]) { $1 }, for: old)
        let destination = TestSupport.temporaryDirectory().appendingPathComponent("Empty.store")
        let moved = try coordinator.migratePersistentStore(old, to: destination, withType: destinationType)
        #expect(coordinator.metadata(for: moved)["app.version"] as? Int == 3)
        #expect(coordinator.metadata(for: moved)[NSStoreUUIDKey] as? String == moved.identifier)
        #expect(moved.identifier != old.identifier)
        #expect(try TestSupport.context(coordinator).count(for: NSFetchRequest<NSManagedObject>(entityName: "Employee")) == 0)
        // A file store has them in its file once there is one (a binary store's first save).
        try Self.insertEmployee("Gus", into: coordinator)
        if destinationType != NSInMemoryStoreType {
            let metadata = try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: destinationType, at: destination)
            #expect(metadata["app.version"] as? Int == 3)
            #expect(metadata[NSStoreUUIDKey] as? String == moved.identifier)
            #expect(try Self.employees(in: destination, type: destinationType, model: model) == 1)
        }
    }

    @Test func movesToMemoryAndBackToAFile() throws {
        let model = TestSupport.makeCompanyModel()
        let (coordinator, _) = try TestSupport.coordinator(model)
        try Self.populate(TestSupport.context(coordinator))
        let inMemory = try coordinator.migratePersistentStore(coordinator.persistentStores[0], to: URL(fileURLWithPath: "/dev/null"),
                                                              options: nil, type: .inMemory)
        #expect(inMemory.type == NSInMemoryStoreType)
        #expect(coordinator.persistentStores.count == 1)
        try Self.expectPopulated(TestSupport.context(coordinator))

        let file = TestSupport.temporaryDirectory().appendingPathComponent("Back.sqlite")
        try coordinator.migratePersistentStore(inMemory, to: file, options: nil, type: .sqlite)
        let reader = NSPersistentStoreCoordinator(managedObjectModel: model)
        try reader.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: file, options: nil)
        try Self.expectPopulated(TestSupport.context(reader))
    }

    @Test func refusesWithoutChangingAnything() throws {
        let model = TestSupport.makeCompanyModel()
        let (coordinator, _) = try TestSupport.coordinator(model)
        let old = coordinator.persistentStores[0]
        try Self.populate(TestSupport.context(coordinator))
        let directory = TestSupport.temporaryDirectory()

        // A file already at the destination is never overwritten.
        let occupied = directory.appendingPathComponent("Occupied.sqlite")
        try Data("not mine to replace".utf8).write(to: occupied)
        let overwrite = #expect(throws: NSError.self) { try coordinator.migratePersistentStore(old, to: occupied, withType: NSSQLiteStoreType) }
        #expect(overwrite?.domain == NSCocoaErrorDomain)
        #expect(overwrite?.code == NSPersistentStoreOperationError)
        #expect(try Data(contentsOf: occupied) == Data("not mine to replace".utf8))

        // A destination that can't be made leaves nothing behind.
        let unreachable = directory.appendingPathComponent("missing/dir/Moved.sqlite")
        #expect(throws: NSError.self) { try coordinator.migratePersistentStore(old, to: unreachable, withType: NSSQLiteStoreType) }
        #expect(!FileManager.default.fileExists(atPath: unreachable.path))

        // An unknown type, and a store of another coordinator.
        let unknown = #expect(throws: NSError.self) { try coordinator.migratePersistentStore(old, to: directory.appendingPathComponent("X"), withType: "XMLish") }
        #expect(unknown?.code == NSPersistentStoreInvalidTypeError)
        let (other, _) = try TestSupport.coordinator(model, type: NSInMemoryStoreType)
        let foreign = #expect(throws: NSError.self) {
            try coordinator.migratePersistentStore(other.persistentStores[0], to: directory.appendingPathComponent("Y.sqlite"), withType: NSSQLiteStoreType)
        }
        #expect(foreign?.code == NSPersistentStoreOperationError)

        // The coordinator still has its store, with everything in it.
        #expect(coordinator.persistentStores.count == 1)
        #expect(coordinator.persistentStores.first === old)
        try Self.expectPopulated(TestSupport.context(coordinator))
    }

    /// The number of Employees in the store file at `url`, read by a coordinator of its own.
    private static func employees(in url: URL, type: String, model: NSManagedObjectModel) throws -> Int {
        let reader = NSPersistentStoreCoordinator(managedObjectModel: model)
        try reader.addPersistentStore(ofType: type, configurationName: nil, at: url, options: nil)
        return try TestSupport.context(reader).count(for: NSFetchRequest<NSManagedObject>(entityName: "Employee"))
    }

    private static func insertEmployee(_ name: String, into coordinator: NSPersistentStoreCoordinator) throws {
        let context = TestSupport.context(coordinator)
        NSEntityDescription.insertNewObject(forEntityName: "Employee", into: context).setValue(name, forKey: "name")
        try context.save()
    }

    @Test func setURLMakesABinaryStoreSaveElsewhere() throws {
        let model = TestSupport.makeCompanyModel()
        let (coordinator, oldURL) = try TestSupport.coordinator(model, type: NSBinaryStoreType)
        let store = coordinator.persistentStores[0]
        try Self.populate(TestSupport.context(coordinator))
        let newURL = TestSupport.temporaryDirectory().appendingPathComponent("Elsewhere.store")
        #expect(coordinator.setURL(newURL, for: store))
        #expect(store.url == newURL)
        try Self.insertEmployee("Dan", into: coordinator)
        #expect(try Self.employees(in: newURL, type: NSBinaryStoreType, model: model) == 4)
        #expect(try Self.employees(in: try #require(oldURL), type: NSBinaryStoreType, model: model) == 3)
    }

    @Test func setURLReconnectsASQLiteStoreToAnExistingCopy() throws {
        let model = TestSupport.makeCompanyModel()
        let (coordinator, storeURL) = try TestSupport.coordinator(model)
        let oldURL = try #require(storeURL)
        let store = coordinator.persistentStores[0]
        try Self.populate(TestSupport.context(coordinator))
        let directory = TestSupport.temporaryDirectory()

        // Nothing there, or not a store: false, and the store goes on where it was.
        #expect(!coordinator.setURL(directory.appendingPathComponent("Nothing.sqlite"), for: store))
        let garbage = directory.appendingPathComponent("Garbage.sqlite")
        try Data(repeating: 7, count: 4096).write(to: garbage)
        #expect(!coordinator.setURL(garbage, for: store))
        #expect(try Data(contentsOf: garbage) == Data(repeating: 7, count: 4096))
        #expect(store.url == oldURL)
        try Self.insertEmployee("Eve", into: coordinator)
        #expect(try Self.employees(in: oldURL, type: NSSQLiteStoreType, model: model) == 4)

        // A copy of the store: the connection moves there, and saves go there.
        let copy = directory.appendingPathComponent("Copy.sqlite")
        try coordinator.replacePersistentStore(at: copy, withPersistentStoreFrom: oldURL, ofType: NSSQLiteStoreType)
        #expect(coordinator.setURL(copy, for: store))
        #expect(store.url == copy)
        let names = try TestSupport.context(coordinator).fetch(NSFetchRequest<NSManagedObject>(entityName: "Employee")).compactMap { $0.value(forKey: "name") as? String }
        #expect(names.sorted() == ["Ada", "Ann", "Bob", "Eve"])
        try Self.insertEmployee("Fay", into: coordinator)
        #expect(try Self.employees(in: copy, type: NSSQLiteStoreType, model: model) == 5)
        #expect(try Self.employees(in: oldURL, type: NSSQLiteStoreType, model: model) == 4)
    }
}
