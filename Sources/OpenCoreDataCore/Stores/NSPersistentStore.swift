import Foundation
import Synchronization

/// The type string of the SQLite store.
public let NSSQLiteStoreType = "SQLite"
/// The type string of the in-memory store.
public let NSInMemoryStoreType = "InMemory"
/// The type string of the binary (atomic) store.
public let NSBinaryStoreType = "Binary"

/// Metadata key: the store's unique identifier.
public let NSStoreUUIDKey = "NSStoreUUID"
/// Metadata key: the store's type.
public let NSStoreTypeKey = "NSStoreType"
/// Metadata key: the version hashes of the model the store was written with, by entity name.
public let NSStoreModelVersionHashesKey = "NSStoreModelVersionHashes"
/// Metadata key: the model version identifiers the store was written with.
public let NSStoreModelVersionIdentifiersKey = "NSStoreModelVersionIdentifiers"
/// Metadata key: the Core Data framework version that wrote the store.
public let NSPersistenceFrameworkVersionKey = "NSPersistenceFrameworkVersion"
/// Metadata key: a checksum of the model's entity version hashes (the model's `versionChecksum`).
public let NSStoreModelVersionChecksumKey = "NSStoreModelVersionChecksumKey"
/// The same metadata key under Apple's later name.
public let NSPersistentStoreModelVersionChecksumKey = NSStoreModelVersionChecksumKey
/// Metadata key: the version of the recipe behind the recorded version hashes (3).
let NSStoreModelVersionHashesVersionKey = "NSStoreModelVersionHashesVersion"
/// Metadata key: a digest of the recorded entity names and version hashes.
let NSStoreModelVersionHashesDigestKey = "NSStoreModelVersionHashesDigest"
/// The Core Data framework version whose store format OpenCoreData writes, recorded in metadata.
let openCoreDataFrameworkVersion = 1344

/// A place objects are kept: a SQLite file, memory, or a binary file.
///
/// Subclasses implement the internal engine methods; users get stores from a coordinator, or
/// write their own as `NSIncrementalStore` subclasses. Not `Sendable`, as Apple's: a store is set
/// up while being added, then used only under its coordinator's lock (the built-in stores, which
/// other threads reach through object IDs, say `@unchecked Sendable` themselves).
open class NSPersistentStore: NSObject {
    /// The store types, Apple's newer spelling.
    public struct StoreType: RawRepresentable, Hashable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The SQLite store.
        public static let sqlite = StoreType(rawValue: NSSQLiteStoreType)
        /// The in-memory store.
        public static let inMemory = StoreType(rawValue: NSInMemoryStoreType)
        /// The binary store.
        public static let binary = StoreType(rawValue: NSBinaryStoreType)
    }

    /// The store's type string (for a registered class, the type it was added as).
    open var type: String { registeredType }
    /// The type a registered class's store was added as.
    final var registeredType = ""
    /// The store's file (nil or `/dev/null` for an in-memory store).
    open var url: URL?
    /// The store's unique identifier (its `NSStoreUUID`).
    open var identifier: String! {
        didSet { storeNumberCache.store(0, ordering: .releasing) }
    }
    /// The model configuration the store holds.
    open var configurationName: String
    /// The options the store was added with.
    public let options: [AnyHashable: Any]?
    /// Whether saving to the store is refused.
    open var isReadOnly: Bool
    /// The coordinator that uses the store.
    public internal(set) weak var persistentStoreCoordinator: NSPersistentStoreCoordinator?
    /// The store's metadata.
    open var metadata: [String: Any]!

    /// The model of the store's coordinator (set when the store is made).
    final var model: NSManagedObjectModel

    /// Creates a store for a coordinator. Subclasses (an `NSIncrementalStore`) override it to
    /// set up their own state; a coordinator makes a registered class's stores through it.
    public init(persistentStoreCoordinator root: NSPersistentStoreCoordinator?, configurationName name: String?, at url: URL, options: [AnyHashable: Any]? = nil) {
        self.model = root?.managedObjectModel ?? NSPersistentStore.placeholderModel
        self.configurationName = name ?? "PF_DEFAULT_CONFIGURATION_NAME"
        self.url = url
        self.options = options
        self.isReadOnly = (options?[NSReadOnlyPersistentStoreOption] as? Bool) ?? false
        super.init()
        self.persistentStoreCoordinator = root
    }

    /// Makes a store of a class registered with `NSPersistentStoreCoordinator.registerStoreClass`:
    /// the coordinator's way of calling the class's `init(persistentStoreCoordinator:configurationName:at:options:)`.
    public required convenience init(registeredFor coordinator: NSPersistentStoreCoordinator, configurationName name: String?, at url: URL, options: [AnyHashable: Any]?) {
        self.init(persistentStoreCoordinator: coordinator, configurationName: name, at: url, options: options)
    }

    /// A store of the built-in kinds, for a model (with or without a coordinator yet).
    convenience init(model: NSManagedObjectModel, configurationName: String?, url: URL?, options: [AnyHashable: Any]?) {
        self.init(persistentStoreCoordinator: nil, configurationName: configurationName, at: url ?? URL(fileURLWithPath: "/dev/null"), options: options)
        self.model = model
        self.url = url
    }

    // MARK: Metadata of a file

    /// The metadata of the store file at a URL, without adding it. A subclass that keeps its own
    /// files (an `NSAtomicStore`) overrides it to read them; this one reads SQLite and binary stores.
    open class func metadataForPersistentStore(with url: URL) throws -> [String: Any] {
        try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: try NSPersistentStoreCoordinator.storeType(ofFileAt: url), at: url)
    }

    /// Replaces the metadata of the store file at a URL, without adding it. A subclass that keeps
    /// its own files (an `NSAtomicStore`) overrides it; this one writes SQLite and binary stores.
    open class func setMetadata(_ metadata: [String: Any]?, forPersistentStoreAt url: URL) throws {
        try NSPersistentStoreCoordinator.setMetadata(metadata, forPersistentStoreOfType: try NSPersistentStoreCoordinator.storeType(ofFileAt: url), at: url)
    }

    /// The class of migration manager that migrates stores of this type: `NSMigrationManager`.
    open class func migrationManagerClass() -> AnyClass { NSMigrationManager.self }

    /// Loads the store's metadata. The built-in stores read theirs when added, so this does
    /// nothing; an `NSIncrementalStore` subclass overrides it.
    open func loadMetadata() throws {}

    /// The model of a store made without a coordinator until its real one is set.
    private static let placeholderModel = NSManagedObjectModel()

    /// The entities this store holds.
    var entities: [NSEntityDescription] {
        model.entities(forConfigurationName: configurationName) ?? model.entities
    }

    /// Whether the store holds objects of an entity.
    func holds(_ entity: NSEntityDescription) -> Bool {
        entities.contains { $0 === entity }
    }

    /// The metadata a new store starts with.
    func initialMetadata() -> [String: Any] {
        var metadata = StoreModelMatching.modelKeys(for: entities, versionIdentifiers: model.versionIdentifiers)
        metadata[NSStoreUUIDKey] = UUID().uuidString
        metadata[NSStoreTypeKey] = type
        return metadata
    }

    /// Throws 513 (`CoreDataError.storeFailure`) when a store file that will be written can't be:
    /// the file exists and isn't writable, or its existing directory isn't (saves create the
    /// SQLite store's `-wal`/`-shm` files and the binary store's temporary file there). Checked
    /// when adding a store without `NSReadOnlyPersistentStoreOption`, before the file is read.
    func checkWritable(_ url: URL) throws {
        let directory = url.deletingLastPathComponent().path
        let problem: String?
        if FileManager.default.fileExists(atPath: url.path) && access(url.path, W_OK) != 0 {
            problem = "the file is not writable"
        } else if FileManager.default.fileExists(atPath: directory) && access(directory, W_OK) != 0 {
            problem = "its directory \(directory) is not writable"
        } else {
            problem = nil
        }
        guard let problem else { return }
        throw CoreDataError.storeFailure(.noPermission, during: .opening, url: url,
                                         detail: "\(problem); add it with NSReadOnlyPersistentStoreOption to read it")
    }

    // MARK: Engine (overridden by each store)

    func load() throws {}
    func close() {}
    func fetchRows(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription) throws -> FetchedRows { FetchedRows() }
    func countRows(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription) throws -> Int { 0 }
    func fetchDictionaries(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription) throws -> [[String: Any]] { [] }
    /// Sorted results in columnar form (keys, sort values, section runs), read in chunks of
    /// `chunkSize` rows; nil when the store can't read them that way.
    func fetchSortedRows(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription,
                         sectionNameKeyPath: String?, chunkSize: Int) throws -> SortedRows? { nil }
    func loadRow(_ objectID: NSManagedObjectID) throws -> StoredRow? { nil }
    func loadToManyIDs(_ objectID: NSManagedObjectID, relationship: NSRelationshipDescription) throws -> [NSManagedObjectID] { [] }
    /// The destinations of a to-many relationship for several sources; stores that can read them in one query override this.
    func loadToManyIDs(_ objectIDs: [NSManagedObjectID], relationship: NSRelationshipDescription) throws -> [ObjectKey: [NSManagedObjectID]] {
        var result: [ObjectKey: [NSManagedObjectID]] = [:]
        for id in objectIDs { result[id.key] = try loadToManyIDs(id, relationship: relationship) }
        return result
    }
    /// The rows of several objects; stores that can read them in one query override this.
    func loadRows(_ objectIDs: [NSManagedObjectID]) throws -> [ObjectKey: StoredRow] {
        var rows: [ObjectKey: StoredRow] = [:]
        for id in objectIDs { rows[id.key] = try loadRow(id) }
        return rows
    }
    /// Writes a save all or nothing; returns the permanent IDs given to inserted objects.
    func save(_ changes: SaveChanges) throws -> PermanentIDs { [:] }
    /// Runs `body` with the store's file held for writing by this store alone: reads and saves
    /// inside it see and make one transaction. Stores whose file no other writer can change while
    /// the coordinator's lock is held (the in-memory and binary stores) just run it.
    func holdingWrites<T>(_ body: () throws -> T) throws -> T { try body() }
    /// Runs a batch update, delete or insert request; `author` goes into its history record.
    func executeBatch(_ request: NSPersistentStoreRequest, entity: NSEntityDescription, author: TransactionAuthor) throws -> NSPersistentStoreResult {
        throw CoreDataError.make(.unsupportedRequest, "The \(type) store does not support \(Swift.type(of: request)).")
    }
    /// Reserves primary keys for new objects of an entity.
    func allocatePrimaryKeys(for entity: NSEntityDescription, count: Int) throws -> [Int64] { [] }
    /// The primary keys of the permanent IDs for inserted objects of one entity (the coordinator's
    /// `obtainPermanentIDs`); an incremental store asks its subclass for the IDs.
    func permanentKeys(for ids: [NSManagedObjectID]) throws -> [Int64] {
        guard let first = ids.first else { return [] }
        return try allocatePrimaryKeys(for: first.entity, count: ids.count)
    }
    /// A context let go of its objects (it was reset or freed).
    func contextDidForgetObjects(_ context: ObjectIdentifier) {}

    /// Whether the store records persistent history.
    var tracksHistory: Bool { false }
    /// Whether the store answers reads (fetches, counts, faults) from several threads at once, so
    /// the coordinator runs them outside its lock. Writes stay under it.
    var answersConcurrentReads: Bool { false }
    /// Called once the store belongs to a coordinator: starts what the store's options ask for
    /// that needs the coordinator (remote change notifications).
    func didAttach(to coordinator: NSPersistentStoreCoordinator) throws {}

    /// Called after the store was added to a coordinator; subclasses may override it.
    open func didAdd(to coordinator: NSPersistentStoreCoordinator) {}

    /// Called before the store is removed from its coordinator; subclasses may override it.
    open func willRemove(from coordinator: NSPersistentStoreCoordinator?) {}

    /// A token that changes whenever the store's content changes (for caches of results).
    func changeToken() -> String {
        guard let path = url?.path, type != NSInMemoryStoreType else { return "\(identifier ?? "")-memory-\(UUID())" }
        // Ignored: no file yet (nothing saved) gives the token of an empty store.
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        let date = (attributes?[.modificationDate] as? Date)?.timeIntervalSinceReferenceDate ?? 0
        return "\(identifier ?? "")-\(date)-\((attributes?[.size] as? Int) ?? 0)"
    }

    /// A permanent ID in this store.
    @inline(__always)
    final func objectID(for entity: NSEntityDescription, primaryKey: Int64) -> NSManagedObjectID {
        objectIDFactory.objectID(for: entity, primaryKey: primaryKey)
    }

    /// A small number identifying this store within the process, part of its objects' keys: the
    /// same for every store with this identifier, so two coordinators on one file make equal IDs.
    final var storeNumber: Int {
        let cached = storeNumberCache.load(ordering: .acquiring)
        if cached != 0 { return cached }
        // Every thread computes the same number for the identifier, so whichever store lands is right.
        let number = PersistentStoreRegistry.number(for: identifier ?? "")
        storeNumberCache.store(number, ordering: .releasing)
        return number
    }
    /// `storeNumber` once known (0 until then; identifiers are numbered from 1). Fetches on
    /// several contexts' queues read it, so it is atomic.
    private let storeNumberCache = Atomic<Int>(0)

    /// Makes permanent IDs in this store for many rows, with the store's identifier and number read once.
    final var objectIDFactory: ObjectIDFactory { ObjectIDFactory(storeIdentifier: identifier, storeNumber: storeNumber) }
}

/// Makes permanent IDs of one store (see `NSPersistentStore.objectIDFactory`).
struct ObjectIDFactory {
    let storeIdentifier: String
    let storeNumber: Int

    init(storeIdentifier: String, storeNumber: Int) {
        self.storeIdentifier = storeIdentifier
        self.storeNumber = storeNumber
    }

    /// The factory of the store `PersistentStoreRegistry` numbered `storeNumber` (still right
    /// after that store has left its coordinator).
    init(storeNumber: Int) {
        self.init(storeIdentifier: PersistentStoreRegistry.identifier(forNumber: storeNumber), storeNumber: storeNumber)
    }

    @inline(__always)
    func objectID(for entity: NSEntityDescription, primaryKey: Int64) -> NSManagedObjectID {
        NSManagedObjectID(entity: entity, storeIdentifier: storeIdentifier, storeNumber: storeNumber, primaryKey: primaryKey)
    }

    /// The key of the ID `objectID(for:primaryKey:)` makes, without making it.
    @inline(__always)
    func key(for entity: NSEntityDescription, primaryKey: Int64) -> ObjectKey {
        ObjectKey(primaryKey: primaryKey, of: entity, store: storeNumber)
    }
}

/// Finds stores by identifier, for `NSManagedObjectID.persistentStore`.
enum PersistentStoreRegistry {
    // Sendable: the reference is set once, in `init`, and the store it points to is Sendable.
    private final class WeakStore: @unchecked Sendable {
        weak var store: NSPersistentStore?
        init(_ store: NSPersistentStore) { self.store = store }
    }

    /// By identifier, the open stores with that identifier in the order they were added: several
    /// coordinators may have the same file open.
    private static let stores = LockedValue<[String: [WeakStore]]>([:])
    /// Store numbers by identifier, and identifiers by number (`identifiers[number - 1]`).
    private static let numbers = LockedValue<(byIdentifier: [String: Int], identifiers: [String])>(([:], []))

    /// A process-wide number for a store identifier (the same identifier always gets the same number).
    static func number(for identifier: String) -> Int {
        numbers.withLock { numbers in
            if let number = numbers.byIdentifier[identifier] { return number }
            numbers.identifiers.append(identifier)
            let number = numbers.identifiers.count
            numbers.byIdentifier[identifier] = number
            return number
        }
    }

    /// The identifier `number(for:)` numbered `number`.
    static func identifier(forNumber number: Int) -> String {
        numbers.withLock { numbers in
            coreDataPrecondition(number >= 1 && number <= numbers.identifiers.count, "No store was numbered \(number).")
            return numbers.identifiers[number - 1]
        }
    }

    /// Records an added store (once; stores gone or removed from their coordinator are dropped).
    static func register(_ store: NSPersistentStore) {
        guard let identifier = store.identifier else { return }
        stores.withLock { stores in
            var entries = (stores[identifier] ?? []).filter { $0.store.map { $0 !== store && $0.persistentStoreCoordinator != nil } ?? false }
            entries.append(WeakStore(store))
            stores[identifier] = entries
        }
    }

    /// The most recently added store with an identifier that is still open in a coordinator.
    static func store(withIdentifier identifier: String) -> NSPersistentStore? {
        stores.withLock { stores in
            stores[identifier]?.reversed().lazy.compactMap(\.store).first { $0.persistentStoreCoordinator != nil }
        }
    }
}
