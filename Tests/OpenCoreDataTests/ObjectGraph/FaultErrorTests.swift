import Foundation
import GRDB
import OpenCoreData
import Testing

/// A store that can't be read while a fault fires is reported as what it is, with the store's
/// error: never as a deleted object, never as an empty relationship.
@Suite struct FaultErrorTests {
    /// Department (name, employees) ↔ Employee (name, department), in a new SQLite store with
    /// one department of two employees; returns the context and the store's URL.
    static func savedCompany() throws -> (context: NSManagedObjectContext, url: URL, department: NSManagedObjectID, employee: NSManagedObjectID) {
        let department = NSEntityDescription(name: "Department", properties: [NSAttributeDescription(name: "name", type: .stringAttributeType)])
        let employee = NSEntityDescription(name: "Employee", properties: [NSAttributeDescription(name: "name", type: .stringAttributeType)])
        let employees = NSRelationshipDescription(name: "employees", destination: employee, toMany: true)
        let worksIn = NSRelationshipDescription(name: "department", destination: department)
        employees.inverseRelationship = worksIn
        worksIn.inverseRelationship = employees
        department.properties.append(employees)
        employee.properties.append(worksIn)
        let model = NSManagedObjectModel()
        model.entities = [department, employee]
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("ocd-fault-\(UUID().uuidString).sqlite")
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url, options: nil)
        let context = NSManagedObjectContext(concurrencyType: .confinementConcurrencyType)
        context.persistentStoreCoordinator = coordinator
        let sales = NSEntityDescription.insertNewObject(forEntityName: "Department", into: context)
        sales.setValue("Sales", forKey: "name")
        var first: NSManagedObject?
        for name in ["Ada", "Grace"] {
            let person = NSEntityDescription.insertNewObject(forEntityName: "Employee", into: context)
            person.setValue(name, forKey: "name")
            person.setValue(sales, forKey: "department")
            first = first ?? person
        }
        try context.save()
        let ids = (sales.objectID, first!.objectID)
        context.reset()
        return (context, url, ids.0, ids.1)
    }

    /// Drops a table behind the store's back, so its next read fails with "no such table".
    static func dropTable(_ table: String, at url: URL) throws {
        let queue = try DatabaseQueue(path: url.path)
        try queue.write { try $0.execute(sql: "DROP TABLE \(table)") }
    }

    @Test func anAttributeFaultThatCantBeReadTrapsWithTheStoresError() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let (context, url, _, employeeID) = try FaultErrorTests.savedCompany()
            let employee = context.object(with: employeeID)
            try FaultErrorTests.dropTable("ZEMPLOYEE", at: url)
            _ = employee.value(forKey: "name")
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("could not fulfill a fault"))
        #expect(message.contains("the store could not be read"))
        #expect(message.contains("no such table"))
        #expect(!message.contains("deleted from the store"))
    }

    @Test func aToManyFaultThatCantBeReadTrapsInsteadOfReadingAsEmpty() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let (context, url, departmentID, _) = try FaultErrorTests.savedCompany()
            let department = context.object(with: departmentID)
            _ = department.value(forKey: "name")
            try FaultErrorTests.dropTable("ZEMPLOYEE", at: url)
            _ = (department.value(forKey: "employees") as? Set<NSManagedObject>)?.count
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("could not fulfill the to-many fault 'employees'"))
        #expect(message.contains("no such table"))
    }

    @Test func aDeletedRowTrapsWhenTheContextDoesntDeleteInaccessibleFaults() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let (context, url, _, employeeID) = try FaultErrorTests.savedCompany()
            context.shouldDeleteInaccessibleFaults = false
            let employee = context.object(with: employeeID)
            let queue = try DatabaseQueue(path: url.path)
            try queue.write { try $0.execute(sql: "DELETE FROM ZEMPLOYEE") }
            _ = employee.value(forKey: "name")
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("deleted from the store"))
    }

    @Test func refreshingFromAStoreThatCantBeReadKeepsTheObjectAsItWas() throws {
        let (context, url, _, employeeID) = try Self.savedCompany()
        let employee = context.object(with: employeeID)
        employee.setValue("Ada L.", forKey: "name")
        try Self.dropTable("ZEMPLOYEE", at: url)
        context.refresh(employee, mergeChanges: true)
        #expect(employee.hasChanges)
        #expect(employee.changedValues()["name"] as? String == "Ada L.")
        #expect(employee.value(forKey: "name") as? String == "Ada L.")
    }
}
