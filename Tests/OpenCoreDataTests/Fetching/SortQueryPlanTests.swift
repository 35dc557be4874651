import Foundation
import GRDB
@testable import OpenCoreDataCore
import OpenCoreData
import Testing

/// A sort through a to-one relationship must not lead SQLite to read the fetched table through
/// the relationship's index (one random page read a row): the primary-key tie-break is hidden
/// from the planner.
@Suite struct SortQueryPlanTests {
    @Test func aSortThroughAToOneScansTheTableInsteadOfItsForeignKeyIndex() throws {
        let (context, url) = try TestSupport.failedBanksCopy()
        let request = NSFetchRequest<NSManagedObject>(entityName: "FailedBankInfo")
        request.sortDescriptors = [NSSortDescriptor(key: "details.closeDate", ascending: false)]
        let (banks, log) = try SQLDebugLog.capturing { try context.fetch(request) }
        #expect(banks.count == 233)
        let sql = try #require(log.first { $0.hasPrefix("sql: ") && $0.contains("ORDER BY") }).dropFirst("sql: ".count)
        #expect(sql.hasSuffix("+t0.Z_PK"), "the tie-break: \(sql)")

        let queue = try DatabaseQueue(path: url.path)
        let indexes = try queue.read { try String.fetchAll($0, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'ZFAILEDBANKINFO'") }
        #expect(indexes.contains { $0.uppercased().contains("ZDETAILS") }, "the fixture has the foreign key's index: \(indexes)")
        let plan = try queue.read { try Row.fetchAll($0, sql: "EXPLAIN QUERY PLAN " + sql).map { $0["detail"] as String } }
        #expect(!plan.contains { $0.contains("USING INDEX") && $0.contains("t0") }, "\(plan)")
        // Without the unary plus SQLite takes the index: the test would catch the plan coming back.
        let plainPlan = try queue.read { try Row.fetchAll($0, sql: "EXPLAIN QUERY PLAN " + sql.replacingOccurrences(of: "+t0.Z_PK", with: "t0.Z_PK")).map { $0["detail"] as String } }
        #expect(plainPlan.contains { $0.contains("USING INDEX") && $0.contains("t0") }, "\(plainPlan)")
    }
}
