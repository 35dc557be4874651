import Foundation
@testable import OpenCoreDataCore
import OpenCoreData
import Testing

/// `fetchBatchSize`: the fetch reads only IDs; rows load 20 at a time as objects are touched.
@Suite struct BatchFaultingTests {
    private func failedBanks() throws -> NSManagedObjectContext {
        try TestSupport.failedBanksCopy().context
    }

    @Test func idsFirstThenBatchesOfTwenty() throws {
        let context = try failedBanks()
        let request = NSFetchRequest<NSManagedObject>(entityName: "FailedBankInfo")
        request.sortDescriptors = [NSSortDescriptor(key: "details.closeDate", ascending: false), NSSortDescriptor(key: "name", ascending: true)]
        request.fetchBatchSize = 20
        let (banks, fetchLog) = try SQLDebugLog.capturing { try context.fetch(request) }
        #expect(banks.count == 233)
        let fetchStatements = fetchLog.filter { $0.hasPrefix("sql: ") }
        #expect(fetchStatements.count == 1)
        #expect(fetchStatements[0].contains("SELECT t0.Z_PK, t0.Z_ENT, t0.Z_OPT FROM ZFAILEDBANKINFO"), "only the IDs: \(fetchStatements[0])")
        #expect(fetchLog.contains { $0.hasPrefix("total fetch execution time:") && $0.hasSuffix("for 233 rows.") })
        #expect(banks.allSatisfy { $0.isFault })

        // Reading the first row loads rows 0..<20 in one query; rows 1...19 need no further query.
        let (_, firstBatch) = SQLDebugLog.capturing {
            for bank in banks.prefix(20) { _ = bank.value(forKey: "name") }
        }
        #expect(firstBatch.filter { $0.hasPrefix("sql: ") }.count == 1)
        #expect(firstBatch.first?.contains("WHERE Z_PK IN (") == true)
        #expect(firstBatch.contains { $0.hasSuffix("for 20 rows.") })
        #expect(banks[20].isFault)
        let (_, secondBatch) = SQLDebugLog.capturing { _ = banks[25].value(forKey: "name") }
        #expect(secondBatch.contains { $0.hasSuffix("for 20 rows.") })
        #expect(!banks[39].isFault || banks[39].committedValues != nil)

        // The order is the sort's, and the values are the same as an ordinary fetch's.
        let plain = NSFetchRequest<NSManagedObject>(entityName: "FailedBankInfo")
        plain.sortDescriptors = request.sortDescriptors
        let other = TestSupport.context(context.persistentStoreCoordinator!)
        let expected = try other.fetch(plain).map { $0.value(forKey: "name") as? String }
        #expect(banks.map { $0.value(forKey: "name") as? String } == expected)
        let dates = banks.compactMap { $0.value(forKeyPath: "details.closeDate") as? Date }
        #expect(dates == dates.sorted(by: >))
    }

    @Test func batchSizeWithPendingChanges() throws {
        let context = try failedBanks()
        let bank = NSEntityDescription.insertNewObject(forEntityName: "FailedBankInfo", into: context)
        bank.setValue("0 First Bank", forKey: "name")
        let request = NSFetchRequest<NSManagedObject>(entityName: "FailedBankInfo")
        request.sortDescriptors = [NSSortDescriptor(key: "name", ascending: true)]
        request.fetchBatchSize = 10
        let banks = try context.fetch(request)
        #expect(banks.count == 234)
        #expect(banks.first === bank)
        #expect(banks[1].value(forKey: "name") as? String != nil)
    }
}

/// `relationshipKeyPathsForPrefetching`: one query per relationship, not one per object.
@Suite struct PrefetchingTests {
    @Test func toOneRelationshipsLoadInOneQuery() throws {
        let context = try TestSupport.failedBanksCopy().context
        let request = NSFetchRequest<NSManagedObject>(entityName: "FailedBankInfo")
        request.relationshipKeyPathsForPrefetching = ["details"]
        let (banks, fetchLog) = try SQLDebugLog.capturing { try context.fetch(request) }
        #expect(fetchLog.filter { $0.hasPrefix("sql: ") }.count == 2, "the fetch and one query for all details")
        let (zips, readLog) = SQLDebugLog.capturing { banks.compactMap { ($0.value(forKey: "details") as? NSManagedObject)?.value(forKey: "zip") as? Int32 } }
        #expect(zips.count == 233)
        #expect(readLog.filter { $0.hasPrefix("sql: ") }.isEmpty, "no query per object: \(readLog.prefix(3))")
    }

    @Test func toManyRelationshipsLoadInOneQuery() throws {
        let (coordinator, _) = try TestSupport.coordinator(TestSupport.makeCompanyModel())
        let context = TestSupport.context(coordinator)
        for index in 0..<5 {
            let department = NSEntityDescription.insertNewObject(forEntityName: "Department", into: context)
            department.setValue("D\(index)", forKey: "name")
            for person in 0..<index {
                let employee = NSEntityDescription.insertNewObject(forEntityName: "Employee", into: context)
                employee.setValue("E\(index)-\(person)", forKey: "name")
                employee.setValue(department, forKey: "department")
            }
        }
        try context.save()
        let fresh = TestSupport.context(coordinator)
        let request = NSFetchRequest<NSManagedObject>(entityName: "Department")
        request.sortDescriptors = [NSSortDescriptor(key: "name", ascending: true)]
        request.relationshipKeyPathsForPrefetching = ["employees"]
        let (departments, fetchLog) = try SQLDebugLog.capturing { try fresh.fetch(request) }
        #expect(fetchLog.filter { $0.hasPrefix("sql: ") }.count == 3, "the fetch, the members, their rows: \(fetchLog)")
        let (counts, readLog) = SQLDebugLog.capturing {
            departments.map { ($0.value(forKey: "employees") as? Set<NSManagedObject>)?.compactMap { $0.value(forKey: "name") as? String }.count ?? -1 }
        }
        #expect(counts == [0, 1, 2, 3, 4])
        #expect(readLog.filter { $0.hasPrefix("sql: ") }.isEmpty)
    }
}

/// Batch requests whose rows nothing points at run as one statement on the table.
@Suite struct BatchStatementTests {
    @Test func unreferencedRowsUpdateAndDeleteInPlace() throws {
        let (coordinator, _) = try TestSupport.coordinator(TestSupport.makeCompanyModel())
        let context = TestSupport.context(coordinator)
        for index in 0..<10 {
            NSEntityDescription.insertNewObject(forEntityName: "Team", into: context).setValue("T\(index)", forKey: "title")
        }
        let (_, saveLog) = try SQLDebugLog.capturing { try context.save() }
        #expect(saveLog.filter { $0.hasPrefix("sql: INSERT INTO ZTEAM") }.count == 10, "every statement of a save is logged")
        #expect(saveLog.contains { $0.hasPrefix("total save execution time:") })
        let update = NSBatchUpdateRequest(entityName: "Team")
        update.predicate = NSPredicate(format: "title IN %@", ["T1", "T2", "T3"])
        update.propertiesToUpdate = ["title": "renamed"]
        update.resultType = .updatedObjectsCountResultType
        let (updated, updateLog) = try SQLDebugLog.capturing { try context.execute(update) as? NSBatchUpdateResult }
        #expect(updated?.result as? Int == 3)
        #expect(updateLog.contains { $0.contains("UPDATE ZTEAM AS t0 SET") })
        let fetch = NSFetchRequest<NSFetchRequestResult>(entityName: "Team")
        fetch.predicate = NSPredicate(format: "title == 'renamed' OR title == 'T9'")
        let delete = NSBatchDeleteRequest(fetchRequest: fetch)
        delete.resultType = .resultTypeCount
        let (deleted, deleteLog) = try SQLDebugLog.capturing { try context.execute(delete) as? NSBatchDeleteResult }
        #expect(deleted?.result as? Int == 4)
        #expect(deleteLog.contains { $0.contains("DELETE FROM ZTEAM AS t0") })
        #expect(try context.count(for: NSFetchRequest<NSManagedObject>(entityName: "Team")) == 6)
    }
}

/// Fetch request templates from the model, with `$VARIABLE` substitution.
@Suite struct TemplateTests {
    @Test func templatesSubstituteVariables() throws {
        let (model, _, context) = try TestSupport.kitchenSink()
        let secondary = NSEntityDescription.insertNewObject(forEntityName: "SecondaryEntity", into: context)
        secondary.setValue("partner", forKey: "name")
        try context.save()
        let template = try #require(model.fetchRequestTemplate(forName: "ObjectIDFetchRequest"))
        #expect(template.predicate?.predicateFormat.contains("$NAME") == true)
        let request = try #require(model.fetchRequestFromTemplate(withName: "ObjectIDFetchRequest", substitutionVariables: ["NAME": "partner", "NEEDLE": "x"]))
        #expect(request.predicate?.predicateFormat.contains("$") == false)
        #expect(try context.fetch(request).isEmpty)
        #expect(model.fetchRequestFromTemplate(withName: "Nope", substitutionVariables: [:]) == nil)
        // A template run without its variables names the one that is missing.
        let error = try #require(throws: NSError.self) { try context.fetch(template) }
        #expect(error.localizedDescription.contains("$NAME") || error.localizedDescription.contains("$NEEDLE"))
    }
}
