import Foundation
import OpenCoreData
import Testing

/// `entity == %@`: Core Data's way to pick the objects of exactly one entity of a hierarchy, in
/// the store (its entity number) and in memory (an unsaved object's `entity`).
@Suite struct EntityPredicateTests {
    @Test func anEntityComparisonPicksTheObjectsOfThatEntity() throws {
        let model = TestSupport.makeCompanyModel()
        let (coordinator, _) = try TestSupport.coordinator(model)
        try Self.checkEntityComparisons(in: TestSupport.context(coordinator), model: model)
    }

    /// Saves an Employee and a Manager in `context` (on a store of the company `model`) and checks
    /// the entity comparisons against them, then against an unsaved Manager; call it on the
    /// context's queue.
    static func checkEntityComparisons(in context: NSManagedObjectContext, model: NSManagedObjectModel) throws {
        NSEntityDescription.insertNewObject(forEntityName: "Employee", into: context).setValue("Ann", forKey: "name")
        NSEntityDescription.insertNewObject(forEntityName: "Manager", into: context).setValue("Bob", forKey: "name")
        try context.save()
        let manager = try #require(model.entitiesByName["Manager"])
        let employee = try #require(model.entitiesByName["Employee"])
        let cases: [(String, Any, [String])] = [
            ("entity == %@", manager, ["Bob"]), ("entity == %@", employee, ["Ann"]), ("entity != %@", manager, ["Ann"]),
            ("self.entity == %@", manager, ["Bob"]), ("entity IN %@", [manager, employee], ["Ann", "Bob"]),
            ("entity == %@ AND name BEGINSWITH 'B'", manager, ["Bob"]),
        ]
        for (format, argument, expected) in cases {
            let request = NSFetchRequest<NSManagedObject>(entityName: "Employee")
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
