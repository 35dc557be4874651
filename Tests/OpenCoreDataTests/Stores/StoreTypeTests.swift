import Foundation
import OpenCoreData
import Testing

/// A transformer for a custom type, registered by name as Core Data users do.
final class CSVListTransformer: ValueTransformer, @unchecked Sendable {
    override class func transformedValueClass() -> AnyClass { NSData.self }
    override class func allowsReverseTransformation() -> Bool { true }
    override func transformedValue(_ value: Any?) -> Any? { (value as? [String]).map { Data($0.joined(separator: ",").utf8) } }
    override func reverseTransformedValue(_ value: Any?) -> Any? { (value as? Data).map { String(decoding: $0, as: UTF8.self).split(separator: ",").map(String.init) } }
}

@Suite struct StoreTypeTests {
    @Test(arguments: [NSSQLiteStoreType, NSBinaryStoreType, NSInMemoryStoreType])
    func everyAttributeTypeRoundTrips(storeType: String) throws {
        let model = TestSupport.makeCompanyModel()
        let (coordinator, url) = try TestSupport.coordinator(model, type: storeType)
        let context = TestSupport.context(coordinator)
        let person = NSEntityDescription.insertNewObject(forEntityName: "Employee", into: context)
        let values: [String: Any] = [
            "name": "Ünïcödé ✓", "salary": Int64(9_000_000_000 % 1_000_000), "age": Int16(-3), "level": Int32(1 << 30),
            "rating": 3.25, "score": Float(1.5), "active": false, "hired": Date(timeIntervalSinceReferenceDate: -12.25),
            "photo": Data([0, 1, 2, 255]), "badge": UUID(), "homepage": URL(string: "https://example.com/a?b=c")!,
            "tags": ["swift", "linux"] as NSArray,
        ]
        for (key, value) in values { person.setValue(value, forKey: key) }
        let department = NSEntityDescription.insertNewObject(forEntityName: "Department", into: context)
        department.setValue("Money", forKey: "name")
        department.setValue(Decimal(string: "12345.678")!, forKey: "budget")
        try context.save()

        // Read back in a fresh context (and, for file stores, a fresh coordinator).
        let reader: NSPersistentStoreCoordinator
        if storeType == NSInMemoryStoreType {
            reader = coordinator
        } else {
            reader = NSPersistentStoreCoordinator(managedObjectModel: model)
            try reader.addPersistentStore(ofType: storeType, configurationName: nil, at: url, options: nil)
        }
        let fresh = TestSupport.context(reader)
        let loaded = try #require(try fresh.fetch(NSFetchRequest<NSManagedObject>(entityName: "Employee")).first)
        for (key, value) in values where key != "tags" {
            #expect(ValueBox(loaded.value(forKey: key)) == ValueBox(value), "\(key)")
        }
        #expect((loaded.value(forKey: "tags") as? [Any])?.compactMap { $0 as? String } == ["swift", "linux"] || (loaded.value(forKey: "tags") as? NSArray)?.count == 2)
        let money = try #require(try fresh.fetch(NSFetchRequest<NSManagedObject>(entityName: "Department")).first)
        #expect(money.value(forKey: "budget") as? Decimal == Decimal(string: "12345.678"))
    }

    @Test func namedValueTransformer() throws {
        ValueTransformer.setValueTransformer(CSVListTransformer(), forName: NSValueTransformerName("CSVListTransformer"))
        #expect(ValueTransformer.valueTransformerNames().contains(NSValueTransformerName("CSVListTransformer")))
        let entity = NSEntityDescription(name: "Note", properties: [])
        let list = NSAttributeDescription(name: "words", type: .transformableAttributeType)
        list.valueTransformerName = "CSVListTransformer"
        entity.properties = [list]
        let model = NSManagedObjectModel()
        model.entities = [entity]
        let (coordinator, url) = try TestSupport.coordinator(model)
        let context = TestSupport.context(coordinator)
        NSEntityDescription.insertNewObject(forEntityName: "Note", into: context).setValue(["a", "b"], forKey: "words")
        try context.save()
        let reader = NSPersistentStoreCoordinator(managedObjectModel: model)
        try reader.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url, options: nil)
        let loaded = try TestSupport.context(reader).fetch(NSFetchRequest<NSManagedObject>(entityName: "Note"))
        #expect(loaded.first?.value(forKey: "words") as? [String] == ["a", "b"])
        let secure = try #require(ValueTransformer.named(.secureUnarchiveFromDataTransformerName))
        let archived = secure.reverseTransformedValue(["x": 1] as NSDictionary)
        #expect(archived is Data)
        #expect((secure.transformedValue(archived) as? NSDictionary)?["x"] != nil)
    }

    @Test func binaryStoreIsAtomicAndReloads() throws {
        let model = TestSupport.makeCompanyModel()
        let (coordinator, url) = try TestSupport.coordinator(model, type: NSBinaryStoreType)
        let context = TestSupport.context(coordinator)
        let department = NSEntityDescription.insertNewObject(forEntityName: "Department", into: context)
        department.setValue("Bin", forKey: "name")
        for index in 0..<3 {
            let person = NSEntityDescription.insertNewObject(forEntityName: "Employee", into: context)
            person.setValue("B\(index)", forKey: "name")
            person.setValue(department, forKey: "department")
        }
        try context.save()
        let saved = try Data(contentsOf: url!)
        // A failed save leaves the file byte for byte as it was.
        let invalid = NSEntityDescription.insertNewObject(forEntityName: "Employee", into: context)
        invalid.setValue(Int64(-1), forKey: "salary")
        #expect(throws: NSError.self) { try context.save() }
        #expect(try Data(contentsOf: url!) == saved)
        context.delete(invalid)

        let reader = NSPersistentStoreCoordinator(managedObjectModel: model)
        try reader.addPersistentStore(ofType: NSBinaryStoreType, configurationName: nil, at: url, options: nil)
        let fresh = TestSupport.context(reader)
        let request = NSFetchRequest<NSManagedObject>(entityName: "Department")
        request.predicate = NSPredicate(format: "name == 'Bin'")
        let loaded = try #require(try fresh.fetch(request).first)
        #expect((loaded.value(forKey: "employees") as? Set<NSManagedObject>)?.count == 3)
        let metadata = try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: NSBinaryStoreType, at: url!)
        #expect(metadata[NSStoreTypeKey] as? String == NSBinaryStoreType)
        // Garbage is rejected with Core Data's error, untouched.
        let garbage = TestSupport.temporaryDirectory().appendingPathComponent("garbage.bin")
        try Data("nope".utf8).write(to: garbage)
        let error = try #require(throws: NSError.self) {
            try NSPersistentStoreCoordinator(managedObjectModel: model).addPersistentStore(ofType: NSBinaryStoreType, configurationName: nil, at: garbage, options: nil)
        }
        #expect(error.code == NSPersistentStoreInvalidTypeError)
        #expect(try Data(contentsOf: garbage) == Data("nope".utf8))
    }

    @Test func severalStoresWithConfigurations() throws {
        let model = TestSupport.makeCompanyModel()
        let entities = model.entitiesByName
        model.setEntities([entities["Company"]!, entities["Department"]!, entities["Team"]!], forConfigurationName: "Org")
        model.setEntities([entities["Project"]!], forConfigurationName: "Work")
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        let directory = TestSupport.temporaryDirectory()
        let org = try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: "Org", at: directory.appendingPathComponent("org.sqlite"), options: nil)
        let work = try coordinator.addPersistentStore(ofType: NSInMemoryStoreType, configurationName: "Work", at: nil, options: nil)
        #expect(coordinator.persistentStores.count == 2)
        let context = TestSupport.context(coordinator)
        let department = NSEntityDescription.insertNewObject(forEntityName: "Department", into: context)
        department.setValue("D", forKey: "name")
        let project = NSEntityDescription.insertNewObject(forEntityName: "Project", into: context)
        project.setValue("P", forKey: "title")
        try context.save()
        #expect(department.objectID.persistentStore === org)
        #expect(project.objectID.persistentStore === work)
        #expect(try context.count(for: NSFetchRequest<NSManagedObject>(entityName: "Project")) == 1)
        #expect(coordinator.persistentStore(for: directory.appendingPathComponent("org.sqlite")) === org)
        #expect(throws: NSError.self) {
            try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: "Nope", at: directory.appendingPathComponent("x.sqlite"), options: nil)
        }
        try coordinator.remove(work)
        #expect(coordinator.persistentStores.count == 1)
        try coordinator.destroyPersistentStore(at: directory.appendingPathComponent("org.sqlite"), ofType: NSSQLiteStoreType)
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("org.sqlite").path))
    }
}

/// Compares heterogeneous values in tests.
struct ValueBox: Equatable {
    let value: Any?
    init(_ value: Any?) { self.value = value }
    static func == (lhs: ValueBox, rhs: ValueBox) -> Bool {
        switch (lhs.value, rhs.value) {
        case (nil, nil): return true
        case let (a as AnyHashable, b as AnyHashable): return a == b
        default: return false
        }
    }
}
