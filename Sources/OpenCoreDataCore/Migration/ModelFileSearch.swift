import Foundation

/// Finds model versions and mapping models on disk, for migration.
///
/// Core Data searches the app's bundles. Here the search covers the given bundles' resource
/// folders (the main bundle and all loaded bundles by default) and, for a model loaded from an
/// Xcode file, the folder holding its `.xcdatamodeld`, where Xcode keeps mapping models too; a
/// Swift package's resources on Linux are not among `Bundle.allBundles`.
enum ModelFileSearch {
    /// The folders to search for the given bundles (nil: the main bundle and all loaded bundles).
    static func directories(of bundles: [Bundle]?) -> [URL] {
        let chosen = bundles ?? ([Bundle.main] + Bundle.allBundles)
        var seen = Set<String>()
        return chosen.compactMap { $0.resourceURL ?? $0.bundleURL }.filter { seen.insert($0.standardizedFileURL.path).inserted }
    }

    /// The folders to search for a model: its own folder first, then the default bundles.
    static func directories(near model: NSManagedObjectModel) -> [URL] {
        let own = model.versionBundleURL.map { [$0.deletingLastPathComponent()] } ?? []
        return own + directories(of: nil)
    }

    /// Files and folders with the extension under the directories, a few levels deep.
    static func items(withExtension pathExtension: String, in directories: [URL], depth: Int = 4) -> [URL] {
        var found: [URL] = []
        func visit(_ directory: URL, _ level: Int) {
            // Ignored: a folder that is missing or can't be listed holds no model files to find.
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return }
            for name in names.sorted() where !name.hasPrefix(".") {
                let url = directory.appendingPathComponent(name)
                if url.pathExtension == pathExtension {
                    found.append(url)
                } else if level < depth {
                    var isDirectory: ObjCBool = false
                    if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue,
                       !["xcdatamodeld", "xcdatamodel", "xcmappingmodel", "momd"].contains(url.pathExtension) {
                        visit(url, level + 1)
                    }
                }
            }
        }
        for directory in directories { visit(directory, 0) }
        return found
    }

    /// The mapping model made for these two models, if one is in the directories.
    static func mappingModel(in directories: [URL], from source: NSManagedObjectModel, to destination: NSManagedObjectModel) -> NSMappingModel? {
        for url in items(withExtension: "xcmappingmodel", in: directories) {
            let mapping: NSMappingModel
            do {
                mapping = try XcodeMappingModelLoader.load(from: url)
            } catch {
                CoreDataLog.logger.error("The mapping model at \(url.path) can't be loaded: \(error)")
                continue
            }
            guard mapping.matches(source: source, destination: destination) else { continue }
            return mapping
        }
        return nil
    }

    /// The versions of one `.xcdatamodeld` or `.momd`, in name order (none when it can't be read).
    static func versions(in bundle: URL) -> [NSManagedObjectModel] {
        let loaded: [String: NSManagedObjectModel]
        do {
            loaded = try bundle.pathExtension == "momd" ? CompiledModelLoader.loadAllVersions(in: bundle) : XcodeModelLoader.loadAllVersions(in: bundle)
        } catch {
            CoreDataLog.logger.error("The model versions in \(bundle.path) can't be loaded: \(error)")
            loaded = [:]
        }
        return loaded.sorted { $0.key < $1.key }.map(\.value)
    }

    /// The first model version in the directories (each version of each `.xcdatamodeld`, then of
    /// each `.momd`) that `isWanted` accepts; bundles after the first match are not read.
    static func version(in directories: [URL], where isWanted: (NSManagedObjectModel) -> Bool) -> NSManagedObjectModel? {
        for bundle in items(withExtension: "xcdatamodeld", in: directories) + items(withExtension: "momd", in: directories) {
            if let found = versions(in: bundle).first(where: isWanted) { return found }
        }
        return nil
    }

    /// The source model for a store: a version beside the model (the other versions of its
    /// `.xcdatamodeld`), else one in the default bundles, that `isSource` accepts.
    static func sourceModel(near model: NSManagedObjectModel, where isSource: (NSManagedObjectModel) -> Bool) -> NSManagedObjectModel? {
        if let bundle = model.versionBundleURL, let found = versions(in: bundle).first(where: isSource) {
            return found
        }
        return version(in: directories(of: nil), where: isSource)
    }
}

extension NSManagedObjectModel {
    /// One model merging every model in the bundles (the main bundle and all loaded bundles when
    /// nil): the current version of each `.xcdatamodeld` and `.momd`, and each `.mom` and
    /// `.xcdatamodel` outside them. Nil when a model can't be read or two define an entity of the
    /// same name.
    public class func mergedModel(from bundles: [Bundle]?) -> NSManagedObjectModel? {
        let directories = ModelFileSearch.directories(of: bundles)
        var models: [NSManagedObjectModel] = []
        for pathExtension in ["xcdatamodeld", "momd", "xcdatamodel", "mom"] {
            for url in ModelFileSearch.items(withExtension: pathExtension, in: directories) {
                guard let model = NSManagedObjectModel(contentsOf: url) else {
                    CoreDataLog.logger.error("The model at \(url.path) can't be read; no merged model.")
                    return nil
                }
                models.append(model)
            }
        }
        return NSManagedObjectModel(byMerging: models)
    }

    /// The model version, among those in the bundles (the main bundle and all loaded bundles when
    /// nil), whose entity version hashes match a store's metadata; nil when none does.
    public class func mergedModel(from bundles: [Bundle]?, forStoreMetadata metadata: [String: Any]) -> NSManagedObjectModel? {
        ModelFileSearch.version(in: ModelFileSearch.directories(of: bundles)) { $0.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata) }
    }
}
