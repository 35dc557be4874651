import Foundation
import OpenCoreData
import Testing

@Suite("ocd import")
struct ImportCommandTests {
    @Test("imports the World Cup seed JSON into a new store, then fetch reads it back")
    func seedJSON() throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = directory.appendingPathComponent("WorldCup.sqlite")
        let run = Inspector.run(["import", store.path, "--model", Inspector.worldCupModel, "--entity", "Team",
                                 Inspector.fixture("worldcup/seed.json")])
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.output == "Imported 32 Team objects into \(store.path)\n")
        #expect(run.errors.hasSuffix("importing: 32/32\n"))
        #expect(!run.errors.contains("\r"))

        let fetch = Inspector.run(["fetch", store.path, "--model", Inspector.worldCupModel, "--entity", "Team",
                                   "--predicate", "qualifyingZone == 'Africa'", "--sort", "teamName", "--properties", "teamName", "--csv"])
        #expect(fetch.output == "teamName\r\nAlgeria\r\nCameroon\r\nGhana\r\nIvory Coast\r\nNigeria\r\n")
    }

    @Test("CSV with quoted fields converts strings to each attribute's type; a terminal gets a progress bar")
    func csvWithProgressBar() throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("teams.csv")
        try Data("teamName,qualifyingZone,wins,losses\r\n\"Korea, South\",Asia,3,1\r\n\"The \"\"Oranje\"\"\",Europe, 7 ,\n".utf8).write(to: file)
        let store = directory.appendingPathComponent("Teams.sqlite")
        let run = Inspector.run(["import", store.path, "--model", Inspector.worldCupModel, "--entity", "Team", file.path], terminal: true)
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.errors.contains("\rimporting [##############################] 100% 2/2"))

        let fetch = Inspector.run(["fetch", store.path, "--model", Inspector.worldCupModel, "--entity", "Team", "--sort", "wins", "--json"])
        let objects = try #require(try Inspector.json(fetch.output) as? [[String: Any]])
        #expect(objects.map { $0["teamName"] as? String } == ["Korea, South", "The \"Oranje\""])
        #expect(objects.map { ($0["wins"] as? NSNumber)?.intValue } == [3, 7])
        #expect((objects[0]["losses"] as? NSNumber)?.intValue == 1)
        #expect((objects[1]["losses"] as? NSNumber)?.intValue == 0, "an empty field keeps the default value")
    }

    @Test("imports the FDIC bank list CSV with renamed columns and a date format")
    func bankList() throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = directory.appendingPathComponent("Banks.sqlite")
        let model = Inspector.fixture("failedbanks/FailedBanksCD.xcdatamodeld")
        let run = Inspector.run(["import", store.path, "--model", model, "--entity", "FailedBankDetails",
                                 "--map", "Closing Date=closeDate", "--map", "Updated Date=updatedDate", "--ignore-unknown-columns",
                                 "--date-format", "d-MMM-yy", Inspector.fixture("failedbanks/banklist.csv")])
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.output.hasPrefix("Imported 233 FailedBankDetails objects"))
        let fetch = Inspector.run(["fetch", store.path, "--model", model, "--entity", "FailedBankDetails",
                                   "--sort", "closeDate:desc", "--limit", "1", "--properties", "closeDate", "--csv"])
        #expect(fetch.output == "closeDate\r\n2010-03-26T00:00:00Z\r\n")
    }

    @Test("a bad value names its record and line, and nothing is written")
    func badValue() throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("teams.csv")
        try Data("teamName,wins\nBrazil,5\nSpain,many\n".utf8).write(to: file)
        let newStore = directory.appendingPathComponent("New.sqlite")
        let run = Inspector.run(["import", newStore.path, "--model", Inspector.worldCupModel, "--entity", "Team", file.path])
        #expect(run.status == 1)
        #expect(run.errors == "ocd: error: record 2 (line 3), wins (Integer 32): 'many' is not an integer\n")
        #expect(!FileManager.default.fileExists(atPath: newStore.path))

        let tooBig = directory.appendingPathComponent("big.json")
        try Data(#"[{"teamName": "A", "wins": 1}, {"teamName": "B", "wins": 3000000000}]"#.utf8).write(to: tooBig)
        let overflow = Inspector.run(["import", newStore.path, "--model", Inspector.worldCupModel, "--entity", "Team", tooBig.path])
        #expect(overflow.errors == "ocd: error: record 2, wins (Integer 32): 3000000000 does not fit an Integer 32 attribute (-2147483648...2147483647)\n")

        let unknown = directory.appendingPathComponent("unknown.json")
        try Data(#"[{"teamName": "A", "goals": 1}]"#.utf8).write(to: unknown)
        let unknownRun = Inspector.run(["import", newStore.path, "--model", Inspector.worldCupModel, "--entity", "Team", unknown.path])
        #expect(unknownRun.errors.hasPrefix("ocd: error: record 1: Team has no attribute named 'goals'"))
        #expect(try Inspector.listing(directory) == ["big.json", "teams.csv", "unknown.json"])
    }

    @Test("an import into an existing store is all or nothing")
    func allOrNothing() throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try Inspector.makeWorldCupStore(in: directory, teams: [("Brazil", "South America", 5)])
        let before = try Data(contentsOf: store)
        let file = directory.appendingPathComponent("teams.json")
        try Data(#"[{"teamName": "Peru", "wins": 1}, {"teamName": "Chile", "wins": "x"}]"#.utf8).write(to: file)
        let run = Inspector.run(["import", store.path, "--model", Inspector.worldCupModel, "--entity", "Team", file.path])
        #expect(run.status == 1)
        #expect(try Data(contentsOf: store) == before)

        let valid = directory.appendingPathComponent("valid.json")
        try Data(#"[{"teamName": "Peru", "wins": 1}, {"teamName": "Chile", "wins": "2"}]"#.utf8).write(to: valid)
        #expect(Inspector.run(["import", store.path, "--model", Inspector.worldCupModel, "--entity", "Team", valid.path]).status == 0)
        let info = Inspector.run(["info", store.path, "--json"])
        let entities = try #require((try Inspector.json(info.output) as? [String: Any])?["entities"] as? [[String: Any]])
        #expect((entities.first?["rows"] as? NSNumber)?.intValue == 3)
    }

    @Test("a validation failure at save names the record and writes nothing")
    func validationAtSave() throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = directory.appendingPathComponent("contents")
        try Data("""
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0">
                <entity name="Reading" representedClassName="Reading" syncable="YES">
                    <attribute name="celsius" attributeType="Double" minValueString="-273.15" defaultValueString="0" usesScalarValueType="YES"/>
                    <attribute name="place" attributeType="String"/>
                </entity>
            </model>
            """.utf8).write(to: model)
        let file = directory.appendingPathComponent("readings.json")
        try Data(#"[{"place": "Oslo", "celsius": -3.5}, {"place": "Lab", "celsius": -300}]"#.utf8).write(to: file)
        let store = directory.appendingPathComponent("Readings.sqlite")
        let run = Inspector.run(["import", store.path, "--model", model.path, "--entity", "Reading", file.path])
        #expect(run.status == 1)
        let errorLine = run.errors.split(separator: "\n").last.map(String.init)
        #expect(errorLine == "ocd: error: record 2: celsius is below its minimum -273.15; nothing was imported (Core Data error 1620)")
        #expect(!FileManager.default.fileExists(atPath: store.path))

        let missing = directory.appendingPathComponent("missing.json")
        try Data(#"[{"celsius": 20}]"#.utf8).write(to: missing)
        let required = Inspector.run(["import", store.path, "--model", model.path, "--entity", "Reading", missing.path])
        #expect(required.errors == "ocd: error: record 1: place is required but has no value (Core Data error 1570)\n")
    }
}
