import Foundation
import OpenCoreData
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

    @Test func renamingADepartmentMovesItsEmployees() throws {
        let (context, departments) = try company()
        let request = NSFetchRequest<NSManagedObject>(entityName: "Employee")
        request.sortDescriptors = [NSSortDescriptor(key: "department.name", ascending: true), NSSortDescriptor(key: "name", ascending: true)]
        let controller = NSFetchedResultsController(fetchRequest: request, managedObjectContext: context, sectionNameKeyPath: "department.name", cacheName: nil)
        let table = TestTableView()
        controller.delegate = table
        try controller.performFetch()
        table.reload(from: controller)
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
        let controller = NSFetchedResultsController(fetchRequest: request, managedObjectContext: context, sectionNameKeyPath: nil, cacheName: nil)
        let table = TestTableView()
        controller.delegate = table
        try controller.performFetch()
        table.reload(from: controller)
        #expect(controller.fetchedObjects?.count == 3)
        departments[2].setValue("Former Sales", forKey: "name")
        departments[1].setValue("Sales", forKey: "name")
        try context.save()
        #expect(controller.fetchedObjects?.compactMap { $0.value(forKey: "name") as? String } == ["M0", "M1", "M2"])
        #expect(table.failures.isEmpty, "\(table.failures)")
        #expect(table.sections.first?.rows.map(\.objectID) == controller.fetchedObjects?.map(\.objectID))
    }
}
