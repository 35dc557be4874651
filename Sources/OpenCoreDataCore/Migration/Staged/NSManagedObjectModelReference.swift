import Foundation

/// One version of a managed object model, named by its version checksum, for staged migration
/// (`NSCustomMigrationStage`).
///
/// The reference holds a model, or says where to find one: a model file, a model by name in a
/// bundle, or the version whose entity hashes match. A file or bundle holding several versions (a
/// `.momd` or `.xcdatamodeld`) gives the version whose checksum is `versionChecksum`, the checksum
/// OpenCoreData computes or the one Xcode recorded in the `.momd`'s `VersionInfo.plist`. The model
/// is found when the migration first needs it; a reference that finds none makes the migration
/// throw `NSMigrationMissingSourceModelError` (134130).
open class NSManagedObjectModelReference: NSObject {
    /// Where the model comes from.
    enum Source {
        case model(NSManagedObjectModel)
        case file(URL)
        case named(String, Bundle?)
        case hashes([String: Data], Bundle?)
    }

    let source: Source
    /// The checksum of the model version this reference stands for.
    public let versionChecksum: String
    private var resolved: NSManagedObjectModel?

    /// A reference to a model in memory.
    public init(model: NSManagedObjectModel, versionChecksum: String) {
        source = .model(model)
        self.versionChecksum = versionChecksum
    }

    /// A reference to the model at a file URL: a `.mom` or `.xcdatamodel`, or a `.momd` or
    /// `.xcdatamodeld` whose version with this checksum is meant.
    public init(fileURL: URL, versionChecksum: String) {
        source = .file(fileURL)
        self.versionChecksum = versionChecksum
    }

    /// A reference to the version with this checksum of the model named `modelName`
    /// (`<modelName>.momd`, `.xcdatamodeld`, `.mom` or `.xcdatamodel`) in the bundle; for the main
    /// bundle or nil, where `NSPersistentContainer(name:)` finds models.
    public init(name modelName: String, in bundle: Bundle?, versionChecksum: String) {
        source = .named(modelName, bundle)
        self.versionChecksum = versionChecksum
    }

    /// A reference to the model version in the bundle (for the main bundle or nil, where
    /// `NSPersistentContainer(name:)` finds models) whose entities have these version hashes
    /// (entity name → `Data`).
    public init(entityVersionHashes versionHash: [AnyHashable: Any], in bundle: Bundle?, versionChecksum: String) {
        var hashes: [String: Data] = [:]
        for (key, value) in versionHash {
            if let name = key.base as? String, let hash = value as? Data { hashes[name] = hash }
        }
        source = .hashes(hashes, bundle)
        self.versionChecksum = versionChecksum
    }

    /// The model the reference stands for. A reference that finds no model is a programmer error:
    /// it traps with what was looked for (a migration reports it as a thrown error instead).
    public var resolvedModel: NSManagedObjectModel {
        do {
            return try resolve()
        } catch {
            coreDataMisuse("NSManagedObjectModelReference: \((error as NSError).localizedDescription)")
        }
    }

    /// Finds the model (once), or throws 134504 (`NSManagedObjectModelReferenceNotFoundError`)
    /// saying what was looked for.
    func resolve() throws -> NSManagedObjectModel {
        if let resolved { return resolved }
        let found: NSManagedObjectModel?
        switch source {
        case .model(let model):
            found = model
        case .file(let url):
            found = ModelVersionChecksums.version(at: url, checksum: versionChecksum)
        case .named(let name, let bundle):
            let candidates = Self.modelFiles(in: bundle).filter { $0.deletingPathExtension().lastPathComponent == name }
            found = candidates.lazy.compactMap { ModelVersionChecksums.version(at: $0, checksum: self.versionChecksum) }.first
        case .hashes(let hashes, let bundle):
            let versioned = Self.modelFiles(in: bundle).filter { ["momd", "xcdatamodeld"].contains($0.pathExtension) }
            found = versioned.lazy.compactMap { ModelFileSearch.versions(in: $0).first { $0.entityVersionHashesByName == hashes } }.first
        }
        guard let found else {
            throw CoreDataError.make(.modelReferenceNotFound, "No model version with checksum \(versionChecksum) was found for \(sourceDescription).")
        }
        resolved = found
        return found
    }

    /// The model files and bundles (`.momd`, `.xcdatamodeld`, `.mom`, `.xcdatamodel`) directly in
    /// a bundle's resources; for the main bundle (or nil), in the places `NSPersistentContainer(name:)`
    /// searches, which include the resource bundles SwiftPM puts beside the executable.
    static func modelFiles(in bundle: Bundle?) -> [URL] {
        let directories = bundle.flatMap { $0 == Bundle.main ? nil : ModelFileSearch.directories(of: [$0]) } ?? ModelLocator.searchedPlaces()
        return ["momd", "xcdatamodeld", "mom", "xcdatamodel"].flatMap { ModelFileSearch.items(withExtension: $0, in: directories, depth: 0) }
    }

    /// Where the reference looks, for messages.
    var sourceDescription: String {
        switch source {
        case .model: "the model given"
        case .file(let url): url.path
        case .named(let name, let bundle): "the model named \(name) in \(bundle.map { $0.bundlePath } ?? "the main and loaded bundles")"
        case .hashes(let hashes, _): "the entity version hashes of \(hashes.keys.sorted().joined(separator: ", "))"
        }
    }

    /// The checksum and where the model comes from.
    open override var description: String { "<NSManagedObjectModelReference \(versionChecksum): \(sourceDescription)>" }
}
