import Foundation

/// Migrates a store from one model version to another with a mapping model, object by object.
///
/// `migrateStore(from:sourceType:options:with:toDestinationURL:destinationType:destinationOptions:)`
/// opens the source store read-only, creates the destination store, and runs the mapping's entity
/// mappings in three passes through their `NSEntityMigrationPolicy`: create the destination
/// instances, set their relationships, validate and save. The source file is never changed; on
/// any failure the destination files it created are removed.
///
/// Progress: `migrationProgress` goes from 0 to 1, and `progress` (an OpenCoreData addition, as
/// Linux has no key-value observing) is a `Progress` that joins the caller's current progress
/// (`Progress.current()`) when there is one, and can be cancelled.
/// Unchecked Sendable: a migration's state is used only by the thread running it; what another
/// thread may touch while it runs (`progress`, `migrationProgress`, `cancelMigrationWithError`)
/// is behind a lock.
open class NSMigrationManager: NSObject, ExpressionFunctionTarget, @unchecked Sendable {
    /// The model of the store being migrated.
    public let sourceModel: NSManagedObjectModel
    /// The model the store is migrated to.
    public let destinationModel: NSManagedObjectModel
    /// The mapping model of the current (or last) migration.
    public private(set) var mappingModel: NSMappingModel = NSMappingModel()
    /// The context the source instances are read from, during a migration.
    public private(set) var sourceContext: NSManagedObjectContext!
    /// The context the destination instances are inserted into, during a migration.
    public private(set) var destinationContext: NSManagedObjectContext!
    /// The entity mapping being run.
    public private(set) var currentEntityMapping: NSEntityMapping!
    /// Custom information for policies.
    open var userInfo: [AnyHashable: Any]?
    /// Kept for source compatibility; every store type migrates through the same manager here.
    open var usesStoreSpecificMigrationManager = true
    /// The migration's progress (OpenCoreData): cancel it to stop the migration.
    public var progress: Progress { shared.withLock { $0.progress } }
    /// What other threads may read or set while a migration runs.
    private let shared = LockedValue<(progress: Progress, cancellation: (any Error)?)>((Progress(totalUnitCount: 0), nil))

    /// Destination instances by mapping name, keyed by source object ID, and the reverse.
    private var forward: [String: [NSManagedObjectID: [NSManagedObject]]] = [:]
    private var backward: [String: [ObjectIdentifier: [NSManagedObject]]] = [:]
    /// Destination instances in creation order, by mapping name.
    private var created: [String: [NSManagedObject]] = [:]
    /// The stores the source instances are read from, during a migration.
    private var sourceStores: [NSPersistentStore]?

    /// Creates a manager for migrating stores of the source model to the destination model.
    public init(sourceModel: NSManagedObjectModel, destinationModel: NSManagedObjectModel) {
        self.sourceModel = sourceModel
        self.destinationModel = destinationModel
        sourceModel.freeze()
        destinationModel.freeze()
    }

    /// The fraction of the migration done, from 0 to 1.
    open var migrationProgress: Float { Float(progress.fractionCompleted) }

    /// `migrateStore(from:sourceType:options:with:toDestinationURL:destinationType:destinationOptions:)`
    /// with store types as `NSPersistentStore.StoreType` (Apple's newer spelling).
    public func migrateStore(from sourceURL: URL, type sourceType: NSPersistentStore.StoreType, options sourceOptions: [AnyHashable: Any]? = nil,
                             mapping mappingModel: NSMappingModel, to destinationURL: URL, type destinationType: NSPersistentStore.StoreType,
                             options destinationOptions: [AnyHashable: Any]? = nil) throws {
        try migrateStore(from: sourceURL, sourceType: sourceType.rawValue, options: sourceOptions, with: mappingModel,
                         toDestinationURL: destinationURL, destinationType: destinationType.rawValue, destinationOptions: destinationOptions)
    }

    /// Migrates the store at `sourceURL` into a new store at `dURL`, with the mapping model (or the
    /// inferred one when nil). The source file is left as it was.
    open func migrateStore(from sourceURL: URL, sourceType sStoreType: String, options sOptions: [AnyHashable: Any]? = nil,
                           with mappings: NSMappingModel?, toDestinationURL dURL: URL, destinationType dStoreType: String,
                           destinationOptions dOptions: [AnyHashable: Any]? = nil) throws {
        reset()
        mappingModel = try mappings ?? NSMappingModel.inferredMappingModel(forSourceModel: sourceModel, destinationModel: destinationModel)
        let sourceCoordinator = NSPersistentStoreCoordinator(managedObjectModel: sourceModel)
        var readOptions = sOptions ?? [:]
        readOptions[NSReadOnlyPersistentStoreOption] = true
        readOptions[NSMigratePersistentStoresAutomaticallyOption] = false
        let sourceStore: NSPersistentStore
        do {
            sourceStore = try sourceCoordinator.addPersistentStore(ofType: sStoreType, configurationName: nil, at: sourceURL, options: readOptions)
        } catch {
            throw CoreDataError.make(.migrationSourceStore, "The store to migrate at \(sourceURL.path) can't be opened with the source model: \(error.localizedDescription)",
                                     url: sourceURL, userInfo: [NSUnderlyingErrorKey: error])
        }
        defer { try? sourceCoordinator.remove(sourceStore) } // Ignored: the source was opened read-only; only closed here.
        _ = try migrate(reading: sourceStore, of: sourceCoordinator, into: dURL, type: dStoreType, options: dOptions,
                        configuration: nil, metadata: nil, keepingOpen: false)
    }

    /// Copies every object of `source`, a store added to `coordinator`, into a new store of
    /// `type` at `url`, relationships included, through the inferred mapping of the model onto
    /// itself: what `NSPersistentStoreCoordinator.migratePersistentStore` does. The new store
    /// takes `source`'s configuration and the metadata keys its own metadata lacks. An atomic
    /// (in-memory or binary) copy is handed back open, detached from the coordinator it was made
    /// on: its objects live in it (an in-memory store's alone, and an empty binary store has no
    /// file until its first save). A SQLite copy is closed, and nil returned, for the caller to
    /// add it.
    func copyStore(_ source: NSPersistentStore, of coordinator: NSPersistentStoreCoordinator, to url: URL, type: String,
                   options: [AnyHashable: Any]?) throws -> NSPersistentStore? {
        reset()
        mappingModel = try NSMappingModel.inferredMappingModel(forSourceModel: sourceModel, destinationModel: destinationModel)
        return try migrate(reading: source, of: coordinator, into: url, type: type, options: options,
                           configuration: source.configurationName, metadata: source.metadata,
                           keepingOpen: type == NSInMemoryStoreType || type == NSBinaryStoreType)
    }

    /// Runs `mappingModel` from `sourceStore` (of `sourceCoordinator`) into a new store made on a
    /// coordinator of its own, and saves it. `metadata` keys the new store's metadata lacks are
    /// added to it. With `keepingOpen`, the new store is detached from that
    /// coordinator and returned open; otherwise it is closed and nil returned. On any failure the
    /// destination files this created are removed and the error thrown.
    private func migrate(reading sourceStore: NSPersistentStore, of sourceCoordinator: NSPersistentStoreCoordinator, into dURL: URL, type dStoreType: String,
                         options dOptions: [AnyHashable: Any]?, configuration: String?, metadata: [String: Any]?, keepingOpen: Bool) throws -> NSPersistentStore? {
        mappingModel.resolveGeneratedExpressions(source: sourceModel, destination: destinationModel)
        shared.withLock { $0.progress = Progress(totalUnitCount: 0) }
        sourceStores = [sourceStore]
        let destinationExisted = FileManager.default.fileExists(atPath: dURL.path)
        let destinationCoordinator = NSPersistentStoreCoordinator(managedObjectModel: destinationModel)
        var destinationStore: NSPersistentStore?
        defer {
            sourceContext = nil
            destinationContext = nil
            sourceStores = nil
        }
        do {
            let store = try destinationCoordinator.addPersistentStore(ofType: dStoreType, configurationName: configuration, at: dURL, options: dOptions)
            destinationStore = store
            let mergedMetadata = metadata.map { metadata in store.metadata.map { $0.merging(metadata) { own, _ in own } } ?? metadata }
            // A store kept open writes its metadata with its saves (an atomic store writes
            // nothing until one); a SQLite file gets it written below.
            if keepingOpen, let mergedMetadata { destinationCoordinator.setMetadata(mergedMetadata, for: store) }
            sourceContext = NSManagedObjectContext(concurrencyType: .confinementConcurrencyType)
            sourceContext.persistentStoreCoordinator = sourceCoordinator
            destinationContext = NSManagedObjectContext(concurrencyType: .confinementConcurrencyType)
            destinationContext.persistentStoreCoordinator = destinationCoordinator
            destinationContext.undoManager = nil
            try runMappings()
            if keepingOpen {
                destinationCoordinator.detach(store)
                return store
            }
            try destinationCoordinator.remove(store)
            destinationStore = nil
            // Written to the file itself: a save with no objects writes nothing.
            if let mergedMetadata { try NSPersistentStoreCoordinator.setMetadata(mergedMetadata, forPersistentStoreOfType: dStoreType, at: dURL) }
            return nil
        } catch {
            // Ignored: cleanup on a failure already being thrown; the destination files are removed next.
            if let destinationStore { try? destinationCoordinator.remove(destinationStore) }
            if !destinationExisted, dStoreType != NSInMemoryStoreType {
                StoreFiles.remove(at: dURL)
            }
            throw migrationError(error, url: sourceStore.url ?? dURL)
        }
    }

    /// Errors keep their Core Data code when they have one in the migration range, and the error
    /// given to `cancelMigrationWithError` is thrown as it is; others (a validation failure of
    /// the migrated objects) are wrapped in `NSMigrationError`.
    private func migrationError(_ error: Error, url: URL) -> Error {
        if let cancellation = shared.withLock({ $0.cancellation }), (cancellation as NSError) === (error as NSError) { return error }
        let nsError = error as NSError
        if nsError.domain == NSCocoaErrorDomain, (134110...134190).contains(nsError.code) { return error }
        return CoreDataError.make(.migration, "The migration of the store at \(url.path) failed: \(nsError.localizedDescription)",
                                  url: url, userInfo: [NSUnderlyingErrorKey: error])
    }

    private func runMappings() throws {
        let mappings = mappingModel.entityMappings ?? []
        var policies: [ObjectIdentifier: NSEntityMigrationPolicy] = [:]
        var sources: [ObjectIdentifier: [NSManagedObject]] = [:]
        for mapping in mappings {
            policies[ObjectIdentifier(mapping)] = try NSEntityMigrationPolicy.policyClass(named: mapping.entityMigrationPolicyClassName).init()
            sources[ObjectIdentifier(mapping)] = try sourceInstances(for: mapping)
        }
        let instanceCount = sources.values.reduce(0) { $0 + Int64($1.count) }
        progress.totalUnitCount = max(1, instanceCount * 2 + Int64(mappings.count))

        for mapping in mappings {
            currentEntityMapping = mapping
            let policy = policies[ObjectIdentifier(mapping)]!
            try policy.begin(mapping, with: self)
            for source in sources[ObjectIdentifier(mapping)] ?? [] {
                try policy.createDestinationInstances(forSource: source, in: mapping, manager: self)
                try step()
            }
            try policy.endInstanceCreation(forMapping: mapping, manager: self)
        }
        for mapping in mappings {
            currentEntityMapping = mapping
            let policy = policies[ObjectIdentifier(mapping)]!
            for destination in created[mapping.name ?? ""] ?? [] {
                try policy.createRelationships(forDestination: destination, in: mapping, manager: self)
            }
            progress.completedUnitCount += Int64(sources[ObjectIdentifier(mapping)]?.count ?? 0)
            try step(units: 0)
            try policy.endRelationshipCreation(forMapping: mapping, manager: self)
        }
        for mapping in mappings {
            currentEntityMapping = mapping
            try policies[ObjectIdentifier(mapping)]!.performCustomValidation(forMapping: mapping, manager: self)
        }
        try destinationContext.save()
        for mapping in mappings {
            currentEntityMapping = mapping
            try policies[ObjectIdentifier(mapping)]!.end(mapping, manager: self)
            try step()
        }
    }

    /// Counts progress and stops a cancelled migration.
    private func step(units: Int64 = 1) throws {
        let (progress, cancellation) = shared.withLock { ($0.progress, $0.cancellation) }
        progress.completedUnitCount += units
        if let cancellation { throw cancellation }
        if progress.isCancelled {
            throw CoreDataError.make(.migrationCancelled, "The migration was cancelled.")
        }
    }

    /// The source instances of a mapping: every instance of its source entity (not of its
    /// subentities, which have mappings of their own), filtered by the mapping's source predicate.
    private func sourceInstances(for mapping: NSEntityMapping) throws -> [NSManagedObject] {
        guard [.customEntityMappingType, .undefinedEntityMappingType, .copyEntityMappingType, .transformEntityMappingType].contains(mapping.mappingType),
              let name = mapping.sourceEntityName, sourceModel.entitiesByName[name] != nil else { return [] }
        let request = NSFetchRequest<NSManagedObject>(entityName: name)
        request.includesSubentities = false
        request.predicate = mapping.sourceFilterPredicate
        request.returnsObjectsAsFaults = false
        request.affectedStores = sourceStores
        return try sourceContext.fetch(request)
    }

    /// Forgets the associations of the last migration.
    open func reset() {
        forward = [:]
        backward = [:]
        created = [:]
        shared.withLock { $0.cancellation = nil }
        currentEntityMapping = nil
    }

    /// Stops the migration: the current `migrateStore` call throws this error.
    open func cancelMigrationWithError(_ error: Error) {
        shared.withLock { $0.cancellation = error }
    }

    /// The source entity of a mapping.
    open func sourceEntity(for mEntity: NSEntityMapping) -> NSEntityDescription? {
        mEntity.sourceEntityName.flatMap { sourceModel.entitiesByName[$0] }
    }

    /// The destination entity of a mapping.
    open func destinationEntity(for mEntity: NSEntityMapping) -> NSEntityDescription? {
        mEntity.destinationEntityName.flatMap { destinationModel.entitiesByName[$0] }
    }

    /// Records that a destination instance was made from a source instance by a mapping.
    open func associate(sourceInstance: NSManagedObject, withDestinationInstance destinationInstance: NSManagedObject, for entityMapping: NSEntityMapping) {
        let name = entityMapping.name ?? ""
        forward[name, default: [:]][sourceInstance.objectID, default: []].append(destinationInstance)
        backward[name, default: [:]][ObjectIdentifier(destinationInstance), default: []].append(sourceInstance)
        created[name, default: []].append(destinationInstance)
    }

    /// The destination instances a mapping made from the given source instances, in their order.
    open func destinationInstances(forEntityMappingName mappingName: String, sourceInstances: [NSManagedObject]?) -> [NSManagedObject] {
        guard let table = forward[mappingName] else { return [] }
        return (sourceInstances ?? []).flatMap { table[$0.objectID] ?? [] }
    }

    /// The source instances a mapping made the given destination instances from.
    open func sourceInstances(forEntityMappingName mappingName: String, destinationInstances: [NSManagedObject]?) -> [NSManagedObject] {
        guard let table = backward[mappingName] else { return [] }
        return (destinationInstances ?? []).flatMap { table[ObjectIdentifier($0)] ?? [] }
    }

    /// The destination instances of the objects a source relationship holds, through whichever
    /// mappings migrate them.
    func destinationInstances(forSourceRelationshipNamed name: String, sourceInstances: [NSManagedObject]) -> [NSManagedObject] {
        sourceInstances.flatMap { source in
            forward.values.flatMap { $0[source.objectID] ?? [] }
        }
    }

    /// The variables of a mapping expression.
    func expressionContext(source: NSManagedObject?, destination: NSManagedObject?, mapping: NSEntityMapping, property: NSPropertyMapping?, policy: NSEntityMigrationPolicy) -> NSMutableDictionary {
        let context = NSMutableDictionary()
        context[NSMigrationManagerKey] = self
        context[NSMigrationEntityMappingKey] = mapping
        context[NSMigrationEntityPolicyKey] = policy
        if let source { context[NSMigrationSourceObjectKey] = source }
        if let destination { context[NSMigrationDestinationObjectKey] = destination }
        if let property { context[NSMigrationPropertyMappingKey] = property }
        return context
    }

    /// `FUNCTION($manager, ...)` in mapping expressions.
    func evaluateFunction(_ selector: String, arguments: [Any?]) -> Any? {
        switch selector {
        case "destinationInstancesForEntityMappingNamed:sourceInstances:":
            guard let name = arguments.first as? String else { return [] }
            return destinationInstances(forEntityMappingName: name, sourceInstances: MigrationValues.managedObjects(in: arguments.dropFirst().first ?? nil))
        case "destinationInstancesForSourceRelationshipNamed:sourceInstances:":
            guard let name = arguments.first as? String else { return [] }
            return destinationInstances(forSourceRelationshipNamed: name, sourceInstances: MigrationValues.managedObjects(in: arguments.dropFirst().first ?? nil))
        case "sourceInstancesForEntityMappingNamed:destinationInstances:":
            guard let name = arguments.first as? String else { return [] }
            return sourceInstances(forEntityMappingName: name, destinationInstances: MigrationValues.managedObjects(in: arguments.dropFirst().first ?? nil))
        case "sourceContext": return sourceContext
        case "destinationContext": return destinationContext
        default: return nil
        }
    }
}
