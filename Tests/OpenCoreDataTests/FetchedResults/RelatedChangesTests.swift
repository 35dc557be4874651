import Foundation
import OpenCoreData
@testable import OpenCoreDataCore
import Testing

/// Beyond Apple: renaming a department updates a controller whose sections, sort or predicate
/// read `department.name`.
@Suite struct RelatedChangesTests {
    private func company() throws -> (NSManagedObjectContext, [NSManagedObject]) {
        let (coordinator, _) = try TestSupport.coordinator(TestSupport.makeCompanyModel())
        let context = TestSupport.context(coordinator)
        var departments: [NSManagedObject] = []
        for name in ["Engineering", "Marketing", "Sales"] {
            let department = NSEntityDescription.insertNewObject(forEntityName: "Department", into: context)
            department.setValue(name, forKey: "name")
            departments.append(department)
            for index in 0..<3 {
                let employee = NSEntityDescription.insertNewObject(forEntityName: "Employee", into: context)
                employee.setValue("\(name.prefix(1))\(index)", forKey: "name")
                employee.setValue(department, forKey: "department")
            }
        }
        try context.save()
        return (context, departments)
    }

    private func freshSections(_ context: NSManagedObjectContext, _ request: NSFetchRequest<NSManagedObject>) throws -> [[NSManagedObjectID]] {
        var sections: [(String, [NSManagedObjectID])] = []
        for employee in try context.fetch(request) {
            let name = employee.value(forKeyPath: "department.name") as? String ?? ""
            if sections.last?.0 == name { sections[sections.count - 1].1.append(employee.objectID) } else { sections.append((name, [employee.objectID])) }
        }
        return sections.map(\.1)
    }

    /// A one-to-one relationship the controller sorts through: renaming the related object moves
    /// its source, saved here or merged from another context's save, also when the related
    /// object was refreshed into a fault first.
    @Test(arguments: [false, true]) func aRefreshedOneToOneDestinationIsFollowed(refreshing: Bool) throws {
        let person = NSEntityDescription(name: "Person")
        let passport = NSEntityDescription(name: "Passport")
        let personPassport = NSRelationshipDescription(name: "passport", destination: passport)
        let passportPerson = NSRelationshipDescription(name: "holder", destination: person)
        personPassport.inverseRelationship = passportPerson
        passportPerson.inverseRelationship = personPassport
        person.properties = [NSAttributeDescription(name: "name", type: .stringAttributeType), personPassport]
        passport.properties = [NSAttributeDescription(name: "number", type: .stringAttributeType), passportPerson]
        let model = NSManagedObjectModel()
        model.entities = [person, passport]
        let (coordinator, _) = try TestSupport.coordinator(model)
        let context = TestSupport.context(coordinator)
        var passports: [NSManagedObject] = []
        for (name, number) in [("Ann", "C3"), ("Bob", "A1"), ("Cy", "B2")] {
            let holder = NSEntityDescription.insertNewObject(forEntityName: "Person", into: context)
            holder.setValue(name, forKey: "name")
            let document = NSEntityDescription.insertNewObject(forEntityName: "Passport", into: context)
            document.setValue(number, forKey: "number")
            document.setValue(holder, forKey: "holder")
            passports.append(document)
        }
        try context.save()
        let request = NSFetchRequest<NSManagedObject>(entityName: "Person")
        request.sortDescriptors = [NSSortDescriptor(key: "passport.number", ascending: true)]
        let (controller, table) = try tracked(request, in: context, sectionNameKeyPath: nil)
        #expect(controller.fetchedObjects?.map { $0.value(forKey: "name") as? String } == ["Bob", "Cy", "Ann"])
        if refreshing {
            context.refresh(passports[0], mergeChanges: false)
            context.processPendingChanges()
            #expect(passports[0].isFault)
        }
        passports[0].setValue("A0", forKey: "number")
        try context.save()
        #expect(controller.fetchedObjects?.map { $0.value(forKey: "name") as? String } == ["Ann", "Bob", "Cy"])
        // The same through another context's save, merged here, onto a faulted passport.
        if refreshing {
            context.refresh(passports[2], mergeChanges: false)
            context.processPendingChanges()
        }
        let other = TestSupport.context(coordinator)
        let token = NotificationCenter.default.addObserver(forName: .NSManagedObjectContextDidSave, object: other, queue: nil) { note in
            context.mergeChanges(fromContextDidSave: note)
        }
        defer { NotificationCenter.default.removeObserver(token) }
        other.object(with: passports[2].objectID).setValue("0", forKey: "number")
        try other.save()
        #expect(controller.fetchedObjects?.map { $0.value(forKey: "name") as? String } == ["Cy", "Ann", "Bob"])
        #expect(table.failures.isEmpty, "\(table.failures)")
    }

    @Test func renamingADepartmentMovesItsEmployees() throws {
        let (context, departments) = try company()
        let request = NSFetchRequest<NSManagedObject>(entityName: "Employee")
        request.sortDescriptors = [NSSortDescriptor(key: "department.name", ascending: true), NSSortDescriptor(key: "name", ascending: true)]
        let (controller, table) = try tracked(request, in: context, sectionNameKeyPath: "department.name")
        #expect(controller.sections?.map(\.name) == ["Engineering", "Marketing", "Sales"])
        departments[0].setValue("Zoology", forKey: "name")
        try context.save()
        #expect(controller.sections?.map(\.name) == ["Marketing", "Sales", "Zoology"])
        #expect(table.failures.isEmpty, "\(table.failures)")
        let fresh = try freshSections(context, request)
        #expect(table.sections.map { $0.rows.map(\.objectID) } == fresh)
        #expect(table.log.contains { $0.hasPrefix("section insert") } && table.log.contains { $0.hasPrefix("section delete") })
    }

    @Test func renamingADepartmentChangesWhoMatches() throws {
        let (context, departments) = try company()
        let request = NSFetchRequest<NSManagedObject>(entityName: "Employee")
        request.predicate = NSPredicate(format: "department.name == %@", "Sales")
        request.sortDescriptors = [NSSortDescriptor(key: "name", ascending: true)]
        let (controller, table) = try tracked(request, in: context, sectionNameKeyPath: nil)
        #expect(controller.fetchedObjects?.count == 3)
        departments[2].setValue("Former Sales", forKey: "name")
        departments[1].setValue("Sales", forKey: "name")
        try context.save()
        #expect(controller.fetchedObjects?.compactMap { $0.value(forKey: "name") as? String } == ["M0", "M1", "M2"])
        #expect(table.failures.isEmpty, "\(table.failures)")
        #expect(table.sections.first?.rows.map(\.objectID) == controller.fetchedObjects?.map(\.objectID))
    }
}

/// Beyond Apple: `fetchLimit` holds while tracking; objects past the limit move up.
@Suite struct FetchLimitTrackingTests {
    @Test func theWindowStaysFull() throws {
        let (coordinator, _) = try TestSupport.coordinator(TestSupport.makeCompanyModel())
        let context = TestSupport.context(coordinator)
        for index in 0..<10 {
            NSEntityDescription.insertNewObject(forEntityName: "Employee", into: context).setValue(String(format: "E%02d", index), forKey: "name")
        }
        try context.save()
        let request = NSFetchRequest<NSManagedObject>(entityName: "Employee")
        request.sortDescriptors = [NSSortDescriptor(key: "name", ascending: true)]
        request.fetchLimit = 3
        let (controller, table) = try tracked(request, in: context, sectionNameKeyPath: nil)
        let names = { controller.fetchedObjects?.compactMap { $0.value(forKey: "name") as? String } }
        #expect(names() == ["E00", "E01", "E02"])
        let first = try #require(controller.fetchedObjects?.first)
        context.delete(first)
        try context.save()
        #expect(names() == ["E01", "E02", "E03"], "E03 moves up into the window")
        NSEntityDescription.insertNewObject(forEntityName: "Employee", into: context).setValue("A", forKey: "name")
        try context.save()
        #expect(names() == ["A", "E01", "E02"], "the window never grows past the limit")
        #expect(table.failures.isEmpty, "\(table.failures)")
        #expect(table.sections.first?.rows.map(\.objectID) == controller.fetchedObjects?.map(\.objectID))
    }
}

/// The Failed Banks list sorted by closing date with a batch size of 20: the controller's fetch
/// reads the IDs with their section names and sort values in one query, and rows load twenty at a time.
@Suite struct BatchedControllerTests {
    @Test func failedBanksLoadTwentyAtATime() throws {
        let url = TestSupport.temporaryDirectory().appendingPathComponent("FailedBanksCD.sqlite")
        try FileManager.default.copyItem(at: TestSupport.fixtures.appendingPathComponent("failedbanks/FailedBanksCD.sqlite"), to: url)
        let (coordinator, _) = try TestSupport.coordinator(try TestSupport.model("failedbanks", "FailedBanksCD"), url: url)
        let context = TestSupport.context(coordinator)
        let request = NSFetchRequest<NSManagedObject>(entityName: "FailedBankInfo")
        request.sortDescriptors = [NSSortDescriptor(key: "state", ascending: true), NSSortDescriptor(key: "details.closeDate", ascending: false), NSSortDescriptor(key: "name", ascending: true)]
        request.fetchBatchSize = 20
        let controller = NSFetchedResultsController(fetchRequest: request, managedObjectContext: context, sectionNameKeyPath: "state", cacheName: nil)
        let (_, fetchLog) = try SQLDebugLog.capturing { try controller.performFetch() }
        let statements = fetchLog.filter { $0.hasPrefix("sql: ") }
        #expect(statements.count == 1, "one query of IDs, sort values and section names, no rows: \(statements)")
        #expect(statements.first?.contains("t0.ZSTATE") == true && statements.first?.contains("t0.ZNAME") == true, "\(statements)")
        #expect((controller.fetchedObjects ?? []).allSatisfy { $0.isFault })
        #expect(controller.fetchedObjects?.count == 233)
        #expect((controller.sections?.count ?? 0) > 20)
        let (_, readLog) = SQLDebugLog.capturing { _ = controller.object(at: IndexPath(row: 0, section: 0)).value(forKey: "name") }
        #expect(readLog.contains { $0.hasSuffix("for 20 rows.") }, "\(readLog)")
        let plain = NSFetchRequest<NSManagedObject>(entityName: "FailedBankInfo")
        plain.sortDescriptors = request.sortDescriptors
        let expected = try TestSupport.context(coordinator).fetch(plain).map { $0.value(forKey: "state") as? String ?? "" }
        var runs: [String] = []
        for state in expected where runs.last != state { runs.append(state) }
        #expect(controller.sections?.map(\.name) == runs)
    }
}
