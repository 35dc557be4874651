import ArgumentParser
import Foundation
import OpenCoreData

/// The store argument and `--model` option shared by `fetch`, `export`, `import` and `watch`.
struct StoreAndModelOptions: ParsableArguments {
    @Argument(help: "The store file.")
    var store: String

    @Option(help: "The model (.xcdatamodeld, .xcdatamodel, contents, .momd or .mom); without it, the model the store keeps of itself.")
    var model: String?

    /// The store's URL.
    var storeURL: URL { URL(fileURLWithPath: store) }

    /// Loads the model given with `--model` (error 260 when it is missing), else the model the
    /// store keeps of itself (Core Data SQLite stores written since framework version 637).
    func loadModel() throws -> NSManagedObjectModel {
        if let model { return try ModelFile.load(URL(fileURLWithPath: model)) }
        guard FileManager.default.fileExists(atPath: storeURL.path) else {
            throw InspectorError("\(storeURL.path) does not exist, so it keeps no model: give --model", code: NSFileReadNoSuchFileError)
        }
        return try ModelFile.cachedModel(ofStore: storeURL)
    }
}
