import Foundation

/// Compiles Xcode's model source into what an app ships, as Xcode's model compiler does: a
/// `.xcdatamodeld` becomes a `.momd` folder holding every version's `.mom` and a
/// `VersionInfo.plist` (the current version's name, every version's entity hashes and, as recent
/// Xcode records it, every version's checksum); a single
/// `.xcdatamodel` becomes one `.mom`.
package enum ModelCompiler {
    /// What a compilation wrote.
    package struct Output {
        /// The version names compiled, in name order.
        package let versions: [String]
        /// The current version (the one a `.momd` loads).
        package let currentVersion: String
        /// The `.momd` folder or `.mom` file written.
        package let destination: URL
    }

    /// Compiles `source` into `destination`, replacing what is there only once everything is
    /// written. `progress` is told each version as it is compiled.
    package static func compile(_ source: URL, to destination: URL, progress: (String) -> Void = { _ in }) throws -> Output {
        let fileManager = FileManager.default
        let temporary = destination.deletingLastPathComponent().appendingPathComponent(".\(destination.lastPathComponent).compiling-\(UUID().uuidString)")
        defer { try? fileManager.removeItem(at: temporary) } // Ignored: cleanup; gone already once renamed into place.
        let output: Output
        if source.pathExtension == "xcdatamodeld" {
            let models = try XcodeModelLoader.loadAllVersions(in: source)
            guard !models.isEmpty else {
                throw CoreDataError.make(.fileReadCorruptFile, "\(source.path) holds no model version.", url: source)
            }
            let current = try XcodeModelLoader.currentVersionName(in: source).replacingOccurrences(of: ".xcdatamodel", with: "")
            try fileManager.createDirectory(at: temporary, withIntermediateDirectories: false)
            var hashes: [String: [String: Data]] = [:]
            var checksums: [String: String] = [:]
            for (file, model) in models.sorted(by: { $0.key < $1.key }) {
                let version = String(file.dropLast(".xcdatamodel".count))
                progress(version)
                try write(model, to: temporary.appendingPathComponent("\(version).mom"))
                let versionHashes = model.entityVersionHashesByName
                hashes[version] = versionHashes
                checksums[version] = VersionHasher.checksum(versionHashes)
            }
            let info: [String: Any] = ["NSManagedObjectModel_CurrentVersionName": current, "NSManagedObjectModel_VersionHashes": hashes,
                                       ModelVersionChecksums.versionInfoKey: checksums]
            try PropertyListSerialization.data(fromPropertyList: info, format: .binary, options: 0)
                .write(to: temporary.appendingPathComponent("VersionInfo.plist"))
            output = Output(versions: hashes.keys.sorted(), currentVersion: current, destination: destination)
        } else {
            let model = try XcodeModelLoader.load(from: source)
            let version = source.lastPathComponent == "contents" ? source.deletingLastPathComponent().deletingPathExtension().lastPathComponent
                                                                  : source.deletingPathExtension().lastPathComponent
            progress(version)
            try write(model, to: temporary)
            output = Output(versions: [version], currentVersion: version, destination: destination)
        }
        if fileManager.fileExists(atPath: destination.path) { try fileManager.removeItem(at: destination) }
        try fileManager.moveItem(at: temporary, to: destination)
        return output
    }

    private static func write(_ model: NSManagedObjectModel, to file: URL) throws {
        let bytes: [UInt8]
        do {
            bytes = try CompiledModelEncoder.archive(model)
        } catch let error as CompiledModelEncoder.UnsupportedExpression {
            throw CoreDataError.make(.coreData, "The model can't be compiled: \(error.description).", url: file)
        }
        try Data(bytes).write(to: file)
    }
}
