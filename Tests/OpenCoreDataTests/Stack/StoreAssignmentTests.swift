import Foundation
import OpenCoreData
import Testing

/// `NSManagedObjectContext.assign(_:to:)`: a coordinator with two stores that both hold every
/// entity saves each new object in the store chosen for it, the first store otherwise.
@Suite struct StoreAssignmentTests {
    /// A coordinator with two SQLite stores of the company model, neither with a configuration.
    private static func twoStores() throws -> (model: NSManagedObjectModel, coordinator: NSPersistentStoreCoordinator, first: NSPersistentStore, second: NSPersistentStore) {
        let model = TestSupport.makeCompanyModel()
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        let directory = TestSupport.temporaryDirectory()
        let first = try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: directory.appendingPathComponent("First.sqlite"))
        let second = try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: directory.appendingPathComponent("Second.sqlite"))
        return (model, coordinator, first, second)
    }

    /// The names of the Employees in a store's file, read by a coordinator of its own.
    private static func names(in store: NSPersistentStore, model: NSManagedObjectModel) throws -> [String] {
        let reader = NSPersistentStoreCoordinator(managedObjectModel: model)
        try reader.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: store.url, options: [NSReadOnlyPersistentStoreOption: true])
        return try TestSupport.context(reader).fetch(NSFetchRequest<NSManagedObject>(entityName: "Employee")).compactMap { $0.value(forKey: "name") as? String }.sorted()
    }

    private static func employee(_ name: String, in context: NSManagedObjectContext) -> NSManagedObject {
        let employee = NSEntityDescription.insertNewObject(forEntityName: "Employee", into: context)
        employee.setValue(name, forKey: "name")
        return employee
    }

    @Test func eachObjectIsSavedInTheStoreChosenForIt() throws {
        let (model, coordinator, first, second) = try Self.twoStores()
        let context = TestSupport.context(coordinator)
        // Interleaved, so that consecutive records of one entity go to different stores.
        var objects: [NSManagedObject] = []
        for index in 0..<10 {
            let employee = Self.employee("E\(index)", in: context)
            if index % 2 == 1 { context.assign(employee, to: second) }
            objects.append(employee)
        }
        try context.save()
        #expect(try Self.names(in: first, model: model) == ["E0", "E2", "E4", "E6", "E8"])
        #expect(try Self.names(in: second, model: model) == ["E1", "E3", "E5", "E7", "E9"])
        for (index, object) in objects.enumerated() {
            #expect(object.objectID.persistentStore === (index % 2 == 1 ? second : first))
        }
        // Both stores answer a fetch through the coordinator.
        #expect(try TestSupport.context(coordinator).count(for: NSFetchRequest<NSManagedObject>(entityName: "Employee")) == 10)
    }

    @Test func permanentIDsObtainedEarlyAreInTheChosenStore() throws {
        let (model, coordinator, first, second) = try Self.twoStores()
        let context = TestSupport.context(coordinator)
        let ann = Self.employee("Ann", in: context)
        let bob = Self.employee("Bob", in: context)
        context.assign(bob, to: second)
        try context.obtainPermanentIDs(for: [ann, bob])
        #expect(ann.objectID.persistentStore === first)
        #expect(bob.objectID.persistentStore === second)
        try context.save()
        #expect(try Self.names(in: first, model: model) == ["Ann"])
        #expect(try Self.names(in: second, model: model) == ["Bob"])
    }

    @Test func theChoiceGoesThroughAParentContext() throws {
        let (model, coordinator, first, second) = try Self.twoStores()
        let parent = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        parent.persistentStoreCoordinator = coordinator
        let child = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        child.parent = parent
        try child.performAndWait {
            do {
                let cat = Self.employee("Cat", in: child)
                _ = Self.employee("Dan", in: child)
                child.assign(cat, to: second)
            }
            try child.save()
        }
        try parent.performAndWait { try parent.save() }
        #expect(try Self.names(in: first, model: model) == ["Dan"])
        #expect(try Self.names(in: second, model: model) == ["Cat"])
    }

    @Test func anIDsStoreIsStillFoundAfterAnotherCoordinatorOpenedTheSameFile() throws {
        let model = TestSupport.makeCompanyModel()
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        let url = TestSupport.temporaryDirectory().appendingPathComponent("Shared.sqlite")
        let store = try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url)
        let context = TestSupport.context(coordinator)
        let ann = Self.employee("Ann", in: context)
        try context.save()
        // A second coordinator on the same file: while it has the store open, IDs of that file
        // find the newer store; once it is removed, this coordinator's again.
        let other = NSPersistentStoreCoordinator(managedObjectModel: model)
        let otherStore = try other.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url)
        #expect(ann.objectID.persistentStore === otherStore)
        try other.remove(otherStore)
        #expect(ann.objectID.persistentStore === store)
        try coordinator.remove(store)
        #expect(ann.objectID.persistentStore == nil)
    }
}
