import Foundation
import OpenCoreData
import Testing
@testable import OpenCoreDataPostgreSQL

/// Lightweight migration of a PostgreSQL store when it is added: the SQLite store's in-place
/// migration, in the server's transaction; a failed one leaves every table and row as they were.
@Suite(.enabled(if: PostgreSQLTestServer.isAvailable, PostgreSQLTestServer.skipReason))
struct PostgreSQLMigrationTests {
    /// A database holding `LightweightMigrationTests`' version-1 objects; the store's identifier.
    private func versionOneDatabase() throws -> (PostgreSQLStoreTests.Database, String?) {
        let database = PostgreSQLStoreTests.Database()
        let coordinator = try database.coordinator(LightweightMigrationTests.version1())
        try LightweightMigrationTests.fillVersion1(TestSupport.context(coordinator))
        let identifier = coordinator.persistentStores.first?.identifier
        for store in coordinator.persistentStores { try coordinator.remove(store) }
        return (database, identifier)
    }

    private var options: [AnyHashable: Any] {
        var options = LightweightMigrationTests.migrating
        options[OCDMigrationSourceModelsOptionKey] = [LightweightMigrationTests.version1()]
        return options
    }

    /// Every column of the schema's tables with its type, every table's row count and the metadata.
    private func snapshot(_ database: PostgreSQLStoreTests.Database) throws -> [String] {
        let connection = try PostgreSQLConnection.open(PostgreSQLTestServer.location())
        defer { connection.close() }
        try connection.run("SET search_path TO \(database.schema)", [])
        var lines: [String] = []
        var tables: Set<String> = []
        for row in try connection.run("SELECT table_name::text, column_name::text, data_type::text FROM information_schema.columns WHERE table_schema = $1 ORDER BY 1, 2", [.text(database.schema)]) {
            lines.append(row.map { "\($0)" }.joined(separator: " "))
            if case .text(let table) = row[0] { tables.insert(table) }
        }
        for table in tables.sorted() {
            lines.append("\(table): \(try connection.run("SELECT count(*) FROM \(table)", []).first?.first.map { "\($0)" } ?? "?") rows")
        }
        lines.append("\(try connection.run("SELECT Z_PLIST FROM Z_METADATA", []))")
        return lines
    }

    @Test func attributesEntitiesAndRelationshipsMigrateInPlace() throws {
        let (database, identifier) = try versionOneDatabase()
        let model = LightweightMigrationTests.version2()
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        let store = try coordinator.addPersistentStore(ofType: NSPostgreSQLStoreType, configurationName: nil, at: database.url, options: options)
        #expect(store.identifier == identifier, "the store keeps its identifier, so object URIs stay valid")
        try LightweightMigrationTests.checkVersion2(coordinator)
        #expect(model.isConfiguration(withName: nil, compatibleWithStoreMetadata: store.metadata))
        // Opened again by another server with the new version: nothing left to migrate.
        let again = try database.coordinator(model)
        #expect(try TestSupport.context(again).count(for: NSFetchRequest<NSManagedObject>(entityName: "Human")) == 21)
    }

    @Test func stagedMigrationIsRefusedWithEverythingLeftAsItWas() throws {
        let (database, _) = try versionOneDatabase()
        let before = try snapshot(database)
        let (v1, v2) = (LightweightMigrationTests.version1(), LightweightMigrationTests.version2())
        var staged = options
        staged[NSPersistentStoreStagedMigrationManagerOptionKey] = NSStagedMigrationManager([NSLightweightMigrationStage([v1.versionChecksum, v2.versionChecksum])])
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: v2)
        let error = try #require(throws: NSError.self) {
            try coordinator.addPersistentStore(ofType: NSPostgreSQLStoreType, configurationName: nil, at: database.url, options: staged)
        }
        #expect(error.code == NSMigrationError && error.localizedDescription.contains("staged migration runs on SQLite and binary stores"))
        #expect(try snapshot(database) == before)
    }

    @Test func aFailedMigrationLeavesEveryTableAndRowAsItWas() throws {
        let (database, _) = try versionOneDatabase()
        let before = try snapshot(database)
        func attempt(_ model: NSManagedObjectModel, _ options: [AnyHashable: Any]) -> NSError? {
            do {
                try NSPersistentStoreCoordinator(managedObjectModel: model).addPersistentStore(
                    ofType: NSPostgreSQLStoreType, configurationName: nil, at: database.url, options: options)
                return nil
            } catch {
                return error as NSError
            }
        }
        let required = attempt(LightweightMigrationTests.version2(cityDefault: nil), options)
        #expect(required?.code == NSMigrationError, "a required attribute with no default can't be filled for the people without a city")
        #expect((required?.userInfo[NSUnderlyingErrorKey] as? NSError)?.code == NSValidationMissingMandatoryPropertyError)
        #expect(try snapshot(database) == before)
        #expect(attempt(LightweightMigrationTests.version2(uniqueName: true), options)?.code == NSMigrationConstraintViolationError, "people share cities")
        #expect(try snapshot(database) == before)
        #expect(attempt(LightweightMigrationTests.version2(), LightweightMigrationTests.migrating)?.code == NSMigrationMissingSourceModelError)
        var noInference = options
        noInference[NSInferMappingModelAutomaticallyOption] = false
        #expect(attempt(LightweightMigrationTests.version2(), noInference)?.code == NSMigrationMissingMappingModelError)
        #expect(attempt(LightweightMigrationTests.version2(), [:])?.code == NSPersistentStoreIncompatibleVersionHashError)
        #expect(try snapshot(database) == before, "nothing was written by any attempt")
        #expect(attempt(LightweightMigrationTests.version2(), options) == nil, "and the store still migrates once the model is right")
        #expect(try snapshot(database) != before)
    }
}
