import Foundation

/// Version checksums of the versions of a model bundle, and the version a checksum names.
///
/// A version's checksum is its `versionChecksum`, or, in a `.momd` Xcode compiled, the one its
/// `VersionInfo.plist` records under `NSManagedObjectModel_VersionChecksums`: either names it.
enum ModelVersionChecksums {
    /// The `VersionInfo.plist` key of the checksums by version name.
    static let versionInfoKey = "NSManagedObjectModel_VersionChecksums"

    /// The checksums a compiled model's `VersionInfo.plist` records, by version name (empty when
    /// it records none or can't be read).
    static func recorded(in momd: URL) -> [String: String] {
        let file = momd.appendingPathComponent("VersionInfo.plist")
        guard let data = FileManager.default.contents(atPath: file.path) else { return [:] }
        do {
            let plist = try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any]
            return plist?[versionInfoKey] as? [String: String] ?? [:]
        } catch {
            CoreDataLog.logger.error("\(file.path) can't be read: \(error)")
            return [:]
        }
    }

    /// The versions of a `.momd` or `.xcdatamodeld` by name, with their checksums (recorded ones
    /// first); throws when the bundle can't be read.
    static func versions(in bundle: URL) throws -> [(name: String, model: NSManagedObjectModel, checksums: Set<String>)] {
        let loaded = try bundle.pathExtension == "momd" ? CompiledModelLoader.loadAllVersions(in: bundle) : XcodeModelLoader.loadAllVersions(in: bundle)
        let recorded = bundle.pathExtension == "momd" ? recorded(in: bundle) : [:]
        return loaded.map { key, model in (name: key.hasSuffix(".xcdatamodel") ? String(key.dropLast(".xcdatamodel".count)) : key, model: model) }
            .sorted { $0.name < $1.name }.map { name, model in
            var checksums: Set<String> = [model.versionChecksum]
            if let written = recorded[name] { checksums.insert(written) }
            return (name, model, checksums)
        }
    }

    /// The checksum of each version of the bundle, by version name: the recorded one when the
    /// `.momd` has it, else the computed one.
    static func checksums(ofVersionedModelAt url: URL) throws -> [String: String] {
        guard ["momd", "xcdatamodeld"].contains(url.pathExtension) else {
            throw CoreDataError.make(.fileReadCorruptFile, "\(url.path) is not a versioned model (.momd or .xcdatamodeld).", url: url)
        }
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw CoreDataError.make(.fileReadNoSuchFile, "No versioned model at \(url.path).", url: url)
        }
        let recorded = url.pathExtension == "momd" ? recorded(in: url) : [:]
        var result: [String: String] = [:]
        for version in try versions(in: url) { result[version.name] = recorded[version.name] ?? version.model.versionChecksum }
        return result
    }

    /// The model at `url` for a reference with `checksum`: the file's model for a single version
    /// (`.mom`, `.xcdatamodel`, `contents`), the version with that checksum for a bundle; nil when
    /// there is none or it can't be read.
    static func version(at url: URL, checksum: String) -> NSManagedObjectModel? {
        if ["momd", "xcdatamodeld"].contains(url.pathExtension) {
            do {
                return try versions(in: url).first { $0.checksums.contains(checksum) }?.model
            } catch {
                CoreDataLog.logger.error("The model versions in \(url.path) can't be read: \(error)")
                return nil
            }
        }
        return NSManagedObjectModel(contentsOf: url)
    }
}

extension NSManagedObjectModel {
    /// The version checksum of each version of a versioned model (a `.momd` or `.xcdatamodeld`),
    /// by version name: those Xcode recorded in the `.momd`'s `VersionInfo.plist`, else the
    /// versions' `versionChecksum`.
    public class func checksumsForVersionedModel(at modelURL: URL) throws -> [String: String] {
        try ModelVersionChecksums.checksums(ofVersionedModelAt: modelURL)
    }
}
