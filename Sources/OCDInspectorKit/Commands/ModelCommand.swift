import ArgumentParser
import Foundation
import OpenCoreData

/// `ocd model <path>`: prints a model's entities, properties, fetch request templates,
/// configurations and version hashes.
struct ModelCommand: InspectorCommand {
    static let configuration = CommandConfiguration(
        commandName: "model",
        abstract: "Show the entities, properties, fetch request templates, configurations and version hashes of a model.",
        discussion: """
            PATH is a .xcdatamodeld bundle (its current version), a .xcdatamodel folder or its `contents` file, \
            or a compiled model: a .momd folder (its current version) or a .mom file. The version hashes are \
            the ones Core Data records in stores and Xcode records in VersionInfo.plist.
            """
    )

    @Argument(help: "The model: .xcdatamodeld, .xcdatamodel, contents, .momd or .mom.")
    var path: String

    @Flag(help: "Print JSON instead of text.")
    var json = false

    func execute(on console: Console) throws {
        let url = URL(fileURLWithPath: path)
        let summary = ModelSummary(path: url.path, model: try ModelFile.load(url))
        console.write(json ? summary.json.prettyPrinted() + "\n" : summary.text)
    }
}

/// Loads the model files `ocd` is given.
enum ModelFile {
    /// Loads a `.xcdatamodeld`, `.xcdatamodel`, `contents`, `.momd` or `.mom`; a missing file is
    /// error 260.
    static func load(_ url: URL) throws -> NSManagedObjectModel {
        guard FileManager.default.fileExists(atPath: url.path) else { throw InspectorError.noSuchFile(url, what: "model") }
        return try NSManagedObjectModel.load(contentsOf: url)
    }

    /// The model a store keeps of itself; a store without one is an error that asks for --model.
    static func cachedModel(ofStore url: URL) throws -> NSManagedObjectModel {
        guard FileManager.default.fileExists(atPath: url.path) else { throw InspectorError.noSuchFile(url, what: "store") }
        do {
            return try NSManagedObjectModel.cachedModel(ofStoreAt: url)
        } catch let error as NSError where error.code == NSMigrationMissingSourceModelError {
            throw InspectorError("\(url.path) keeps no model of its own (Core Data writes one since iOS 11 and macOS 10.13): give --model")
        }
    }

    /// The entity named `name` in `model`, or an error that lists the model's entities.
    static func entity(named name: String, in model: NSManagedObjectModel) throws -> NSEntityDescription {
        guard let entity = model.entitiesByName[name] else {
            let known = model.entities.compactMap(\.name).sorted().joined(separator: ", ")
            throw InspectorError("the model has no entity named '\(name)' (its entities: \(known))")
        }
        return entity
    }
}
