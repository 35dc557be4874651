import ArgumentParser
import Foundation
import OpenCoreData

/// The store argument and `--model` option shared by `fetch`, `import` and `watch`.
struct StoreAndModelOptions: ParsableArguments {
    @Argument(help: "The store file.")
    var store: String

    @Option(help: "The model (.xcdatamodeld, .xcdatamodel or contents).")
    var model: String

    /// The store's URL.
    var storeURL: URL { URL(fileURLWithPath: store) }

    /// Loads the model (error 260 when it is missing).
    func loadModel() throws -> NSManagedObjectModel {
        try ModelFile.load(URL(fileURLWithPath: model))
    }
}
