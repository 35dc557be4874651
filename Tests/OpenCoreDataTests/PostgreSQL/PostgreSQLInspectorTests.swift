import Foundation
import OpenCoreData
import Testing
@testable import OpenCoreDataPostgreSQL

/// `ocd info postgres://…`: a PostgreSQL store's metadata, entities, rows and keys, read without
/// changing anything, with or without the model.
@Suite(.enabled(if: PostgreSQLTestServer.isAvailable, PostgreSQLTestServer.skipReason))
struct PostgreSQLInspectorTests {
    @Test func infoReadsTheTablesWithoutAModel() throws {
        let database = PostgreSQLStoreTests.Database()
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: PostgreSQLStoreTests.model)
        try coordinator.addPersistentStore(ofType: NSPostgreSQLStoreType, configurationName: nil, at: database.url,
                                           options: [NSPersistentHistoryTrackingKey: true as NSNumber])
        let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        context.persistentStoreCoordinator = coordinator
        try PostgreSQLStoreTests.fill(context)
        let (employees, uuid) = try context.performAndWait {
            (try context.count(for: NSFetchRequest<NSManagedObject>(entityName: "Employee")), coordinator.persistentStores.first?.identifier)
        }

        let run = Inspector.run(["info", database.url.absoluteString])
        #expect(run.status == 0, "\(run.errors)")
        let header = run.output.split(separator: "\n").map { $0.split(separator: " ").joined(separator: " ") }
        #expect(header.contains("UUID \(uuid ?? "?")"))
        #expect(header.contains("Type PostgreSQL"))
        #expect(run.output.contains("NSStoreModelVersionHashes:"))
        let lines = run.output.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        let employee = try #require(lines.first { $0.count == 6 && $0[1] == "Employee" })
        // Direct instances only (managers are a subentity), keys from the hierarchy's sequence.
        let direct = try #require(Int(employee[4]))
        #expect(employee[3] == "ZEMPLOYEE" && direct > 0 && direct <= employees && (Int(employee[5]) ?? 0) >= employees, "\(employee)")
        #expect(lines.contains { $0.count == 6 && $0[0] == "16002" && $0[3] == "ATRANSACTION" }, "history's transactions")
        #expect(!run.output.contains(PostgreSQLTestServer.url?.password ?? "no password in the URL"), "the password is never printed")

        let json = Inspector.run(["info", "--json", database.url.absoluteString])
        let root = try #require(try Inspector.json(json.output) as? [String: Any])
        #expect(root["type"] as? String == "PostgreSQL" && root["uuid"] as? String == uuid)

    }

    @Test func infoWithTheModelCountsObjectsWhenTheHashesMatch() throws {
        let database = PostgreSQLStoreTests.Database()
        let modelFile = TestSupport.fixtures.appendingPathComponent("failedbanks/FailedBanksCD.xcdatamodeld")
        let coordinator = try database.coordinator(try TestSupport.model("failedbanks", "FailedBanksCD"))
        let context = TestSupport.context(coordinator)
        for index in 0..<3 {
            NSEntityDescription.insertNewObject(forEntityName: "FailedBankInfo", into: context).setValue("Bank \(index)", forKey: "name")
        }
        try context.save()
        let run = Inspector.run(["info", "--model", modelFile.path, database.url.absoluteString])
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.output.contains("match the model"))
        let counted = run.output.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        #expect(counted.contains(["FailedBankInfo", "-", "3"]), "\(run.output)")
        let other = Inspector.run(["info", "--model", modelFile.path, PostgreSQLStoreTests.Database().url.absoluteString])
        #expect(other.status != 0, "an empty schema holds no store")
    }

    @Test func aSchemaWithoutAStoreIsAClearErrorAndIsNotCreated() throws {
        let database = PostgreSQLStoreTests.Database()
        let run = Inspector.run(["info", database.url.absoluteString])
        #expect(run.status != 0)
        #expect(run.errors.contains("no Core Data store in schema \(database.schema)"), "\(run.errors)")
        let connection = try PostgreSQLConnection.open(PostgreSQLTestServer.location())
        defer { connection.close() }
        #expect(try connection.run("SELECT 1 FROM information_schema.schemata WHERE schema_name = $1", [.text(database.schema)]).isEmpty)
    }
}
