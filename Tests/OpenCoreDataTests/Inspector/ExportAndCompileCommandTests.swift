import Foundation
@testable import OCDInspectorKit
@testable import OpenCoreDataCore
import OpenCoreData
import Testing

@Suite("ocd export, compile and model-less commands")
struct ExportAndCompileCommandTests {
    /// A World Cup store (it keeps its model, as every store written here does) without the model.
    @Test("fetch, watch's model and export use the store's own model when --model is left out")
    func modelLessCommands() throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try Inspector.makeWorldCupStore(in: directory, teams: FetchCommandTests.teams)
        let before = try Data(contentsOf: store)
        let fetch = Inspector.run(["fetch", store.path, "--entity", "Team", "--predicate", "wins > 4", "--sort", "teamName", "--properties", "teamName"])
        #expect(fetch.status == 0, "\(fetch.errors)")
        #expect(fetch.output.contains("Brazil") && fetch.output.contains("Germany") && !fetch.output.contains("Spain"))

        let export = Inspector.run(["export", store.path])
        #expect(export.status == 0, "\(export.errors)")
        let json = try #require(try Inspector.json(export.output) as? [String: Any])
        let teams = try #require(json["Team"] as? [[String: Any]])
        #expect(teams.count == 6)
        #expect(Set(teams.compactMap { $0["teamName"] as? String }) == Set(FetchCommandTests.teams.map(\.0)))
        #expect(teams.allSatisfy { ($0["id"] as? String)?.hasPrefix("Team/p") == true })
        #expect(try Data(contentsOf: store) == before)
        #expect(try Inspector.listing(directory) == ["WorldCup.sqlite"])
    }

    @Test("a store that keeps no model asks for --model; info says whether a store keeps one")
    func noCachedModel() throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try Inspector.copyFailedBanksStore(into: directory)
        let run = Inspector.run(["export", store.path])
        #expect(run.status == 1)
        #expect(run.errors.contains("give --model"))
        #expect(Inspector.run(["info", store.path]).output.contains("Model cache  none"))
        let apple = Inspector.run(["info", Inspector.fixture("apple-files/bnr-testmodel/TestModel.sqlite"), "--json"])
        let info = try #require(try Inspector.json(apple.output) as? [String: Any])
        #expect(info["modelCache"] as? String == "2 entities, the model the store was written with")
    }

    /// The export's one-line JSON escapes what JSON requires and reads back exactly.
    @Test("compact JSON escapes quotes, backslashes and control characters")
    func compactJSON() throws {
        let tricky = "plain \"quoted\" back\\slash\nnew line\ttab \u{1} é ✓"
        let value = JSONValue.object([("s", .string(tricky)), ("n", .int(-3)), ("d", .double(1.5)), ("b", .bool(true)), ("z", .null),
                                      ("a", .array([.string("x"), .string("")]))])
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(value.compact().utf8)) as? [String: Any])
        #expect(parsed["s"] as? String == tricky)
        #expect((parsed["n"] as? NSNumber)?.intValue == -3)
        #expect(parsed["z"] is NSNull)
        #expect(parsed["a"] as? [String] == ["x", ""])
    }

    /// Numbers read from a property list print as numbers, Booleans as Booleans (`as Bool` takes
    /// any Foundation 0 or 1 for a Boolean on Linux).
    @Test("info --json prints metadata integers as integers")
    func metadataNumbers() throws {
        let plist = try PropertyListSerialization.data(fromPropertyList: ["one": 1, "yes": true, "half": 0.5] as [String: Any], format: .binary, options: 0)
        let metadata = try #require(try PropertyListSerialization.propertyList(from: plist, format: nil) as? [String: Any])
        #expect(JSONValue(metadata["one"]) == .int(1))
        #expect(JSONValue(metadata["yes"]) == .bool(true))
        #expect(JSONValue(metadata["half"]) == .double(0.5))
        #expect(JSONValue(NSNumber(value: 7)) == .int(7))

        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try Inspector.makeWorldCupStore(in: directory, teams: [("Brazil", "South America", 5)])
        var stored = try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: NSSQLiteStoreType, at: store)
        stored["Counter"] = 1
        try NSPersistentStoreCoordinator.setMetadata(stored, forPersistentStoreOfType: NSSQLiteStoreType, at: store)
        let output = Inspector.run(["info", store.path, "--json"]).output
        #expect(output.contains("\"Counter\" : 1"), "\(output)")
    }

    /// A directory or an empty file given as the store is a one-line error, the same from every
    /// command, never a crash.
    @Test("a directory or an empty file as the store is a one-line error")
    func directoryAndEmptyFile() throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let folder = directory.appendingPathComponent("Store.sqlite")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        let empty = directory.appendingPathComponent("Empty.sqlite")
        #expect(FileManager.default.createFile(atPath: empty.path, contents: Data()))
        let model = Inspector.worldCupModel
        for (path, expected) in [(folder.path, "is a directory, not a store file"), (empty.path, "is empty, so it holds no store")] {
            for arguments in [["info", path], ["fetch", path, "--model", model, "--entity", "Team"], ["export", path, "--model", model],
                              ["watch", path, "--model", model]] {
                let run = Inspector.run(arguments)
                #expect(run.status == 1, "\(arguments)")
                #expect(run.errors.contains(expected) && run.errors.contains("134000"), "\(arguments): \(run.errors)")
                #expect(run.errors.split(separator: "\n").count == 1, "\(arguments)")
            }
        }
        // Core Data's API gives the same answers.
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: try NSManagedObjectModel.load(contentsOf: URL(fileURLWithPath: model)))
        for url in [folder, empty] {
            let error = try #require(throws: NSError.self) {
                try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url, options: [NSReadOnlyPersistentStoreOption: true])
            }
            #expect(error.code == NSPersistentStoreInvalidTypeError)
        }
    }

    @Test("a negative --limit or --offset says what is wrong with it")
    func negativeLimit() throws {
        for option in ["--limit", "--offset"] {
            let run = Inspector.run(["fetch", "store.sqlite", "--model", Inspector.worldCupModel, "--entity", "Team", option, "-1"])
            #expect(run.status == 64)
            #expect(run.errors.contains("\(option) must be 0 or more"), "\(run.errors)")
        }
    }

    /// Export with --out: one file per entity, relationships as ids, JSON and CSV.
    @Test("--out writes one JSON or CSV file per entity, with relationships as ids")
    func exportFiles() throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try Inspector.copyFailedBanksStore(into: directory)
        let model = Inspector.fixture("failedbanks/FailedBanksCD.xcdatamodeld")
        let out = directory.appendingPathComponent("json")
        let run = Inspector.run(["export", store.path, "--model", model, "--out", out.path, "--page-size", "50"])
        #expect(run.status == 0, "\(run.errors)")
        #expect(try Inspector.listing(out) == ["FailedBankDetails.json", "FailedBankInfo.json"])
        let banks = try #require(try Inspector.json(String(contentsOf: out.appendingPathComponent("FailedBankInfo.json"), encoding: .utf8)) as? [[String: Any]])
        #expect(banks.count == 233)
        #expect(Set(banks.compactMap { $0["id"] as? String }).count == 233, "every bank once across pages")
        let desert = try #require(banks.first { $0["name"] as? String == "Desert Hills Bank" })
        #expect(desert["details"] as? String == "FailedBankDetails/p1")

        let csv = directory.appendingPathComponent("csv")
        #expect(Inspector.run(["export", store.path, "--model", model, "--csv", "--out", csv.path]).status == 0)
        let lines = try String(contentsOf: csv.appendingPathComponent("FailedBankDetails.csv"), encoding: .utf8).split(whereSeparator: \.isNewline)
        #expect(lines.first == "id,closeDate,updatedDate,zip,info")
        #expect(lines.count == 234)
        #expect(lines.contains { $0.hasPrefix("FailedBankDetails/p1,2010-03-26T00:00:00Z,") && $0.hasSuffix(",57060,FailedBankInfo/p1") })
    }

    /// `ocd compile` writes what Xcode's compiler wrote for the SwiftGen model: the same
    /// VersionInfo.plist (plus the version checksums later Xcodes add) and, per version, a .mom
    /// that decodes to the same tree.
    @Test("compile writes Xcode's .momd for the SwiftGen model")
    func compile() throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let output = directory.appendingPathComponent("Model.momd")
        let run = Inspector.run(["compile", TestSupport.modelURL("swiftgen-kitchensink", "Model").path, "-o", output.path])
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.output.contains("Compiled 2 versions (current: Model 2)"))
        let xcode = TestSupport.fixtures.appendingPathComponent("apple-files/swiftgen-momd/Model.momd")
        #expect(try Inspector.listing(output) == ["Model 2.mom", "Model.mom", "VersionInfo.plist"])
        func info(_ folder: URL) throws -> NSDictionary {
            try #require(try PropertyListSerialization.propertyList(from: Data(contentsOf: folder.appendingPathComponent("VersionInfo.plist")), format: nil) as? NSDictionary)
        }
        // Recent Xcode also records each version's checksum; the older Xcode that compiled
        // the fixture did not.
        let ours = try info(output).mutableCopy() as! NSMutableDictionary
        let checksums = try #require(ours["NSManagedObjectModel_VersionChecksums"] as? [String: String])
        for version in ["Model", "Model 2"] {
            let source = try NSManagedObjectModel.load(contentsOf: TestSupport.modelURL("swiftgen-kitchensink", "Model").appendingPathComponent("\(version).xcdatamodel"))
            #expect(checksums[version] == source.versionChecksum, "\(version)")
        }
        #expect(try NSManagedObjectModel.checksumsForVersionedModel(at: output) == checksums)
        ours.removeObject(forKey: "NSManagedObjectModel_VersionChecksums")
        #expect(try ours == info(xcode))
        for version in ["Model", "Model 2"] {
            let ours = try ModelCompilerTests.tree(Array(Data(contentsOf: output.appendingPathComponent("\(version).mom"))))
            let theirs = try ModelCompilerTests.tree(Array(Data(contentsOf: xcode.appendingPathComponent("\(version).mom"))))
            #expect(ours == theirs, "\(version)")
        }
        let model = Inspector.run(["model", output.path])
        #expect(model.status == 0)
        #expect(model.output.contains("version hash: 28IBwaJrLo9rgTC27Y9wg+iCKdtMHRtz2LzKq0hALRI="), "Xcode's hash for AbstractEntity")
        #expect(Inspector.run(["compile", directory.appendingPathComponent("Missing.xcdatamodeld").path]).status == 1)
    }
}

@Suite("Predicate errors users see")
struct PredicateErrorMessageTests {
    /// A MATCHES pattern that is not a regular expression is an error, not an empty result.
    @Test func anInvalidRegularExpressionIsAnError() throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try Inspector.makeWorldCupStore(in: directory, teams: [("Brazil", "South America", 5)])
        let run = Inspector.run(["fetch", store.path, "--entity", "Team", "--predicate", "teamName MATCHES '(unclosed'"])
        #expect(run.status == 1)
        #expect(run.errors.contains("is not a valid regular expression"), "\(run.errors)")
        let valid = Inspector.run(["fetch", store.path, "--entity", "Team", "--predicate", "teamName MATCHES 'Bra.*'"])
        #expect(valid.status == 0 && valid.output.contains("Brazil"))
    }

    /// An OR of 1,000 equalities on one key runs (as one IN), with the rows the evaluator picks.
    @Test func aThousandOrTermsRun() throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let teams = (0..<50).map { ("Team \($0)", "Zone", Int32($0)) }
        let store = try Inspector.makeWorldCupStore(in: directory, teams: teams)
        let format = (0..<1_000).map { "teamName == 'Team \($0 * 7)'" }.joined(separator: " OR ")
        let run = Inspector.run(["fetch", store.path, "--entity", "Team", "--predicate", format, "--properties", "teamName", "--json"])
        #expect(run.status == 0, "\(run.errors.prefix(300))")
        let rows = try #require(try Inspector.json(run.output) as? [[String: Any]])
        #expect(Set(rows.compactMap { $0["teamName"] as? String }) == Set((0..<50).filter { $0 % 7 == 0 }.map { "Team \($0)" }))
        let mixed = (0..<20).map { "teamName == 'Team \($0)'" }.joined(separator: " OR ") + " OR wins == 49"
        let mixedRun = Inspector.run(["fetch", store.path, "--entity", "Team", "--predicate", mixed, "--properties", "teamName", "--json"])
        #expect((try Inspector.json(mixedRun.output) as? [[String: Any]])?.count == 21, "terms on two keys compile as written")
        // 1,000 terms over different keys, ORed and ANDed: deeper than SQLite's expression limit
        // written flat, they run grouped in halves, with the rows the evaluator picks.
        let spread = (0..<1_000).map { $0 % 2 == 0 ? "teamName == 'Team \($0 * 3)'" : "wins == \($0 * 3)" }.joined(separator: " OR ")
        let spreadRun = Inspector.run(["fetch", store.path, "--entity", "Team", "--predicate", spread, "--properties", "teamName", "--json"])
        #expect(spreadRun.status == 0, "\(spreadRun.errors.prefix(300))")
        let expected = Set((0..<50).filter { $0 % 3 == 0 }.map { "Team \($0)" })
        #expect(Set(((try? Inspector.json(spreadRun.output)) as? [[String: Any]] ?? []).compactMap { $0["teamName"] as? String }) == expected)
        let all = (0..<1_000).map { $0 % 2 == 0 ? "wins >= 0" : "teamName != 'None'" }.joined(separator: " AND ")
        let allRun = Inspector.run(["fetch", store.path, "--entity", "Team", "--predicate", all, "--properties", "teamName", "--json"])
        #expect(((try? Inspector.json(allRun.output)) as? [[String: Any]])?.count == 50, "\(allRun.errors.prefix(300))")
    }

    /// The message of a huge malformed format quotes only the part around the problem.
    @Test func aHugeFormatIsCutInTheMessage() {
        let format = String(repeating: "(", count: 100_000) + "a == 1"
        let predicate = NSPredicate(format: format)
        let error = predicate.formatError
        #expect(error != nil)
        let message = error?.description ?? ""
        #expect(message.count < 600, "\(message.count) characters")
        #expect(message.contains("(100006 characters)"))
        #expect((error as NSError?)?.userInfo[PredicateFormatError.formatUserInfoKey] as? String == format)
    }
}
