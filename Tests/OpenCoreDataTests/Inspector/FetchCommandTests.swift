import Foundation
import OpenCoreData
import Testing

@Suite("ocd fetch")
struct FetchCommandTests {
    static let teams: [(String, String, Int32)] = [
        ("Brazil", "South America", 5), ("Spain", "Europe", 4), ("Germany", "Europe", 6),
        ("Japan", "Asia", 1), ("Chile", "South America", 4), ("Ghana", "Africa", 2),
    ]

    @Test("predicate, several sort keys and a limit, as a table")
    func table() throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try Inspector.makeWorldCupStore(in: directory, teams: Self.teams)
        let before = try Data(contentsOf: store)
        let run = Inspector.run(["fetch", store.path, "--model", Inspector.worldCupModel, "--entity", "Team",
                                 "--predicate", "wins > 3", "--sort", "wins:desc", "--sort", "teamName", "--limit", "3",
                                 "--properties", "teamName,wins"])
        #expect(run.status == 0)
        #expect(run.errors.isEmpty)
        let lines = run.output.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        #expect(lines == [["teamName", "wins"], ["Germany", "6"], ["Brazil", "5"], ["Chile", "4"], ["(3", "objects)"]])
        #expect(try Data(contentsOf: store) == before)
        #expect(try Inspector.listing(directory) == ["WorldCup.sqlite"])
    }

    @Test("--json and --csv print every attribute by default")
    func jsonAndCSV() throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try Inspector.makeWorldCupStore(in: directory, teams: Self.teams)
        let arguments = ["fetch", store.path, "--model", Inspector.worldCupModel, "--entity", "Team",
                         "--predicate", "qualifyingZone == 'Europe'", "--sort", "teamName:asc"]
        let json = Inspector.run(arguments + ["--json"])
        #expect(json.status == 0)
        let objects = try #require(try Inspector.json(json.output) as? [[String: Any]])
        #expect(objects.map { $0["teamName"] as? String } == ["Germany", "Spain"])
        #expect(objects.map { ($0["wins"] as? NSNumber)?.intValue } == [6, 4])
        #expect(Set(objects[0].keys) == ["imageName", "losses", "qualifyingZone", "teamName", "wins"])
        #expect(objects[0]["imageName"] is NSNull)

        let csv = Inspector.run(arguments + ["--csv", "--properties", "teamName,qualifyingZone,wins"])
        #expect(csv.status == 0)
        #expect(csv.output == "teamName,qualifyingZone,wins\r\nGermany,Europe,6\r\nSpain,Europe,4\r\n")
    }

    @Test("sorts and prints through a to-one relationship of the Apple-written store")
    func keyPathThroughRelationship() throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try Inspector.copyFailedBanksStore(into: directory)
        let before = try Data(contentsOf: store)
        let run = Inspector.run(["fetch", store.path, "--model", Inspector.fixture("failedbanks/FailedBanksCD.xcdatamodeld"),
                                 "--entity", "FailedBankDetails", "--predicate", "info.state == 'GA'",
                                 "--sort", "info.name:desc", "--limit", "2", "--properties", "info.name,info.state,zip", "--json"])
        #expect(run.status == 0, "\(run.errors)")
        let objects = try #require(try Inspector.json(run.output) as? [[String: Any]])
        #expect(objects.count == 2)
        #expect(objects.allSatisfy { $0["info.state"] as? String == "GA" })
        let names = objects.compactMap { $0["info.name"] as? String }
        #expect(names == names.sorted(by: >) && names.count == 2)
        #expect(try Data(contentsOf: store) == before)
        #expect(try Inspector.listing(directory) == ["FailedBanksCD.sqlite"])
    }

    @Test("a bad predicate, an unknown sort key or entity, a wrong model and a non-SQLite file are one-line errors")
    func errors() throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try Inspector.makeWorldCupStore(in: directory, teams: Self.teams)
        let base = ["fetch", store.path, "--model", Inspector.worldCupModel, "--entity", "Team"]

        let badPredicate = Inspector.run(base + ["--predicate", "wins >"])
        #expect(badPredicate.status == 1)
        #expect(badPredicate.output.isEmpty)
        #expect(badPredicate.errors.hasPrefix("ocd: error: invalid predicate \"wins >\""))
        #expect(badPredicate.errors.hasSuffix("(Core Data error 2048)\n"))

        let unknownKey = Inspector.run(base + ["--predicate", "goals > 3"])
        #expect(unknownKey.status == 1)
        #expect(unknownKey.errors.contains("goals"))

        let badSort = Inspector.run(base + ["--sort", "points:desc"])
        #expect(badSort.status == 1)
        #expect(badSort.errors.hasPrefix("ocd: error: --sort 'points': Team has no property 'points'"))

        let badEntity = Inspector.run(["fetch", store.path, "--model", Inspector.worldCupModel, "--entity", "Player"])
        #expect(badEntity.errors == "ocd: error: the model has no entity named 'Player' (its entities: Team)\n")

        let wrongModel = Inspector.run(["fetch", store.path, "--model", Inspector.fixture("dogwalk/DogWalk.xcdatamodeld"), "--entity", "Dog"])
        #expect(wrongModel.status == 1)
        #expect(wrongModel.errors.hasSuffix("(Core Data error 134100)\n"))

        let text = directory.appendingPathComponent("teams.txt")
        try Data("Brazil,5\n".utf8).write(to: text)
        let notSQLite = Inspector.run(["fetch", text.path, "--model", Inspector.worldCupModel, "--entity", "Team"])
        #expect(notSQLite.errors.hasSuffix("(Core Data error 134000)\n"))

        let both = Inspector.run(base + ["--json", "--csv"])
        #expect(both.status == 64)
        #expect(both.errors == "ocd: error: --json and --csv can't be used together (see 'ocd help')\n")

        for run in [badPredicate, unknownKey, badSort, badEntity, wrongModel, notSQLite] {
            #expect(run.errors.filter { $0 == "\n" }.count == 1)
        }
        #expect(try Inspector.listing(directory) == ["WorldCup.sqlite", "teams.txt"])
    }
}
