import Foundation
import OpenCoreData
import Testing

/// A fault whose row another context deleted: with `shouldDeleteInaccessibleFaults` (the default)
/// it fires as a deleted object with empty values, exempt from validation, that the next save
/// discards; `shouldHandleInaccessibleFault(_:for:triggeredByProperty:)` decides per object.
@Suite struct InaccessibleFaultTests {
    /// A company with a department, saved; a fault of each in a fresh context; both rows then
    /// deleted by another context.
    static func faultsOfDeletedRows(context: (NSPersistentStoreCoordinator) -> NSManagedObjectContext = { TestSupport.context($0) })
        throws -> (coordinator: NSPersistentStoreCoordinator, reader: NSManagedObjectContext, company: NSManagedObject, department: NSManagedObject) {
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: TestSupport.makeCompanyModel())
        try coordinator.addPersistentStore(type: .sqlite, at: TestSupport.temporaryDirectory().appendingPathComponent("faults.sqlite"))
        let writer = TestSupport.context(coordinator)
        let company = NSEntityDescription.insertNewObject(forEntityName: "Company", into: writer)
        company.setValue("Acme", forKey: "name")
        let department = NSEntityDescription.insertNewObject(forEntityName: "Department", into: writer)
        department.setValue("Sales", forKey: "name")
        department.setValue(company, forKey: "company")
        let survivor = NSEntityDescription.insertNewObject(forEntityName: "Company", into: writer)
        survivor.setValue("Initech", forKey: "name")
        try writer.save()

        let reader = context(coordinator)
        let companyFault = reader.object(with: company.objectID)
        let departmentFault = reader.object(with: department.objectID)
        #expect(companyFault.isFault && departmentFault.isFault)
        writer.delete(company)
        try writer.save()
        return (coordinator, reader, companyFault, departmentFault)
    }

    @Test func aFaultWhoseRowIsGoneFiresAsADeletedObjectWithEmptyValues() throws {
        let (coordinator, reader, company, department) = try Self.faultsOfDeletedRows()
        #expect(company.value(forKey: "name") == nil)
        #expect(company.value(forKey: "founded") == nil)
        #expect((company.value(forKey: "departments") as? Set<NSManagedObject>)?.isEmpty ?? true)
        #expect(company.isDeleted)
        #expect(reader.deletedObjects.contains(company))
        #expect(reader.hasChanges)
        #expect(department.value(forKey: "company") == nil)

        // The save discards them unvalidated (Department's name is required, and nil here) and
        // writes nothing for them; the other company is still in the store.
        try reader.save()
        #expect(!reader.hasChanges)
        #expect(reader.registeredObject(for: company.objectID) == nil)
        let names = try TestSupport.context(coordinator).fetch(NSFetchRequest<NSManagedObject>(entityName: "Company")).compactMap { $0.value(forKey: "name") as? String }
        #expect(names == ["Initech"])
    }

    @Test func resetDiscardsThemToo() throws {
        let (_, reader, company, _) = try Self.faultsOfDeletedRows()
        _ = company.value(forKey: "name")
        #expect(reader.deletedObjects.count == 1)
        reader.reset()
        #expect(reader.deletedObjects.isEmpty)
        #expect(!reader.hasChanges)
    }

    @Test func aSubclassDecidesPerObject() throws {
        let (_, reader, company, department) = try Self.faultsOfDeletedRows { coordinator in
            let context = DecidingContext(concurrencyType: .confinementConcurrencyType)
            context.persistentStoreCoordinator = coordinator
            context.shouldDeleteInaccessibleFaults = false
            return context
        }
        let decider = try #require(reader as? DecidingContext)
        decider.allowed = [company.objectID]
        #expect(company.value(forKey: "name") == nil)
        #expect(company.isDeleted)
        #expect(decider.asked.map(\.1) == [company.objectID])
        #expect(decider.asked.first?.0 === company)
        _ = department  // Not fired: the subclass would refuse it, which traps (see FaultErrorTests).
    }
}

/// A context that turns only the faults it lists into deleted objects, and records what it was asked.
final class DecidingContext: NSManagedObjectContext, @unchecked Sendable {
    var allowed: Set<NSManagedObjectID> = []
    private(set) var asked: [(NSManagedObject, NSManagedObjectID)] = []

    override func shouldHandleInaccessibleFault(_ fault: NSManagedObject, for oid: NSManagedObjectID, triggeredByProperty property: NSPropertyDescription?) -> Bool {
        asked.append((fault, oid))
        return allowed.contains(oid)
    }
}
