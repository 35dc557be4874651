import Foundation

/// Option (OpenCoreData): earlier model versions, `[NSManagedObjectModel]`, for automatic migration
/// to search besides the versions beside the model's file and in the bundles (for models built in
/// code, which have no file).
public let OCDMigrationSourceModelsOptionKey = "OCDMigrationSourceModels"

/// Automatic migration when a store is added (`NSMigratePersistentStoresAutomaticallyOption`).
///
/// Called when loading a store failed because the file's model version hashes differ from the
/// coordinator's model (134100):
/// 1. The source model is the version (among those given with `OCDMigrationSourceModelsOptionKey`,
///    then beside the model's own file, then in the bundles) whose version hashes match the
///    store's metadata (`StoreModelMatching`). A store whose hashes Core Data compares by entity
///    names only must also have exactly the tables and property columns the version makes
///    (`SQLiteStoredTables.isExactly`). Last comes the model a SQLite store keeps of itself
///    (`SQLiteModelCache`). None found is `NSMigrationMissingSourceModelError` (134130).
/// 2. The mapping is a mapping model made for the two versions if one is found, else the inferred
///    one when `NSInferMappingModelAutomaticallyOption` is on, else `NSMigrationMissingMappingModelError`.
/// 3. An inferred mapping on a SQLite store runs in place, in one transaction. Any other migration
///    runs through `NSMigrationManager` into a new file beside the store, which then replaces the
///    store by an atomic rename; the store keeps its identifier.
///
/// A failure at any step throws and leaves the store file as it was.
enum StoreMigrator {
    /// Migrates the store file to `model`; false (nothing done) when the options don't ask for it.
    static func migrate(type: String, url: URL?, model: NSManagedObjectModel, configuration: String?, options: [AnyHashable: Any]?) throws -> Bool {
        if let manager = options?[NSPersistentStoreStagedMigrationManagerOptionKey] as? NSStagedMigrationManager,
           type == NSSQLiteStoreType || type == NSBinaryStoreType, let url, !StoreOptions.flag(options?[NSReadOnlyPersistentStoreOption]) {
            try StagedMigration(manager: manager, type: type, url: url, model: model, configuration: configuration, options: options).run()
            return true
        }
        guard type == NSSQLiteStoreType || type == NSBinaryStoreType, let url,
              StoreOptions.flag(options?[NSMigratePersistentStoresAutomaticallyOption]),
              !StoreOptions.flag(options?[NSReadOnlyPersistentStoreOption]),
              // Ignored: unreadable metadata means no migration; the caller then throws the load's 134100 error.
              let metadata = try? NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: type, at: url) else { return false }
        let recorded = StoreModelMatching.normalized(metadata, storeType: type)
        // Stores whose hashes Core Data compares by entity names only are also matched by their
        // schema (read once, compared with each candidate in memory).
        let namesOnly = type == NSSQLiteStoreType && StoreModelMatching.comparesNamesOnly(recorded)
        let storedTables = try namesOnly ? SQLiteStore.storedTables(at: url) : nil
        let isSource: (NSManagedObjectModel) -> Bool = { candidate in
            candidate.freeze()
            let entities = candidate.entities(forConfigurationName: configuration) ?? candidate.entities
            guard StoreModelMatching.isCompatible(entities, with: recorded) else { return false }
            return !namesOnly || (storedTables?.isExactly(candidate, configuration: configuration, metadata: recorded) ?? false)
        }
        let given = options?[OCDMigrationSourceModelsOptionKey] as? [NSManagedObjectModel] ?? []
        // Last, the model the store keeps of itself (Z_MODELCACHE), as Core Data does when the app
        // no longer ships the version that wrote the store.
        let cached = { () -> NSManagedObjectModel? in
            guard type == NSSQLiteStoreType else { return nil }
            let stored: NSManagedObjectModel?
            do {
                stored = try SQLiteModelCache.read(at: url)
            } catch {
                CoreDataLog.logger.error("The model kept in the store at \(url.path) can't be read: \(error)")
                return nil
            }
            guard let model = stored, isSource(model) else { return nil }
            return model
        }
        guard let sourceModel = given.first(where: isSource) ?? ModelFileSearch.sourceModel(near: model, where: isSource) ?? cached() else {
            throw CoreDataError.make(.migrationMissingSourceModel,
                "The store at \(url.path) was made with a model version whose version hashes match none of the versions found, so it can't be migrated. Keep every version in the .xcdatamodeld beside the current one.",
                url: url, userInfo: [NSStoreModelVersionHashesKey: metadata[NSStoreModelVersionHashesKey] as Any])
        }
        try migrateStep(type: type, url: url, from: sourceModel, to: model, configuration: configuration, options: options, metadata: metadata)
        return true
    }

    /// Migrates the store file from one model version to the next: with a mapping model made for
    /// them if one is found, else the inferred one (when `inferring` or the options allow it). An
    /// inferred mapping on a SQLite store runs in place in one transaction; any other migration
    /// writes a new file and renames it over the store. A failure leaves the file as it was.
    static func migrateStep(type: String, url: URL, from sourceModel: NSManagedObjectModel, to model: NSManagedObjectModel, configuration: String?,
                            options: [AnyHashable: Any]?, metadata: [String: Any], inferring: Bool = false) throws {
        var mappingOptions = options ?? [:]
        if inferring { mappingOptions[NSInferMappingModelAutomaticallyOption] = true }
        let mapping = try mappingModel(from: sourceModel, to: model, options: mappingOptions, store: "at \(url.path)", url: url)
        if type == NSSQLiteStoreType, mapping.isInferred,
           try SQLiteStore.migrateInPlace(at: url, from: sourceModel, to: model, configuration: configuration, mapping: mapping, metadata: metadata) {
            return
        }
        try migrateIntoNewFile(url, type: type, from: sourceModel, to: model, mapping: mapping, identifier: metadata[NSStoreUUIDKey] as? String)
    }

    /// The mapping between two versions: a mapping model made for them if one is found beside the
    /// model, else the inferred one when `NSInferMappingModelAutomaticallyOption` is on, else
    /// `NSMigrationMissingMappingModelError` naming the store (`"at /path"`, or a server's URL).
    static func mappingModel(from sourceModel: NSManagedObjectModel, to model: NSManagedObjectModel, options: [AnyHashable: Any]?,
                             store: String, url: URL? = nil) throws -> NSMappingModel {
        if let found = ModelFileSearch.mappingModel(in: ModelFileSearch.directories(near: model), from: sourceModel, to: model) {
            return found
        }
        guard StoreOptions.flag(options?[NSInferMappingModelAutomaticallyOption]) else {
            throw CoreDataError.make(.migrationMissingMappingModel,
                "The store \(store) needs migrating, no mapping model was found for its model version, and inferring one is off (NSInferMappingModelAutomaticallyOption).", url: url)
        }
        return try NSMappingModel.inferredMappingModel(forSourceModel: sourceModel, destinationModel: model)
    }

    /// Migrates through `NSMigrationManager` into a file beside the store, then renames it over the store.
    private static func migrateIntoNewFile(_ url: URL, type: String, from sourceModel: NSManagedObjectModel, to model: NSManagedObjectModel,
                                           mapping: NSMappingModel, identifier: String?) throws {
        let temporary = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).migrating-\(UUID().uuidString)")
        do {
            if type == NSSQLiteStoreType { try SQLiteStore.checkpoint(at: url) }
            try NSMigrationManager(sourceModel: sourceModel, destinationModel: model)
                .migrateStore(from: url, sourceType: type, with: mapping, toDestinationURL: temporary, destinationType: type)
            if type == NSSQLiteStoreType {
                if let identifier { try SQLiteStore.adoptIdentifier(identifier, at: temporary) }
                try SQLiteStore.checkpoint(at: temporary)
            }
            guard rename(temporary.path, url.path) == 0 else {
                throw CoreDataError.make(.migration, "The migrated store couldn't replace \(url.path): \(String(cString: strerror(errno))).", url: url)
            }
        } catch {
            StoreFiles.remove(at: temporary)
            throw error
        }
        StoreFiles.remove(at: temporary)
        StoreFiles.removeSideFiles(of: url)
    }
}

extension NSPersistentStoreCoordinator {
    /// Finishes the lightweight migration work deferred with
    /// `NSPersistentStoreDeferredLightweightMigrationOptionKey`. Migrations here finish as the store
    /// is added, so nothing is ever deferred and there is nothing to do.
    public func finishDeferredLightweightMigration() throws {}

    /// The same as `finishDeferredLightweightMigration()`, for a background task's time slice.
    public func finishDeferredLightweightMigrationTask() throws {}

    /// Replaces a store file with a copy of another (Apple's newer store-type spelling).
    public func replacePersistentStore(at destinationURL: URL, destinationOptions: [AnyHashable: Any]? = nil,
                                       withPersistentStoreFrom sourceURL: URL, sourceOptions: [AnyHashable: Any]? = nil, type storeType: NSPersistentStore.StoreType) throws {
        try replacePersistentStore(at: destinationURL, destinationOptions: destinationOptions, withPersistentStoreFrom: sourceURL,
                                   sourceOptions: sourceOptions, ofType: storeType.rawValue)
    }

    /// Replaces the store file at `destinationURL` with a copy of the store at `sourceURL` (a
    /// migrated store, say). The copy is made beside the destination and renamed over it, so the
    /// destination is either the old store or the new one, never a mix.
    public func replacePersistentStore(at destinationURL: URL, destinationOptions: [AnyHashable: Any]? = nil,
                                       withPersistentStoreFrom sourceURL: URL, sourceOptions: [AnyHashable: Any]? = nil, ofType storeType: String) throws {
        guard FileManager.default.fileExists(atPath: sourceURL.path) else {
            throw CoreDataError.make(.fileReadNoSuchFile, "No store to copy at \(sourceURL.path).", url: sourceURL)
        }
        if persistentStore(for: destinationURL) != nil {
            throw CoreDataError.make(.operationFailed, "The store at \(destinationURL.path) is in use by this coordinator; remove it before replacing it.", url: destinationURL)
        }
        if storeType == NSSQLiteStoreType {
            try SQLiteStore.checkpoint(at: sourceURL)
            if FileManager.default.fileExists(atPath: destinationURL.path) { try SQLiteStore.checkpoint(at: destinationURL) }
        }
        let temporary = destinationURL.deletingLastPathComponent().appendingPathComponent(".\(destinationURL.lastPathComponent).replacing-\(UUID().uuidString)")
        do {
            try FileManager.default.copyItem(at: sourceURL, to: temporary)
            guard rename(temporary.path, destinationURL.path) == 0 else {
                throw CoreDataError.make(.operationFailed, "The copy couldn't replace \(destinationURL.path): \(String(cString: strerror(errno))).", url: destinationURL)
            }
        } catch {
            // Ignored: cleanup of a failed copy; the copy's own error is thrown below.
            try? FileManager.default.removeItem(at: temporary)
            let nsError = error as NSError
            if nsError.domain == NSCocoaErrorDomain && nsError.code >= 134000 { throw error }
            throw CoreDataError.make(.operationFailed, "The store at \(destinationURL.path) couldn't be replaced: \(nsError.localizedDescription)", url: destinationURL, userInfo: [NSUnderlyingErrorKey: error])
        }
        StoreFiles.removeSideFiles(of: destinationURL)
    }
}
