import Foundation

/// Runs an `NSStagedMigrationManager`'s stages on a store file that its coordinator's model can't
/// open (see `NSStagedMigrationManager` for the rules).
struct StagedMigration {
    let manager: NSStagedMigrationManager
    let type: String
    let url: URL
    /// The coordinator's model: where the migration ends.
    let model: NSManagedObjectModel
    let configuration: String?
    let options: [AnyHashable: Any]?

    /// One model version of the sequence the stages name.
    private struct Version {
        let checksum: String
        /// The reference a custom stage gives for it; nil for a checksum a lightweight stage names.
        var reference: NSManagedObjectModelReference?
        /// The custom stage whose migration ends at this version.
        var arrivingBy: NSCustomMigrationStage?
    }

    /// Migrates the store, one version at a time, from the version it is at to the coordinator's model.
    func run() throws {
        let versions = try sequence()
        var resolved: [Int: NSManagedObjectModel] = [:]
        func model(at index: Int) throws -> NSManagedObjectModel {
            if let known = resolved[index] { return known }
            let found = try resolve(versions[index])
            resolved[index] = found
            return found
        }
        let metadata = try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: type, at: url)
        let recorded = StoreModelMatching.normalized(metadata, storeType: type)
        let isStore = { (candidate: NSManagedObjectModel) -> Bool in
            candidate.freeze()
            return StoreModelMatching.isCompatible(candidate.entities(forConfigurationName: configuration) ?? candidate.entities, with: recorded)
        }
        // The store's version: the one its hashes match. A reference that finds no model can't
        // be it; if no version is, that reference's error (134504) is the likely cause.
        var unresolved: Error?
        let start = versions.indices.first { index in
            do {
                return isStore(try model(at: index))
            } catch {
                if unresolved == nil { unresolved = error }
                return false
            }
        }
        guard let start else {
            if let unresolved { throw unresolved }
            throw CoreDataError.make(.migrationMissingSourceModel,
                "The store at \(url.path) was made with a model version that none of the staged migration's versions (\(versions.map(\.checksum).joined(separator: ", "))) matches.",
                url: url, userInfo: [NSStoreModelVersionHashesKey: metadata[NSStoreModelVersionHashesKey] as Any])
        }
        for index in start..<(versions.count - 1) {
            try step(from: model(at: index), to: model(at: index + 1), by: versions[index + 1].arrivingBy)
        }
    }

    /// The versions the stages name, in order, ending at the coordinator's model. A checksum
    /// named again after another version would migrate backwards: that throws 134506
    /// (`NSStagedMigrationBackwardMigrationError`).
    private func sequence() throws -> [Version] {
        var versions: [Version] = []
        func add(_ version: Version) throws {
            if let last = versions.last, last.checksum == version.checksum {
                versions[versions.count - 1].reference = last.reference ?? version.reference
                versions[versions.count - 1].arrivingBy = last.arrivingBy ?? version.arrivingBy
                return
            }
            if versions.contains(where: { $0.checksum == version.checksum }) {
                throw CoreDataError.make(.stagedMigrationBackwardMigration,
                    "The staged migration names the model version \(version.checksum) twice with other versions between: a store can't be migrated back to an earlier version.", url: url)
            }
            versions.append(version)
        }
        for stage in manager.stages {
            switch stage {
            case let custom as NSCustomMigrationStage:
                try add(Version(checksum: custom.currentModel.versionChecksum, reference: custom.currentModel))
                try add(Version(checksum: custom.nextModel.versionChecksum, reference: custom.nextModel, arrivingBy: custom))
            case let lightweight as NSLightweightMigrationStage:
                for checksum in lightweight.versionChecksums { try add(Version(checksum: checksum)) }
            default:
                throw CoreDataError.make(.migration, "\(Swift.type(of: stage)) is not a migration stage this manager runs: use NSLightweightMigrationStage or NSCustomMigrationStage.", url: url)
            }
        }
        // The coordinator's model ends the sequence (unless the last version is it).
        let current = model.versionChecksum
        // Ignored: an unresolvable last version is not the coordinator's model; a step that needs it throws.
        let lastIsCurrent = versions.last.map { $0.checksum == current || ((try? resolve($0))?.versionChecksum == current) } ?? false
        if !lastIsCurrent {
            try add(Version(checksum: current, reference: NSManagedObjectModelReference(model: model, versionChecksum: current)))
        }
        return versions
    }

    /// The model of a version: its reference's, else the version with its checksum among the
    /// coordinator's model, the stages' references, the versions beside the coordinator's model
    /// file, the models given with `OCDMigrationSourceModelsOptionKey` and those in the bundles.
    private func resolve(_ version: Version) throws -> NSManagedObjectModel {
        if let reference = version.reference { return try reference.resolve() }
        let checksum = version.checksum
        if model.versionChecksum == checksum { return model }
        for stage in manager.stages {
            guard let custom = stage as? NSCustomMigrationStage else { continue }
            for reference in [custom.currentModel, custom.nextModel] where reference.versionChecksum == checksum {
                return try reference.resolve()
            }
        }
        let given = options?[OCDMigrationSourceModelsOptionKey] as? [NSManagedObjectModel] ?? []
        if let found = given.first(where: { $0.versionChecksum == checksum }) { return found }
        let beside = model.versionBundleURL.map { [$0] } ?? []
        let bundled = { NSManagedObjectModelReference.modelFiles(in: nil).filter { ["momd", "xcdatamodeld"].contains($0.pathExtension) } }
        for bundles in [{ beside }, bundled] {
            for bundle in bundles() {
                // Ignored: a bundle that can't be read holds no version to find.
                if let found = try? ModelVersionChecksums.versions(in: bundle).first(where: { $0.checksums.contains(checksum) }) { return found.model }
            }
        }
        throw CoreDataError.make(.migrationMissingSourceModel,
            "No model version with checksum \(checksum) was found beside the model, among the models given or in the bundles.", url: url)
    }

    /// Migrates the store from one version to the next, running a custom stage's handlers around it.
    private func step(from source: NSManagedObjectModel, to destination: NSManagedObjectModel, by stage: NSCustomMigrationStage?) throws {
        if let stage, let handler = stage.willMigrateHandler {
            try withContainer(at: source) { try handler(manager, stage) }
        }
        let metadata = try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: type, at: url)
        try StoreMigrator.migrateStep(type: type, url: url, from: source, to: destination, configuration: configuration,
                                      options: options, metadata: metadata, inferring: true)
        if let stage, let handler = stage.didMigrateHandler {
            try withContainer(at: destination) { try handler(manager, stage) }
        }
    }

    /// Runs `body` with the manager's `container` holding the store, opened at `version`; the
    /// store is closed again after.
    private func withContainer(at version: NSManagedObjectModel, _ body: () throws -> Void) throws {
        let container = NSPersistentContainer(name: url.deletingPathExtension().lastPathComponent, managedObjectModel: version)
        let description = NSPersistentStoreDescription(url: url)
        description.type = type
        description.configuration = configuration
        for (key, value) in options ?? [:] {
            guard let key = key.base as? String, key != NSPersistentStoreStagedMigrationManagerOptionKey else { continue }
            description.setOption(value, forKey: key)
        }
        description.shouldMigrateStoreAutomatically = false
        description.shouldInferMappingModelAutomatically = false
        container.persistentStoreDescriptions = [description]
        let coordinator = container.persistentStoreCoordinator
        try coordinator.addPersistentStore(ofType: type, configurationName: configuration, at: url, options: description.storedOptions)
        manager.container = container
        defer {
            manager.container = nil
            for store in coordinator.persistentStores {
                do { try coordinator.remove(store) } catch { CoreDataLog.logger.error("The store at \(url.path) couldn't be closed after a migration stage: \(error)") }
            }
        }
        try body()
    }
}
