import Foundation
import OpenCoreData
import Testing
@testable import OpenCoreDataPostgreSQL

/// The generated predicates and sort descriptors of `DifferentialTests`, run through the
/// PostgreSQL store and the in-memory store: the same objects in the same order, or a failure.
///
/// `OPENCOREDATA_DIFFERENTIAL_COUNT` raises the number of predicates (default 300 here).
@Suite(.enabled(if: PostgreSQLTestServer.isAvailable, PostgreSQLTestServer.skipReason))
struct PostgreSQLDifferentialTests {
    @Test func postgreSQLAndMemoryAgree() throws {
        let database = PostgreSQLStoreTests.Database()
        let model = DifferentialTests.model()
        let server = try database.context(model)
        let (memory, _) = try TestSupport.coordinator(model, type: NSInMemoryStoreType)
        let memoryContext = TestSupport.context(memory)
        try server.performAndWait { try DifferentialTests.populate(server) }
        try DifferentialTests.populate(memoryContext)
        let count = Int(ProcessInfo.processInfo.environment["OPENCOREDATA_DIFFERENTIAL_COUNT"] ?? "") ?? 300
        let (mismatches, nonEmpty) = try DifferentialTests.compare(count: count, ("PostgreSQL", server), ("memory", memoryContext))
        #expect(mismatches.isEmpty, "\(mismatches.joined(separator: "\n"))")
        #expect(nonEmpty > count / 4, "the generated predicates select something")
    }
}
