import Foundation
import OpenCoreData
import OpenCoreDataTestKit
import Testing

@Suite struct SmokeTests {
    @Test func insertSaveFetch() throws {
        let (coordinator, _) = try TestSupport.coordinator(TestSupport.makeCompanyModel())
        let context = TestSupport.context(coordinator)
        let department = NSEntityDescription.insertNewObject(forEntityName: "Department", into: context)
        department.setValue("R&D", forKey: "name")
        for index in 0..<3 {
            let employee = NSEntityDescription.insertNewObject(forEntityName: "Employee", into: context)
            employee.setValue("E\(index)", forKey: "name")
            employee.setValue(Int64(index * 100), forKey: "salary")
            employee.setValue(department, forKey: "department")
        }
        try context.save()
        let other = TestSupport.context(coordinator)
        let request = NSFetchRequest<NSManagedObject>(entityName: "Employee")
        request.predicate = NSPredicate(format: "salary >= %@ AND department.name == %@", 100, "R&D")
        request.sortDescriptors = [NSSortDescriptor(key: "name", ascending: false)]
        let results = try other.fetch(request)
        #expect(results.map { $0.value(forKey: "name") as? String } == ["E2", "E1"])
        #expect((results[0].value(forKey: "department") as? NSManagedObject)?.value(forKey: "name") as? String == "R&D")
    }
}

/// The suite's own setup: its log handler is installed before any test runs.
@Suite struct TestSetupTests {
    @Test func logLinesAreKeptForTestsNotPrinted() {
        let start = TestLogging.count
        let marker = "test-logging-\(UUID().uuidString)"
        CoreDataLog.logger.error("\(marker)")
        #expect(TestLogging.lines(since: start).contains { $0.hasSuffix(marker) && $0.hasPrefix("error OpenCoreData") })
    }
}
