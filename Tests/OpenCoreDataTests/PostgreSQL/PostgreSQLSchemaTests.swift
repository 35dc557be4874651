import Foundation
import OpenCoreData
import OpenCoreDataCore
import PostgresNIO
import Testing
@testable import OpenCoreDataPostgreSQL

/// Core Data's layout written for PostgreSQL: the same tables and columns as in SQLite, with
/// PostgreSQL's types, created in a real server.
@Suite struct PostgreSQLSchemaTests {
    @Test(.enabled(if: PostgreSQLTestServer.isAvailable, PostgreSQLTestServer.skipReason))
    func theCompanyModelsLayoutIsCreatedWithEveryExpectedColumn() throws {
        let model = TestSupport.makeCompanyModel()
        _ = NSPersistentStoreCoordinator(managedObjectModel: model)  // Freezes the model.
        let schema = SQLiteSchema(entities: model.entities, storedNumbers: [:])
        let name = "layout_\(UUID().uuidString.prefix(8).lowercased())"
        let connection = try PostgreSQLConnection.open(PostgreSQLTestServer.location())
        defer {
            _ = try? connection.query("DROP SCHEMA \(name) CASCADE")
            connection.close()
        }
        try connection.query("CREATE SCHEMA \(name)")
        try connection.query("SET search_path TO \(name)")
        for statement in schema.createStatements(dialect: .postgreSQL) { try connection.query(statement) }

        var binds = PostgresBindings()
        binds.append(name)
        let rows = try connection.query("SELECT table_name, column_name, data_type FROM information_schema.columns WHERE table_schema = $1", binds)
        var created: [String: Set<String>] = [:]
        var types: [String: String] = [:]
        for row in rows {
            let (table, column, type) = try row.decode((String, String, String).self)
            created[table, default: []].insert(column)
            types["\(table).\(column)"] = type
        }
        for (table, columns) in schema.expectedColumns() {
            #expect(Set(columns.map { $0.lowercased() }).isSubset(of: created[table.lowercased()] ?? []), "\(table) lacks columns")
        }
        #expect(created["z_primarykey"] != nil && created["z_metadata"] != nil && created["z_modelcache"] != nil)
        #expect(types["zemployee.z_pk"] == "bigint")
        #expect(types["zemployee.zname"] == "text")
        #expect(types["zemployee.zhired"] == "double precision")
        #expect(types["zemployee.zphoto"] == "bytea")
        #expect(types["zemployee.zbadge"] == "uuid")
        #expect(types["zdepartment.zbudget"] == "numeric")
    }
}
