import Foundation
import OpenCoreData
import Testing

/// `entity == %@`: Core Data's way to pick the objects of exactly one entity of a hierarchy, in
/// the store (its entity number) and in memory (an unsaved object's `entity`).
@Suite struct EntityPredicateTests {
    @Test(arguments: [NSSQLiteStoreType, NSInMemoryStoreType, NSBinaryStoreType])
    func anEntityComparisonPicksTheObjectsOfThatEntity(storeType: String) throws {
        let model = TestSupport.makeCompanyModel()
        let (coordinator, _) = try TestSupport.coordinator(model, type: storeType)
        try Self.checkEntityComparisons(in: TestSupport.context(coordinator), model: model)
    }

    /// Saves an Employee and her boss, a Manager, in `context` (on a store of the company `model`)
    /// and checks the entity comparisons against them (of the object, of its boss, of a SUBQUERY's
    /// element), then against an unsaved Manager; call it on the context's queue.
    static func checkEntityComparisons(in context: NSManagedObjectContext, model: NSManagedObjectModel) throws {
        let ann = NSEntityDescription.insertNewObject(forEntityName: "Employee", into: context)
        ann.setValue("Ann", forKey: "name")
        let bob = NSEntityDescription.insertNewObject(forEntityName: "Manager", into: context)
        bob.setValue("Bob", forKey: "name")
        ann.setValue(bob, forKey: "boss")
        try context.save()
        let manager = try #require(model.entitiesByName["Manager"])
        let employee = try #require(model.entitiesByName["Employee"])
        let cases: [(String, Any, [String])] = [
            ("entity == %@", manager, ["Bob"]), ("entity == %@", employee, ["Ann"]), ("entity != %@", manager, ["Ann"]),
            ("self.entity == %@", manager, ["Bob"]), ("entity IN %@", [manager, employee], ["Ann", "Bob"]),
            ("entity == %@ AND name BEGINSWITH 'B'", manager, ["Bob"]),
        ]
        // The entity of an object a to-one key path reaches (Bob has no boss), and of SUBQUERY's element.
        let reached: [(String, String, Any, [String])] = [
            ("Employee", "boss.entity == %@", manager, ["Ann"]), ("Employee", "boss.entity != %@", manager, ["Bob"]),
            ("Employee", "boss.entity == %@", employee, []), ("Employee", "boss.entity IN %@", [manager], ["Ann"]),
            ("Manager", "SUBQUERY(reports, $r, $r.entity == %@).@count > 0", employee, ["Bob"]),
            ("Manager", "SUBQUERY(reports, $r, $r.entity == %@).@count > 0", manager, []),
        ]
        for (entityName, format, argument, expected) in cases.map({ ("Employee", $0.0, $0.1, $0.2) }) + reached {
            let request = NSFetchRequest<NSManagedObject>(entityName: entityName)
            request.predicate = NSPredicate(format: format, argumentArray: [argument])
            request.sortDescriptors = [NSSortDescriptor(key: "name", ascending: true)]
            #expect(try context.fetch(request).compactMap { $0.value(forKey: "name") as? String } == expected, "\(format)")
            #expect(try context.count(for: request) == expected.count, "\(format)")
        }

        // Unsaved objects are judged in memory by their entity.
        NSEntityDescription.insertNewObject(forEntityName: "Manager", into: context).setValue("Cy", forKey: "name")
        let managers = NSFetchRequest<NSManagedObject>(entityName: "Employee")
        managers.predicate = NSPredicate(format: "entity == %@", manager)
        managers.sortDescriptors = [NSSortDescriptor(key: "name", ascending: true)]
        #expect(try context.fetch(managers).compactMap { $0.value(forKey: "name") as? String } == ["Bob", "Cy"])
    }

    @Test func anEntityComparedToSomethingElseIsRefused() throws {
        let (coordinator, _) = try TestSupport.coordinator(TestSupport.makeCompanyModel())
        let context = TestSupport.context(coordinator)
        let request = NSFetchRequest<NSManagedObject>(entityName: "Employee")
        request.predicate = NSPredicate(format: "entity == 'Manager'")
        #expect {
            try context.fetch(request)
        } throws: { error in
            (error as NSError).domain == NSCocoaErrorDomain && (error as NSError).code == 134091
        }
    }
}
