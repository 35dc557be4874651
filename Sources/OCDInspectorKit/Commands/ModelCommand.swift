import ArgumentParser
import Foundation
import OpenCoreData

/// `ocd model <path>`: prints a model's entities, properties, fetch request templates,
/// configurations and version hashes.
struct ModelCommand: InspectorCommand {
    static let configuration = CommandConfiguration(
        commandName: "model",
        abstract: "Show the entities, properties, fetch request templates, configurations and version hashes of a model.",
        discussion: "PATH is a .xcdatamodeld bundle (its current version), a .xcdatamodel folder or its `contents` file."
    )

    @Argument(help: "The model: .xcdatamodeld, .xcdatamodel or contents file.")
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
    /// Loads a `.xcdatamodeld`, `.xcdatamodel` or `contents` file; a missing file is error 260.
    static func load(_ url: URL) throws -> NSManagedObjectModel {
        guard FileManager.default.fileExists(atPath: url.path) else { throw InspectorError.noSuchFile(url, what: "model") }
        return try NSManagedObjectModel.load(contentsOf: url)
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
