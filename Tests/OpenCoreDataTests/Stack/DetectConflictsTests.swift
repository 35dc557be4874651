import Foundation
import OpenCoreData
import Testing

/// `detectConflicts(for:)`: a save fails (or its merge policy resolves) when an object it
/// depends on but doesn't change was changed or deleted in the store since it was read.
@MainActor
@Suite struct DetectConflictsTests {
    /// A store of the company model with two departments, Sales and Lab, and two contexts that
    /// have both loaded.
    private struct Scenario {
        let coordinator: NSPersistentStoreCoordinator
        let mine: NSManagedObjectContext
        let theirs: NSManagedObjectContext

        init(type: String) throws {
            (coordinator, _) = try TestSupport.coordinator(TestSupport.makeCompanyModel(), type: type)
            let setup = TestSupport.context(coordinator)
            for name in ["Sales", "Lab"] {
                NSEntityDescription.insertNewObject(forEntityName: "Department", into: setup).setValue(name, forKey: "name")
            }
            try setup.save()
            mine = TestSupport.context(coordinator)
            theirs = TestSupport.context(coordinator)
        }

        func department(_ name: String, in context: NSManagedObjectContext) throws -> NSManagedObject {
            let request = NSFetchRequest<NSManagedObject>(entityName: "Department")
            request.predicate = NSPredicate(format: "name == %@", name)
            let object = try #require(try context.fetch(request).first)
            _ = object.value(forKey: "name")
            return object
        }

        /// The budgets the store holds, read by a fresh context.
        func storedBudgets() throws -> [String: Decimal] {
            let departments = try TestSupport.context(coordinator).fetch(NSFetchRequest<NSManagedObject>(entityName: "Department"))
            var budgets: [String: Decimal] = [:]
            for department in departments { budgets[department.value(forKey: "name") as? String ?? ""] = department.value(forKey: "budget") as? Decimal }
            return budgets
        }
    }

    @Test(arguments: [NSSQLiteStoreType, NSBinaryStoreType])
    func aCheckedObjectChangedInTheStoreFailsTheSave(type: String) throws {
        let scenario = try Scenario(type: type)
        let sales = try scenario.department("Sales", in: scenario.mine)
        let lab = try scenario.department("Lab", in: scenario.mine)
        // They change Sales; I change only Lab, but my change depends on Sales as I read it.
        try scenario.department("Sales", in: scenario.theirs).setValue(Decimal(5), forKey: "budget")
        try scenario.theirs.save()
        scenario.mine.detectConflicts(for: sales)
        lab.setValue(Decimal(7), forKey: "budget")
        let error = #expect(throws: NSError.self) { try scenario.mine.save() }
        #expect(error?.code == NSManagedObjectMergeError)
        let conflicts = error?.userInfo[NSPersistentStoreSaveConflictsErrorKey] as? [NSMergeConflict]
        #expect(conflicts?.map(\.sourceObject) == [sales])
        #expect(try scenario.storedBudgets()["Lab"] == nil, "nothing of the failed save was written")
        #expect(lab.hasChanges, "the context keeps its changes")
    }

    @Test func anUncheckedObjectOrAnUnchangedOneDoesNotConflict() throws {
        let scenario = try Scenario(type: NSSQLiteStoreType)
        let sales = try scenario.department("Sales", in: scenario.mine)
        let lab = try scenario.department("Lab", in: scenario.mine)
        // Checked, and unchanged in the store: the save goes through, and the mark is spent.
        scenario.mine.detectConflicts(for: sales)
        lab.setValue(Decimal(1), forKey: "budget")
        try scenario.mine.save()
        try scenario.department("Sales", in: scenario.theirs).setValue(Decimal(5), forKey: "budget")
        try scenario.theirs.save()
        lab.setValue(Decimal(2), forKey: "budget")
        try scenario.mine.save()
        #expect(try scenario.storedBudgets() == ["Sales": Decimal(5), "Lab": Decimal(2)])
    }

    @Test func theMergePolicyResolvesACheckedObjectsConflict() throws {
        let scenario = try Scenario(type: NSSQLiteStoreType)
        let sales = try scenario.department("Sales", in: scenario.mine)
        let lab = try scenario.department("Lab", in: scenario.mine)
        try scenario.department("Sales", in: scenario.theirs).setValue(Decimal(5), forKey: "budget")
        try scenario.theirs.save()
        scenario.mine.mergePolicy = NSMergeByPropertyObjectTrumpMergePolicy
        scenario.mine.detectConflicts(for: sales)
        lab.setValue(Decimal(7), forKey: "budget")
        try scenario.mine.save()
        #expect(sales.value(forKey: "budget") as? Decimal == Decimal(5), "the checked object took the store's values")
        #expect(try scenario.storedBudgets() == ["Sales": Decimal(5), "Lab": Decimal(7)])
    }

    @Test func aCheckedObjectDeletedInTheStoreConflicts() throws {
        let scenario = try Scenario(type: NSSQLiteStoreType)
        let sales = try scenario.department("Sales", in: scenario.mine)
        let lab = try scenario.department("Lab", in: scenario.mine)
        scenario.theirs.delete(try scenario.department("Sales", in: scenario.theirs))
        try scenario.theirs.save()
        scenario.mine.detectConflicts(for: sales)
        lab.setValue(Decimal(7), forKey: "budget")
        let error = #expect(throws: NSError.self) { try scenario.mine.save() }
        #expect(error?.code == NSManagedObjectMergeError)
    }

    @Test func aChildsCheckGoesToItsParentsSave() throws {
        let scenario = try Scenario(type: NSSQLiteStoreType)
        let child = NSManagedObjectContext(concurrencyType: .mainQueueConcurrencyType)
        child.parent = scenario.mine
        let sales = try scenario.department("Sales", in: child)
        let lab = try scenario.department("Lab", in: child)
        try scenario.department("Sales", in: scenario.theirs).setValue(Decimal(5), forKey: "budget")
        try scenario.theirs.save()
        child.detectConflicts(for: sales)
        lab.setValue(Decimal(7), forKey: "budget")
        try child.save()
        let error = #expect(throws: NSError.self) { try scenario.mine.save() }
        #expect(error?.code == NSManagedObjectMergeError)
    }
}
