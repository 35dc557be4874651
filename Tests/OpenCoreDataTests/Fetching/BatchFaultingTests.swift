import Foundation
@testable import OpenCoreDataCore
import OpenCoreData
import Testing

/// `fetchBatchSize`: the fetch reads only IDs; rows load 20 at a time as objects are touched.
@Suite struct BatchFaultingTests {
    private func failedBanks() throws -> NSManagedObjectContext {
        let directory = TestSupport.temporaryDirectory()
        let url = directory.appendingPathComponent("FailedBanksCD.sqlite")
        try FileManager.default.copyItem(at: TestSupport.fixtures.appendingPathComponent("failedbanks/FailedBanksCD.sqlite"), to: url)
        let (coordinator, _) = try TestSupport.coordinator(try TestSupport.model("failedbanks", "FailedBanksCD"), url: url)
        return TestSupport.context(coordinator)
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
