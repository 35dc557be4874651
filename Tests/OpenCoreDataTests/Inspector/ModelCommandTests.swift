import Foundation
import OpenCoreData
import Testing

@Suite("ocd model")
struct ModelCommandTests {
    @Test("lists entities, attributes with type, optionality and default, and version hashes")
    func worldCupText() throws {
        let run = Inspector.run(["model", Inspector.worldCupModel])
        #expect(run.status == 0)
        #expect(run.errors.isEmpty)
        let model = try NSManagedObjectModel.load(contentsOf: URL(fileURLWithPath: Inspector.worldCupModel))
        let hash = model.entitiesByName["Team"]!.versionHash.base64EncodedString()
        #expect(run.output.contains("Entity Team (class Team)"))
        #expect(run.output.contains("version hash: \(hash)"))
        let wins = run.output.split(separator: "\n").first { $0.contains("wins") }.map(String.init) ?? ""
        #expect(wins.contains("Integer 32") && wins.contains("optional") && wins.contains("default 0"))
    }

    @Test("shows parents, abstract entities, relationships, templates and configurations of the kitchen-sink model")
    func kitchenSinkText() throws {
        let run = Inspector.run(["model", Inspector.fixture("swiftgen-kitchensink/Model.xcdatamodeld")])
        #expect(run.status == 0)
        #expect(run.output.contains("Entity AbstractEntity (class AbstractEntity, abstract)"))
        #expect(run.output.contains("Entity ChildEntity (class SwiftGen.ChildEntity, parent MainEntity)"))
        let oneToMany = run.output.split(separator: "\n").first { $0.contains("oneToMany") && $0.contains("-> SecondaryEntity") }.map(String.init) ?? ""
        #expect(oneToMany.contains("to-many, ordered") && oneToMany.contains("inverse oneToMany") && oneToMany.contains("delete rule Nullify"))
        #expect(run.output.contains("ObjectFetchRequest"))
        #expect(run.output.contains("uuid == $UUID"))
        #expect(run.output.contains("Configurations:"))
        #expect(run.output.split(separator: "\n").contains { $0.contains("Custom") && $0.contains("NewEntity") })
    }

    @Test("--json gives the same facts in machine-readable form")
    func json() throws {
        let run = Inspector.run(["model", "--json", Inspector.fixture("dogwalk/DogWalk.xcdatamodeld")])
        #expect(run.status == 0)
        let root = try #require(try Inspector.json(run.output) as? [String: Any])
        let entities = try #require(root["entities"] as? [[String: Any]])
        #expect(entities.compactMap { $0["name"] as? String } == ["Dog", "Walk"])
        let dog = entities[0]
        let walks = try #require((dog["relationships"] as? [[String: Any]])?.first)
        #expect(walks["name"] as? String == "walks")
        #expect(walks["destination"] as? String == "Walk")
        #expect(walks["toMany"] as? Bool == true)
        #expect(walks["ordered"] as? Bool == true)
        #expect(walks["inverse"] as? String == "dog")
        #expect(walks["deleteRule"] as? String == "Nullify")
        let model = try TestSupport.model("dogwalk", "DogWalk")
        #expect(dog["versionHash"] as? String == model.entitiesByName["Dog"]!.versionHash.base64EncodedString())
        let date = try #require((entities[1]["attributes"] as? [[String: Any]])?.first)
        #expect(date["type"] as? String == "Date")
        #expect(date["optional"] as? Bool == true)
        #expect(date["default"] is NSNull)
    }

    @Test("a missing model file and a broken model are one-line errors")
    func errors() throws {
        let missing = Inspector.run(["model", "/nonexistent/Model.xcdatamodeld"])
        #expect(missing.status == 1)
        #expect(missing.output.isEmpty)
        #expect(missing.errors == "ocd: error: no model at /nonexistent/Model.xcdatamodeld (Core Data error 260)\n")

        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let broken = directory.appendingPathComponent("contents")
        try Data("<model><entity name=\"A\"".utf8).write(to: broken)
        let run = Inspector.run(["model", broken.path])
        #expect(run.status == 1)
        #expect(run.errors.hasPrefix("ocd: error: "))
        #expect(run.errors.filter { $0 == "\n" }.count == 1)
    }
}
