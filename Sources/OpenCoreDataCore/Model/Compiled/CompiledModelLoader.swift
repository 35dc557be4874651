import Foundation

/// Loads compiled models from disk: a `.momd` folder (the version its `VersionInfo.plist` names
/// as current) or a single `.mom` file, as Xcode's model compiler writes them into an app.
enum CompiledModelLoader {
    /// Whether a URL names a compiled model rather than Xcode's model source.
    static func isCompiledModel(_ url: URL) -> Bool {
        ["momd", "mom", "omo"].contains(url.pathExtension)
    }

    /// Loads the current version of a `.momd`, or a `.mom` file. Errors are 259 with the path.
    static func load(from url: URL) throws -> NSManagedObjectModel {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw CoreDataError.make(.fileReadNoSuchFile, "No model at \(url.path).", url: url)
        }
        if isDirectory.boolValue {
            return try loadFile(url.appendingPathComponent(try currentVersionName(in: url) + ".mom"))
        }
        return try loadFile(url)
    }

    /// The current version's name in a `.momd` folder: `VersionInfo.plist`'s
    /// `NSManagedObjectModel_CurrentVersionName`, else its only `.mom`.
    static func currentVersionName(in bundle: URL) throws -> String {
        let info = bundle.appendingPathComponent("VersionInfo.plist")
        if let data = FileManager.default.contents(atPath: info.path),
           // Ignored: an unreadable VersionInfo.plist falls back to the only .mom, or the error below.
           let plist = try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any],
           let name = plist["NSManagedObjectModel_CurrentVersionName"] as? String {
            return name
        }
        let versions = versionFiles(in: bundle)
        if versions.count == 1 { return versions[0].deletingPathExtension().lastPathComponent }
        throw CoreDataError.make(.fileReadCorruptFile, "\(bundle.path) has \(versions.count) model versions and no VersionInfo.plist naming the current one.", url: bundle)
    }

    /// The `.mom` files of a `.momd` folder, by name.
    static func versionFiles(in bundle: URL) -> [URL] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: bundle.path)
        } catch {
            CoreDataLog.logger.error("The model versions in \(bundle.path) can't be listed: \(error)")
            names = []
        }
        return names.filter { $0.hasSuffix(".mom") }.sorted().map { bundle.appendingPathComponent($0) }
    }

    /// Every version of a `.momd` folder, by version name.
    static func loadAllVersions(in bundle: URL) throws -> [String: NSManagedObjectModel] {
        var result: [String: NSManagedObjectModel] = [:]
        for file in versionFiles(in: bundle) { result[file.deletingPathExtension().lastPathComponent] = try loadFile(file) }
        return result
    }

    /// Loads one compiled model file.
    static func loadFile(_ file: URL) throws -> NSManagedObjectModel {
        guard let data = FileManager.default.contents(atPath: file.path) else {
            throw CoreDataError.make(.fileReadNoSuchFile, "No compiled model at \(file.path).", url: file)
        }
        let model = try decode(Array(data), file: file)
        model.sourceURL = file
        return model
    }

    /// Decodes a compiled model's bytes, raw DEFLATE first when `compressed` (a store's
    /// `Z_MODELCACHE` content); `file` names it in errors, which are 259.
    static func decode(_ bytes: [UInt8], compressed: Bool = false, file: URL) throws -> NSManagedObjectModel {
        var archive = bytes
        if compressed {
            do {
                archive = try RawDeflate.inflate(bytes)
            } catch let error as RawDeflate.FormatError {
                throw CoreDataError.make(.fileReadCorruptFile, "The model cache in \(file.path) can't be decompressed: \(error.description).", url: file)
            }
        }
        do {
            return try CompiledModelDecoder.model(from: archive)
        } catch let error as KeyedArchive.FormatError {
            throw CoreDataError.make(.fileReadCorruptFile, "\(file.path) is not a readable compiled Core Data model: \(error.description).", url: file)
        }
    }
}
