import Foundation
import Synchronization

/// Connects contexts to stores: it routes fetches to the stores that hold an entity and writes
/// each save to them.
///
/// All store access is serialized by the coordinator's lock.
open class NSPersistentStoreCoordinator: NSObject, @unchecked Sendable, ParentStore {
    /// The model of every store the coordinator uses.
    public let managedObjectModel: NSManagedObjectModel
    /// A name shown in logs.
    public var name: String? {
        get { withLock { nameStorage } }
        set { withLock { nameStorage = newValue } }
    }
    private var nameStorage: String?
    /// The stores, in the order they were added; changed only under the lock (internal for the
    /// extensions in other files, which read it under the lock).
    private(set) var stores: [NSPersistentStore] = []
    private let lock = NSRecursiveLock()
    /// Whether a store added is an `NSIncrementalStore` or an `NSAtomicStore` subclass: contexts
    /// then tell it which context asks (`RequestingContext`). Set under the lock, never unset; read without it.
    var hasIncrementalStores: Bool { incrementalStoresAdded.load(ordering: .acquiring) }
    private let incrementalStoresAdded = Atomic<Bool>(false)
    private var rootContexts: [WeakContext] = []

    /// Creates a coordinator for a model, freezing the model.
    public init(managedObjectModel model: NSManagedObjectModel) {
        self.managedObjectModel = model
        model.freeze()
        EntityClassRegistry.register(model)
    }

    /// The stores, in the order they were added.
    public var persistentStores: [NSPersistentStore] { withLock { stores } }

    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    /// Runs a block with the coordinator locked, waits, and returns its result.
    public func performAndWait<T>(_ block: () throws -> T) rethrows -> T { try withLock(block) }

    /// Runs a block with the coordinator locked, on a background queue.
    public func perform(_ block: @escaping @Sendable () -> Void) {
        DispatchQueue.global().async { self.withLock(block) }
    }

    /// Runs a block with the coordinator locked, on a background queue, and returns its result,
    /// for Swift concurrency. Typed throws stand in for Apple's `rethrows`, as in the context's
    /// `perform(schedule:_:)`.
    public func perform<T, E: Error>(_ block: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let box = UncheckedResultBox<T, E>()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                box.result = self.withLock { () -> Result<T, E> in
                    do throws(E) { return .success(try block()) } catch { return .failure(error) }
                }
                continuation.resume()
            }
        }
        return try box.result!.get()
    }

    // MARK: Adding and removing stores

    /// Opens a store and adds it. Throws Core Data's errors for a missing, corrupt, foreign or
    /// incompatible file, leaving the file untouched.
    @discardableResult
    public func addPersistentStore(ofType storeType: String, configurationName configuration: String?, at storeURL: URL?, options: [AnyHashable: Any]? = nil) throws -> NSPersistentStore {
        let store: NSPersistentStore
        switch storeType {
        case NSSQLiteStoreType:
            guard let storeURL else { throw CoreDataError.make(.invalidType, "A SQLite store needs a file URL.") }
            store = SQLiteStore(model: managedObjectModel, configurationName: configuration, url: storeURL, options: options)
        case NSInMemoryStoreType:
            store = AtomicStore(kind: .inMemory, model: managedObjectModel, configurationName: configuration, url: storeURL, options: options)
        case NSBinaryStoreType:
            guard let storeURL else { throw CoreDataError.make(.invalidType, "A binary store needs a file URL.") }
            store = AtomicStore(kind: .binary, model: managedObjectModel, configurationName: configuration, url: storeURL, options: options)
        default:
            if let connector = SQLServerConnector.connector(forStoreType: storeType) {
                guard let storeURL else { throw CoreDataError.make(.invalidType, "A \(storeType) store needs a URL.") }
                store = SQLServerStore(model: managedObjectModel, configurationName: configuration, url: storeURL, options: options,
                                       connector: connector, storeType: storeType)
                break
            }
            guard let storeClass = Self.registeredStoreClass(forType: storeType) else { throw NSPersistentStoreCoordinator.unknownStoreType(storeType) }
            guard let storeURL else { throw CoreDataError.make(.invalidType, "A store of type '\(storeType)' needs a URL.") }
            store = storeClass.init(registeredFor: self, configurationName: configuration, at: storeURL, options: options)
            store.registeredType = storeType
        }
        if let configuration, managedObjectModel.entities(forConfigurationName: configuration) == nil {
            throw CoreDataError.make(.invalidType, "The model has no configuration named '\(configuration)'.")
        }
        try withLock {
            if let storeURL, storeType != NSInMemoryStoreType, !StoreFiles.isInMemorySQLite(storeURL), stores.contains(where: { $0.url?.standardizedFileURL == storeURL.standardizedFileURL }) {
                throw CoreDataError.make(.openFailed, "The store at \(storeURL.path) is already added to this coordinator.")
            }
            do {
                try store.load()
            } catch let error as NSError where error.domain == NSCocoaErrorDomain && error.code == NSPersistentStoreIncompatibleVersionHashError {
                // Only a store the model can't open pays for the search of its model version.
                guard try StoreMigrator.migrate(type: storeType, url: storeURL, model: managedObjectModel, configuration: configuration, options: options) else { throw error }
                try store.load()
            }
            try attach(store)
        }
        postStoresDidChange(added: [store])
        return store
    }

    /// The store types a coordinator opens.
    static let storeTypes = [NSSQLiteStoreType, NSInMemoryStoreType, NSBinaryStoreType]

    /// The error for a store type no store here has (134000).
    static func unknownStoreType(_ storeType: String) -> NSError {
        CoreDataError.make(.invalidType, "Unknown store type '\(storeType)'. Use NSSQLiteStoreType, NSInMemoryStoreType or NSBinaryStoreType.")
    }

    /// Opens a store with the newer store-type spelling.
    @discardableResult
    public func addPersistentStore(type: NSPersistentStore.StoreType, configuration: String? = nil, at storeURL: URL, options: [AnyHashable: Any]? = nil) throws -> NSPersistentStore {
        try addPersistentStore(ofType: type.rawValue, configurationName: configuration, at: storeURL, options: options)
    }

    /// Opens the store a description describes and calls the handler with the outcome: at once on
    /// the calling thread, or, when the description's `shouldAddStoreAsynchronously` is set, on a
    /// background queue after this method has returned.
    public func addPersistentStore(with description: NSPersistentStoreDescription, completionHandler block: @escaping (NSPersistentStoreDescription, Error?) -> Void) {
        let add = { [self] in
            do {
                try addPersistentStore(ofType: description.type, configurationName: description.configuration, at: description.url, options: description.storedOptions)
                block(description, nil)
            } catch {
                block(description, error)
            }
        }
        guard description.shouldAddStoreAsynchronously else { return add() }
        let work = UncheckedSendable(add)
        DispatchQueue.global().async { work.value() }
    }

    /// Opens the store a description describes: `addPersistentStore(with:completionHandler:)`
    /// awaited. Returns the description, or throws the error the handler got.
    public func addPersistentStore(with description: NSPersistentStoreDescription) async throws -> NSPersistentStoreDescription {
        let outcome = UncheckedSendable(description)
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<UncheckedSendable<NSPersistentStoreDescription>, Error>) in
            addPersistentStore(with: outcome.value) { description, error in
                if let error { continuation.resume(throwing: error) } else { continuation.resume(returning: UncheckedSendable(description)) }
            }
        }.value
    }

    /// Removes a store from the coordinator and closes it.
    public func remove(_ store: NSPersistentStore) throws {
        let present = withLock { stores.contains { $0 === store } }
        if present { NotificationCenter.default.post(name: .NSPersistentStoreCoordinatorWillRemoveStore, object: store) }
        defer { if present { postStoresDidChange(removed: [store]) } }
        withLock {
            store.willRemove(from: self)
            stores.removeAll { $0 === store }
            store.close()
            store.persistentStoreCoordinator = nil
        }
    }

    /// Takes an open store out of the coordinator without closing it, to be attached to another
    /// (see `migratePersistentStore`).
    func detach(_ store: NSPersistentStore) {
        withLock {
            stores.removeAll { $0 === store }
            store.persistentStoreCoordinator = nil
        }
    }

    /// Adds an open store: one just loaded, or one detached from another coordinator of the same
    /// model. A store that fails to start (`didAttach(to:)`) is closed and not added.
    func attach(_ store: NSPersistentStore) throws {
        try withLock {
            store.persistentStoreCoordinator = self
            do {
                try store.didAttach(to: self)
            } catch {
                store.close()
                store.persistentStoreCoordinator = nil
                throw error
            }
            PersistentStoreRegistry.register(store)
            stores.append(store)
            if store is NSIncrementalStore || store is NSAtomicStore { incrementalStoresAdded.store(true, ordering: .releasing) }
        }
        store.didAdd(to: self)
    }

    /// The store at a URL, if added.
    public func persistentStore(for url: URL) -> NSPersistentStore? {
        withLock { stores.first { $0.url?.standardizedFileURL == url.standardizedFileURL } }
    }

    /// The URL of a store.
    public func url(for store: NSPersistentStore) -> URL {
        store.url ?? URL(fileURLWithPath: "/dev/null")
    }

    /// The metadata of an added store.
    public func metadata(for store: NSPersistentStore) -> [String: Any] {
        store.metadata ?? [:]
    }

    /// Replaces the metadata of an added store; written at the next save (SQLite and binary stores
    /// write their metadata with every save).
    public func setMetadata(_ metadata: [String: Any]?, for store: NSPersistentStore) {
        withLock {
            store.metadata = metadata ?? [:]
        }
    }

    /// The metadata of a store file, without adding it.
    public class func metadataForPersistentStore(ofType storeType: String, at url: URL, options: [AnyHashable: Any]? = nil) throws -> [String: Any] {
        switch storeType {
        case NSSQLiteStoreType: return try SQLiteStore.readMetadata(at: url)
        case NSBinaryStoreType: return try AtomicStore.readMetadata(at: url)
        default:
            // A registered class reads its own files (an `NSAtomicStore` subclass overrides the class method).
            guard let storeClass = registeredStoreClass(forType: storeType), storeClass.readsOwnMetadata else {
                throw CoreDataError.make(.invalidType, "Unknown store type '\(storeType)'.")
            }
            return try storeClass.metadataForPersistentStore(with: url)
        }
    }

    /// Runs a request for a context, as the context would: a fetch request returns its results
    /// (an array of the request's result type), a save request saves the context and returns an
    /// empty array, a batch or asynchronous request returns its result. Call it on the context's
    /// queue.
    @discardableResult
    public func execute(_ request: NSPersistentStoreRequest, with context: NSManagedObjectContext) throws -> Any {
        switch request {
        case let fetch as NSFetchRequest<NSFetchRequestResult>:
            return try context.fetch(fetch)
        case is NSSaveChangesRequest:
            try context.save()
            return [Any]()
        default:
            return try context.execute(request)
        }
    }

    /// Deletes a store's files (Apple's newer store-type spelling).
    public func destroyPersistentStore(at url: URL, type storeType: NSPersistentStore.StoreType, options: [AnyHashable: Any]? = nil) throws {
        try destroyPersistentStore(at: url, ofType: storeType.rawValue, options: options)
    }

    /// Deletes a store's files (for SQLite: the database, its WAL and shared-memory files).
    public func destroyPersistentStore(at url: URL, ofType storeType: String, options: [AnyHashable: Any]? = nil) throws {
        try withLock {
            if let store = stores.first(where: { $0.url?.standardizedFileURL == url.standardizedFileURL }) { try remove(store) }
            // An in-memory SQLite store has no files; /dev/null itself is never removed.
            guard !StoreFiles.isInMemorySQLite(url) else { return }
            for suffix in [""] + StoreFiles.sideFileSuffixes {
                let path = url.path + suffix
                if FileManager.default.fileExists(atPath: path) { try FileManager.default.removeItem(atPath: path) }
            }
        }
    }

    // MARK: IDs

    /// The object ID a URI string from `uriRepresentation().absoluteString` names, if its store is
    /// added; nil for any other string.
    public func managedObjectID(for string: String) -> NSManagedObjectID? {
        URL(string: string).flatMap(managedObjectID(forURIRepresentation:))
    }

    /// The object ID a URI from `uriRepresentation()` names, if its store is added.
    public func managedObjectID(forURIRepresentation url: URL) -> NSManagedObjectID? {
        guard url.scheme == "x-coredata", let host = url.host else { return nil }
        let parts = url.path.split(separator: "/")
        guard parts.count == 2, parts[1].hasPrefix("p"), let pk = Int64(parts[1].dropFirst()) else { return nil }
        return withLock {
            guard let store = stores.first(where: { $0.identifier == host }),
                  let entity = managedObjectModel.entitiesByName[String(parts[0])] else { return nil }
            return store.objectID(for: entity, primaryKey: pk)
        }
    }

    func store(for entity: NSEntityDescription, among affected: [NSPersistentStore]? = nil) -> NSPersistentStore? {
        (affected ?? stores).first { $0.holds(entity) }
    }

    func store(for objectID: NSManagedObjectID) -> NSPersistentStore? {
        if let identifier = objectID.storeIdentifier { return stores.first { $0.identifier == identifier } }
        if objectID.assignedStoreNumber != 0 { return stores.first { $0.storeNumber == objectID.assignedStoreNumber } }
        return store(for: objectID.entity)
    }

    func obtainPermanentIDs(for ids: [NSManagedObjectID]) throws -> PermanentIDs {
        try withLock {
            var mapping: PermanentIDs = [:]
            // By entity and store: an object `assign(_:to:)` put in a store takes its key there.
            // An incremental store is asked once for all its objects, as Apple's Core Data does.
            let groups = Dictionary(grouping: ids) { id -> [ObjectIdentifier?] in
                let store = store(for: id)
                return [store is NSIncrementalStore ? nil : ObjectIdentifier(id.entity), store.map(ObjectIdentifier.init)]
            }
            for group in groups.values {
                guard let store = store(for: group[0]) else { throw noStore(for: group[0].entity) }
                let keys = try store.permanentKeys(for: group)
                for (id, key) in zip(group, keys) { mapping.assign(primaryKey: key, of: id.entity, in: store.objectIDFactory, to: id.key) }
            }
            return mapping
        }
    }

    private func noStore(for entity: NSEntityDescription) -> NSError {
        CoreDataError.make(.coreData, "No persistent store holds entity '\(entity.name ?? "?")': add a store (whose configuration includes it) before using it.")
    }

    // MARK: ParentStore

    /// Runs a read on what `choose` picks (under the coordinator's lock): after letting the lock go
    /// when `concurrent` says every store picked answers reads from several threads at once (a
    /// server store, `answersConcurrentReads`), so that contexts on one coordinator fetch in
    /// parallel; under it otherwise. A thread already holding the lock (a save resolving
    /// conflicts) keeps it.
    private func read<Targets, T>(_ choose: () -> Targets, concurrent: (Targets) -> Bool, _ body: (Targets) throws -> T) throws -> T {
        lock.lock()
        let targets = choose()
        if concurrent(targets) {
            lock.unlock()
            return try body(targets)
        }
        defer { lock.unlock() }
        return try body(targets)
    }

    /// `read` on stores: concurrent when there are some and each answers reads concurrently.
    private func read<T>(_ choose: () -> [NSPersistentStore], _ body: ([NSPersistentStore]) throws -> T) throws -> T {
        try read(choose, concurrent: { !$0.isEmpty && $0.allSatisfy(\.answersConcurrentReads) }, body)
    }

    /// `read` on one store (no array made: faults call this once per object).
    private func read<T>(one choose: () -> NSPersistentStore?, _ body: (NSPersistentStore?) throws -> T) throws -> T {
        try read(choose, concurrent: { $0?.answersConcurrentReads ?? false }, body)
    }

    /// `read` on IDs grouped by their stores.
    private func read<T>(groups objectIDs: [NSManagedObjectID], _ body: ([(store: NSPersistentStore, ids: [NSManagedObjectID])]) throws -> T) throws -> T {
        try read({ storeGroups(objectIDs) }, concurrent: { !$0.isEmpty && $0.allSatisfy(\.store.answersConcurrentReads) }, body)
    }

    /// The stores holding an entity, among the request's affected stores.
    private func stores(for request: NSFetchRequest<NSFetchRequestResult>, holding entity: NSEntityDescription) -> [NSPersistentStore] {
        (request.affectedStores ?? stores).filter { $0.holds(entity) }
    }

    func fetchRows(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription) throws -> FetchedRows {
        try read({ stores(for: request, holding: entity) }) { targets in
            if targets.count == 1 { return try targets[0].fetchRows(request, entity: entity) }
            var rows = FetchedRows()
            for store in targets { rows.append(contentsOf: try store.fetchRows(request, entity: entity)) }
            return rows
        }
    }

    /// Sorted results in columnar form, when one store holds the entity and can read them so.
    func fetchSortedRows(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription,
                         sectionNameKeyPath: String?, chunkSize: Int) throws -> SortedRows? {
        try read({ stores(for: request, holding: entity) }) { targets in
            guard targets.count == 1 else { return nil }
            return try targets[0].fetchSortedRows(request, entity: entity, sectionNameKeyPath: sectionNameKeyPath, chunkSize: chunkSize)
        }
    }

    func countRows(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription) throws -> Int {
        try read({ stores(for: request, holding: entity) }) { targets in
            try targets.reduce(0) { $0 + (try $1.countRows(request, entity: entity)) }
        }
    }

    func fetchDictionaries(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription) throws -> [[String: Any]] {
        try read({ stores(for: request, holding: entity) }) { targets in
            try targets.flatMap { try $0.fetchDictionaries(request, entity: entity) }
        }
    }

    func loadRow(_ objectID: NSManagedObjectID) throws -> StoredRow? {
        try read(one: { store(for: objectID) }) { try $0?.loadRow(objectID) }
    }

    /// IDs grouped by the store that holds them (IDs of no store left out).
    private func storeGroups(_ objectIDs: [NSManagedObjectID]) -> [(store: NSPersistentStore, ids: [NSManagedObjectID])] {
        Dictionary(grouping: objectIDs, by: { $0.storeIdentifier ?? "" }).values.compactMap { group in store(for: group[0]).map { ($0, group) } }
    }

    func loadRows(_ objectIDs: [NSManagedObjectID]) throws -> [ObjectKey: StoredRow] {
        try read(groups: objectIDs) { groups in
            var rows: [ObjectKey: StoredRow] = [:]
            for group in groups { rows.merge(try group.store.loadRows(group.ids)) { first, _ in first } }
            return rows
        }
    }

    func loadToManyIDs(_ objectIDs: [NSManagedObjectID], relationship: NSRelationshipDescription) throws -> [ObjectKey: [NSManagedObjectID]] {
        try read(groups: objectIDs) { groups in
            var result: [ObjectKey: [NSManagedObjectID]] = [:]
            for group in groups { result.merge(try group.store.loadToManyIDs(group.ids, relationship: relationship)) { first, _ in first } }
            return result
        }
    }

    func loadToManyIDs(_ objectID: NSManagedObjectID, relationship: NSRelationshipDescription) throws -> [NSManagedObjectID] {
        try read(one: { store(for: objectID) }) { try $0?.loadToManyIDs(objectID, relationship: relationship) ?? [] }
    }

    func holdingWrites<T>(_ body: () throws -> T) throws -> T {
        try withLock {
            /// Each writable store's writes held in turn, in the order the stores were added.
            func hold(_ remaining: ArraySlice<NSPersistentStore>) throws -> T {
                guard let store = remaining.first else { return try body() }
                return try store.holdingWrites { try hold(remaining.dropFirst()) }
            }
            return try hold(stores.filter { !$0.isReadOnly }[...])
        }
    }

    func applyChanges(_ changes: SaveChanges, from context: NSManagedObjectContext) throws -> PermanentIDs {
        try withLock {
            // Records grouped by store (a model rarely spans more than a few, so a linear search).
            // A save's records come in runs of one entity or store: the last answer is kept.
            var targets: [NSPersistentStore] = []
            var cachedEntity: NSEntityDescription?
            var cachedEntityIndex = 0
            var cachedIdentifier: String?
            var cachedIdentifierIndex = 0
            func target(of record: SaveRecord) throws -> Int {
                let identifier = record.objectID.storeIdentifier
                // An object assigned to a store (`assign(_:to:)`) goes there, not to the entity's.
                let assigned = record.objectID.assignedStoreNumber != 0
                if let identifier {
                    if identifier == cachedIdentifier { return cachedIdentifierIndex }
                } else if !assigned, record.entity === cachedEntity {
                    return cachedEntityIndex
                }
                guard let store = store(for: record.objectID) else { throw noStore(for: record.entity) }
                let index: Int
                if let existing = targets.firstIndex(where: { $0 === store }) {
                    index = existing
                } else {
                    if store.isReadOnly {
                        throw CoreDataError.make(.saveFailed, "The store at \(store.url?.path ?? "memory") is read-only.")
                    }
                    targets.append(store)
                    index = targets.count - 1
                }
                if let identifier {
                    cachedIdentifier = identifier
                    cachedIdentifierIndex = index
                } else if !assigned {
                    cachedEntity = record.entity
                    cachedEntityIndex = index
                }
                return index
            }
            let insertedTargets = try changes.inserted.map(target)
            let updatedTargets = try changes.updated.map(target)
            let deletedTargets = try changes.deleted.map(target)
            let checkedTargets = try changes.checked.map(target)
            // One store (the usual case): the changes go to it as they are.
            if targets.count == 1 { return try targets[0].save(changes) }
            var groups = Array(repeating: changes, count: targets.count)
            for index in groups.indices {
                groups[index].inserted = zip(changes.inserted, insertedTargets).filter { $0.1 == index }.map(\.0)
                groups[index].updated = zip(changes.updated, updatedTargets).filter { $0.1 == index }.map(\.0)
                groups[index].deleted = zip(changes.deleted, deletedTargets).filter { $0.1 == index }.map(\.0)
                groups[index].checked = zip(changes.checked, checkedTargets).filter { $0.1 == index }.map(\.0)
            }
            var mapping: PermanentIDs = [:]
            for (store, storeChanges) in zip(targets, groups) {
                mapping.merge(try store.save(storeChanges))
            }
            return mapping
        }
    }

    // MARK: Contexts

    func register(_ context: NSManagedObjectContext) {
        withLock {
            rootContexts.removeAll { $0.context == nil }
            rootContexts.append(context.link)
        }
    }

    func forget(_ context: NSManagedObjectContext) {
        withLock { rootContexts.removeAll { $0.context == nil || $0.context === context } }
        contextDidForgetObjects(context)
    }

    /// A root context let go of its objects (reset, or freed): stores that track the objects in
    /// use (incremental stores) are told.
    func contextDidForgetObjects(_ context: NSManagedObjectContext) {
        guard hasIncrementalStores else { return }
        let identifier = ObjectIdentifier(context)
        for store in withLock({ stores }) { store.contextDidForgetObjects(identifier) }
    }

    /// After a root context saved: contexts that merge automatically catch up.
    func contextDidSave(_ ids: SavedObjectIDs, from source: NSManagedObjectContext) {
        let contexts = withLock { rootContexts.compactMap(\.context) }
        for context in contexts where context !== source && context.automaticallyMergesChangesFromParent {
            context.parentDidSave(ids)
        }
        source.notifyChildrenOfSave(ids)
    }
}
