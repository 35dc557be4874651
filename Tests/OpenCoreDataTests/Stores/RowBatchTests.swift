import Foundation
@testable import OpenCoreDataCore
import OpenCoreData
import Testing

/// Objects fetched from the SQLite store read their values in place from batches of rows
/// (`SlotRowBatch`) until they need values of their own; these tests pin down that the batch is
/// only an implementation detail: every read, write, snapshot and save sees the right values.
@Suite struct RowBatchTests {
    /// Employees (words, strings, a to-one relationship) and managers (a subentity, so rows of two
    /// entity numbers come interleaved) in a fresh SQLite store; `count` of each kind.
    private static func store(employees count: Int) throws -> NSPersistentStoreCoordinator {
        let (coordinator, _) = try TestSupport.coordinator(TestSupport.makeCompanyModel())
        let context = TestSupport.context(coordinator)
        let department = NSEntityDescription.insertNewObject(forEntityName: "Department", into: context)
        department.setValue("Research", forKey: "name")
        for index in 0..<count {
            for entityName in ["Employee", "Manager"] {
                let person = NSEntityDescription.insertNewObject(forEntityName: entityName, into: context)
                person.setValue("\(entityName) \(index)", forKey: "name")
                person.setValue(Int64(index), forKey: "salary")
                person.setValue(Double(index) / 2, forKey: "rating")
                person.setValue(index % 3 == 0 ? nil : Int16(index % 100), forKey: "age")
                person.setValue(department, forKey: "department")
            }
        }
        try context.save()
        return coordinator
    }

    @Test func fetchedObjectsReadTheirRowsAcrossManyBatches() throws {
        let coordinator = try Self.store(employees: 1500)
        let context = TestSupport.context(coordinator)
        let request = NSFetchRequest<NSManagedObject>(entityName: "Employee")
        request.sortDescriptors = [NSSortDescriptor(key: "salary", ascending: true), NSSortDescriptor(key: "name", ascending: true)]
        let people = try context.fetch(request)
        #expect(people.count == 3000)
        // Every fetched object starts out reading from a batch.
        #expect(people.allSatisfy { $0.rowBatch != nil })
        for (position, person) in people.enumerated() {
            let index = position / 2
            let isManager = person.entity.name == "Manager"
            #expect(person.value(forKey: "salary") as? Int64 == Int64(index))
            #expect(person.value(forKey: "rating") as? Double == Double(index) / 2)
            #expect(person.value(forKey: "age") as? Int16 == (index % 3 == 0 ? nil : Int16(index % 100)))
            #expect(person.value(forKey: "name") as? String == "\(isManager ? "Manager" : "Employee") \(index)")
            #expect((person.value(forKey: "department") as? NSManagedObject)?.value(forKey: "name") as? String == "Research")
        }
    }

    @Test func writingOneObjectLeavesItsBatchNeighboursAndItsSnapshotAlone() throws {
        let coordinator = try Self.store(employees: 40)
        let context = TestSupport.context(coordinator)
        let request = NSFetchRequest<NSManagedObject>(entityName: "Employee")
        request.includesSubentities = false
        request.sortDescriptors = [NSSortDescriptor(key: "salary", ascending: true)]
        let people = try context.fetch(request)
        let (first, second) = (people[0], people[1])
        #expect(first.rowBatch != nil && first.rowBatch === second.rowBatch, "neighbours share a batch")
        first.setValue(Int64(999), forKey: "salary")
        first.setValue("Renamed", forKey: "name")
        #expect(first.rowBatch == nil, "a write gives the object values of its own")
        #expect(first.value(forKey: "salary") as? Int64 == 999)
        #expect(first.committedValues(forKeys: ["salary", "name"])["salary"] as? Int64 == 0)
        #expect(first.committedValues(forKeys: ["name"])["name"] as? String == "Employee 0")
        #expect(Set(first.changedValues().keys) == ["salary", "name"])
        #expect(second.value(forKey: "salary") as? Int64 == 1 && second.rowBatch != nil)
        #expect(second.changedValues().isEmpty && !second.hasChanges)
        context.rollback()
        #expect(first.value(forKey: "salary") as? Int64 == 0 && first.value(forKey: "name") as? String == "Employee 0")
        second.setValue(Int64(7), forKey: "salary")
        try context.save()
        let reread = TestSupport.context(coordinator)
        let check = NSFetchRequest<NSManagedObject>(entityName: "Employee")
        check.predicate = NSPredicate(format: "salary == 7 AND name == %@", "Employee 1")
        #expect(try reread.count(for: check) == 1)
    }

    @Test func anObjectKeptFromABigFetchStillReadsItsRow() throws {
        let coordinator = try Self.store(employees: 600)
        let context = TestSupport.context(coordinator)
        let kept: NSManagedObject = try {
            let request = NSFetchRequest<NSManagedObject>(entityName: "Employee")
            request.predicate = NSPredicate(format: "salary >= 0")
            request.sortDescriptors = [NSSortDescriptor(key: "name", ascending: false)]
            return try context.fetch(request)[777]
        }()
        context.refreshAllObjects()
        #expect(kept.managedObjectContext === context)
        let name = try #require(kept.value(forKey: "name") as? String)
        let salary = try #require(kept.value(forKey: "salary") as? Int64)
        #expect(name.hasSuffix(" \(salary)"))
        // A refetch of the same rows reuses the registered object.
        let again = try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Employee"))
        #expect(again.contains { $0 === kept })
    }
}
