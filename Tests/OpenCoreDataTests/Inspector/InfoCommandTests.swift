import Foundation
import GRDB
import OpenCoreData
import Testing

@Suite("ocd info")
struct InfoCommandTests {
    @Test("reads the Apple-written Failed Banks store without a model, leaving it byte for byte as it was")
    func appleStoreWithoutModel() throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try Inspector.copyFailedBanksStore(into: directory)
        let before = try Data(contentsOf: store)

        let run = Inspector.run(["info", store.path])
        #expect(run.status == 0)
        #expect(run.errors.isEmpty)
        let metadata = try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: NSSQLiteStoreType, at: store)
        let uuid = try #require(metadata[NSStoreUUIDKey] as? String)
        let header = run.output.split(separator: "\n").map { $0.split(separator: " ").joined(separator: " ") }
        #expect(header.contains("UUID \(uuid)"))
        #expect(header.contains("Type SQLite (rollback journal)"))
        #expect(header.contains("Model cache none (give --model to fetch or export)"))
        #expect(run.output.contains("NSPersistenceFrameworkVersion"))
        #expect(run.output.contains("NSStoreModelVersionHashes:"))
        let lines = run.output.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        #expect(lines.contains(["1", "FailedBankDetails", "-", "ZFAILEDBANKDETAILS", "233", "233"]))
        #expect(lines.contains(["2", "FailedBankInfo", "-", "ZFAILEDBANKINFO", "233", "233"]))

        #expect(try Data(contentsOf: store) == before)
        #expect(try Inspector.listing(directory) == ["FailedBanksCD.sqlite"])
    }

    @Test("--json gives metadata with base64 version hashes and the entity list")
    func json() throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try Inspector.copyFailedBanksStore(into: directory)
        let run = Inspector.run(["info", "--json", store.path])
        #expect(run.status == 0)
        let root = try #require(try Inspector.json(run.output) as? [String: Any])
        #expect(root["type"] as? String == "SQLite")
        let metadata = try #require(root["metadata"] as? [String: Any])
        #expect((metadata["NSPersistenceFrameworkVersion"] as? NSNumber)?.intValue == 320)
        let hashes = try #require(metadata["NSStoreModelVersionHashes"] as? [String: String])
        let stored = try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: NSSQLiteStoreType, at: store)[NSStoreModelVersionHashesKey] as? [String: Data]
        #expect(hashes["FailedBankInfo"] == stored?["FailedBankInfo"]?.base64EncodedString())
        let entities = try #require(root["entities"] as? [[String: Any]])
        #expect(entities.map { $0["name"] as? String } == ["FailedBankDetails", "FailedBankInfo"])
        #expect(entities.map { ($0["rows"] as? NSNumber)?.intValue } == [233, 233])
    }

    @Test("reads a WAL store written here, with and without a model, leaving no -wal or -shm file")
    func storeWrittenHere() throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try Inspector.makeWorldCupStore(in: directory, teams: [("Brazil", "South America", 5), ("Spain", "Europe", 4), ("Japan", "Asia", 1)])
        let before = try Data(contentsOf: store)
        let listing = try Inspector.listing(directory)
        #expect(listing == ["WorldCup.sqlite"])

        let plain = Inspector.run(["info", store.path])
        #expect(plain.status == 0)
        #expect(plain.output.split(separator: "\n").contains { $0.split(separator: " ").joined(separator: " ") == "Type SQLite (wal journal)" })
        #expect(plain.output.split(separator: "\n").contains { $0.split(separator: " ") == ["1", "Team", "-", "ZTEAM", "3", "3"] })

        let withModel = Inspector.run(["info", store.path, "--model", Inspector.worldCupModel])
        #expect(withModel.status == 0)
        #expect(withModel.output.contains("Version hashes  match the model"))
        #expect(withModel.output.split(separator: "\n").contains { $0.split(separator: " ") == ["Team", "-", "3"] })

        #expect(try Data(contentsOf: store) == before)
        #expect(try Inspector.listing(directory) == listing)
    }

    @Test("a missing file, a file that is not SQLite, and a SQLite file that is not a store are one-line errors")
    func errors() throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let missing = Inspector.run(["info", directory.appendingPathComponent("none.sqlite").path])
        #expect(missing.status == 1)
        #expect(missing.errors.hasSuffix("(Core Data error 260)\n"))

        let text = directory.appendingPathComponent("notes.sqlite")
        try Data("just some text, certainly not a database".utf8).write(to: text)
        let notSQLite = Inspector.run(["info", text.path])
        #expect(notSQLite.status == 1)
        #expect(notSQLite.output.isEmpty)
        #expect(notSQLite.errors.hasPrefix("ocd: error: The file at \(text.path) is not a SQLite database"))
        #expect(notSQLite.errors.hasSuffix("(Core Data error 134000)\n"))

        let plain = directory.appendingPathComponent("plain.sqlite")
        let database = try DatabaseQueue(path: plain.path)
        try database.write { try $0.execute(sql: "CREATE TABLE t(x)") }
        try database.close()
        let notStore = Inspector.run(["info", plain.path])
        #expect(notStore.status == 1)
        #expect(notStore.errors.contains("not a Core Data store"))
        #expect(notStore.errors.hasSuffix("(Core Data error 134000)\n"))
        #expect(notStore.errors.filter { $0 == "\n" }.count == 1)
    }

    @Test("a model that does not fit the store is error 134100")
    func wrongModel() throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try Inspector.copyFailedBanksStore(into: directory)
        let before = try Data(contentsOf: store)
        let run = Inspector.run(["info", store.path, "--model", Inspector.worldCupModel])
        #expect(run.status == 1)
        #expect(run.errors.hasSuffix("(Core Data error 134100)\n"))
        #expect(try Data(contentsOf: store) == before)
        #expect(try Inspector.listing(directory) == ["FailedBanksCD.sqlite"])
    }
}
