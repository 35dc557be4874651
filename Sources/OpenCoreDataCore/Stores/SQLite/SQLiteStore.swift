import Foundation
import GRDB
import GRDBSQLite

/// The SQLite store: incremental, in WAL mode (unless `NSSQLitePragmasOption` sets `journal_mode`),
/// in Core Data's on-disk layout (see `SQLiteSchema`).
///
/// Fetches run in SQLite (filtering, sorting, limits); rows are decoded with the raw statement
/// handle. A save is one immediate transaction: primary keys, inserts, updates, deletes and join
/// rows commit together or not at all.
/// Unchecked Sendable: its caches (select and write plans) are used only under its coordinator's
/// lock; the database itself is serialized by its GRDB queue.
final class SQLiteStore: NSPersistentStore, @unchecked Sendable {
    override var type: String { NSSQLiteStoreType }

    private var database: DatabaseQueue!
    private(set) var schema: SQLiteSchema!
    /// The persistent history, when the store was added with `NSPersistentHistoryTrackingKey`.
    private(set) var history: SQLiteHistory?
    private var remoteChangeWatcher: RemoteChangeWatcher?
    /// The comparisons this store's queries hand to SQLite (`OCD_MATCH`).
    let predicateRegistry = SQLPredicateRegistry()

    static let sqliteHeader = Array("SQLite format 3\0".utf8)

    // MARK: Opening

    override func load() throws {
        guard let url else { throw CoreDataError.make(.invalidType, "A SQLite store needs a URL.") }
        if StoreFiles.isInMemorySQLite(url) {
            try loadInMemory()
            return
        }
        let path = url.path
        if !isReadOnly { try checkWritable(url) }
        let exists = FileManager.default.fileExists(atPath: path)
        let isEmpty = try exists && ((FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0) == 0
        if exists && !isEmpty {
            // A read-only store decides once how its file is read (copying it at most once): the
            // check and the store's connection both read it that way.
            if isReadOnly { readOnlyFile = try SQLiteReadOnlyFile(url) }
            let storedNumbers = try Self.validateExistingStore(at: url, model: model, entities: entities, reading: readOnlyFile)
            schema = SQLiteSchema(entities: entities, storedNumbers: storedNumbers.numbers)
            schema.keepEntityColumns(presentIn: storedNumbers.columns)
            derivedAttributes = try SQLiteDerivedAttributes(schema: schema)
            metadata = storedNumbers.metadata
            try open(url)
            try addMissingEntities(storedNumbers.numbers)
            try recordVersionHashesIfLegacy()
        } else {
            guard !isReadOnly else {
                if isEmpty { throw CoreDataError.make(.invalidType, "The file at \(path) is empty, so it holds no store.", url: url) }
                throw CoreDataError.make(.openFailed, "The read-only store at \(path) does not exist.", url: url)
            }
            schema = SQLiteSchema(entities: entities, storedNumbers: [:])
            derivedAttributes = try SQLiteDerivedAttributes(schema: schema)
            try open(url)
            try createStore()
        }
        identifier = metadata[NSStoreUUIDKey] as? String ?? UUID().uuidString
        try runMaintenanceAskedFor()
        try addHistoryIfAskedFor()
    }

    /// A store at `/dev/null` (Apple's in-memory SQLite store, the usual test stack): a new, empty
    /// database of its own in memory, with everything a file store has but files.
    private func loadInMemory() throws {
        schema = SQLiteSchema(entities: entities, storedNumbers: [:])
        derivedAttributes = try SQLiteDerivedAttributes(schema: schema)
        do {
            database = try DatabaseQueue(configuration: connectionConfiguration(walUnlessAsked: false))
        } catch {
            throw Self.translate(error, url: url, during: .opening)
        }
        // Only files are read for their own model (migration, `cachedModel(ofStoreAt:)`).
        try createStore(keepingModel: false)
        identifier = metadata[NSStoreUUIDKey] as? String ?? UUID().uuidString
        try addHistoryIfAskedFor()
    }

    /// Creates the persistent history tables when the options ask for history.
    private func addHistoryIfAskedFor() throws {
        if Self.wantsHistory(options) {
            let history = SQLiteHistory(schema: schema)
            if !isReadOnly { try write { db in try history.createTables(db) } }
            self.history = history
        }
    }

    override var tracksHistory: Bool { history != nil }

    /// `NSSQLiteManualVacuumOption` and `NSSQLiteAnalyzeOption`: the maintenance the options ask
    /// for as the store is added (a writable store only; both change the file, as asked).
    private func runMaintenanceAskedFor() throws {
        guard !isReadOnly, let url else { return }
        do {
            if StoreOptions.flag(options?[NSSQLiteManualVacuumOption]) {
                try database.writeWithoutTransaction { try $0.execute(sql: "VACUUM") }
            }
            if StoreOptions.flag(options?[NSSQLiteAnalyzeOption]) {
                try database.writeWithoutTransaction { try $0.execute(sql: "ANALYZE") }
            }
        } catch {
            throw Self.translate(error, url: url, during: .opening)
        }
    }

    /// Starts the remote change watcher when the store was added with
    /// `NSPersistentStoreRemoteChangeNotificationPostOptionKey`.
    override func didAttach(to coordinator: NSPersistentStoreCoordinator) throws {
        guard StoreOptions.flag(options?[NSPersistentStoreRemoteChangeNotificationPostOptionKey]), let url, !StoreFiles.isInMemorySQLite(url) else { return }
        let watcher = RemoteChangeWatcher(url: url, storeID: identifier ?? "", tracksHistory: history != nil, coordinator: coordinator)
        do {
            try watcher.start(interval: StoreOptions.seconds(options?[OCDRemoteChangePollingIntervalOptionKey]) ?? RemoteChangeWatcher.defaultInterval)
        } catch {
            throw Self.translate(error, url: url, during: .watching)
        }
        remoteChangeWatcher = watcher
    }

    /// WAL side files a read-only store's connection created, removed again when it closes: a
    /// read-only store leaves the directory as it found it.
    private var sideFilesCreatedByReading: [String] = []
    /// How a read-only store's file is read (perhaps a private copy).
    private var readOnlyFile: SQLiteReadOnlyFile?

    private func open(_ url: URL) throws {
        if isReadOnly {
            sideFilesCreatedByReading = StoreFiles.sideFileSuffixes.map { url.path + $0 }.filter { !FileManager.default.fileExists(atPath: $0) }
        }
        let configuration = connectionConfiguration(walUnlessAsked: !isReadOnly)
        do {
            if isReadOnly, readOnlyFile == nil { readOnlyFile = try SQLiteReadOnlyFile(url) }
            database = try DatabaseQueue(path: readOnlyFile?.name ?? url.path, configuration: configuration)
        } catch {
            throw Self.translate(error, url: url, during: .opening)
        }
    }

    /// The store connection's settings: the options' lock timeout and pragmas, and the functions
    /// and collations its SQL uses. `walUnlessAsked`: the connection puts the file in WAL mode
    /// (synchronous NORMAL), as Core Data does, unless the options' pragmas set `journal_mode`
    /// (Core Data's way to keep a store in one file: `["journal_mode": "DELETE"]`).
    ///
    /// The journal mode is set here rather than by GRDB's `.wal` configuration, which writes a
    /// table and drops it whenever the WAL file is missing or empty (every first open), changing
    /// the store's file at open; opening a store must leave its file as it is.
    func connectionConfiguration(walUnlessAsked: Bool) -> Configuration {
        var configuration = Configuration()
        configuration.readonly = isReadOnly
        configuration.journalMode = .default
        configuration.busyMode = .timeout(StoreOptions.seconds(options?[NSPersistentStoreTimeoutOption]) ?? StoreOptions.defaultLockTimeout)
        configuration.label = "OpenCoreData.SQLiteStore"
        let askedPragmas = (options?[NSSQLitePragmasOption] as? [String: Any]) ?? [:]
        let pragmas = askedPragmas.map { "PRAGMA \($0.key) = \($0.value)" }
        let setsWAL = walUnlessAsked && !askedPragmas.keys.contains { $0.lowercased() == "journal_mode" }
        let matchFunction = predicateRegistry.matchFunction()
        configuration.prepareDatabase { db in
            if setsWAL {
                guard try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL") == "wal" else {
                    throw DatabaseError(resultCode: .SQLITE_CANTOPEN, message: "could not put the store in WAL mode")
                }
                try db.execute(sql: "PRAGMA synchronous = NORMAL")
            }
            for pragma in pragmas { try db.execute(sql: pragma) }
            db.add(function: matchFunction)
            SQLiteDerivedAttributes.registerFunctions(db)
            try SQLiteCollations.register(on: db)
        }
        return configuration
    }

    /// Checks an existing file without changing it; returns its entity numbers and metadata.
    /// The tables' columns are read only when the entities have entity-number columns to check.
    /// `file`: how to read it, when the caller has decided already (see `inspect`).
    static func validateExistingStore(at url: URL, model: NSManagedObjectModel, entities: [NSEntityDescription],
                                      reading file: SQLiteReadOnlyFile? = nil) throws
        -> (numbers: [String: Int], metadata: [String: Any], columns: [String: Set<String>]) {
        try inspect(url, reading: file) { db in
            guard try db.tableExists("Z_PRIMARYKEY") else {
                throw CoreDataError.make(.invalidType, "The SQLite database at \(url.path) is not a Core Data store (it has no Z_PRIMARYKEY table).", url: url)
            }
            let metadata = try readMetadata(db, url: url)
            let numbers = try SQLiteStoredTables.entityNumbers(db)
            try checkCompatibility(db, metadata: metadata, numbers: numbers, entities: entities, url: url)
            let columns = SQLiteSchema.hasEntityColumns(entities) ? try SQLiteStoredTables(db, numbers: numbers).columns : [:]
            return (numbers, metadata, columns)
        }
    }

    /// Opens a store file read-only, checks that it is SQLite, and runs `body` on it. Leaves the
    /// file as it was (WAL side files the check created are removed); any SQLite failure other
    /// than access or locking means the file is damaged (259). The file is read as `file` says
    /// when the caller gives one (and keeps it), otherwise as a `SQLiteReadOnlyFile` made here.
    static func inspect<T>(_ url: URL, reading file: SQLiteReadOnlyFile? = nil, _ body: (Database) throws -> T) throws -> T {
        let header = try StoreFiles.header(of: url, count: 16)
        guard !header.isEmpty else {
            throw CoreDataError.make(.invalidType, "The file at \(url.path) is empty, so it holds no store.", url: url)
        }
        guard header == sqliteHeader else {
            throw CoreDataError.make(.invalidType, "The file at \(url.path) is not a SQLite database, so it can't be opened as a SQLite store.", url: url)
        }
        var configuration = Configuration()
        configuration.readonly = true
        // Another process may be writing or recovering the WAL (after a crash): wait, as the store's
        // own connection does, instead of failing with SQLITE_BUSY.
        configuration.busyMode = .timeout(StoreOptions.defaultLockTimeout)
        let sideFiles = StoreFiles.sideFileSuffixes.map { url.path + $0 }.filter { !FileManager.default.fileExists(atPath: $0) }
        defer { removeEmptySideFiles(sideFiles) }
        do {
            let reading = try file ?? SQLiteReadOnlyFile(url)
            defer { if file == nil { reading.remove() } }
            let reader = try DatabaseQueue(path: reading.name, configuration: configuration)
            defer { try? reader.close() } // Ignored: closing a read-only connection; the data was already read.
            return try reader.inDatabase(body)
        } catch let error as NSError where error.domain == NSCocoaErrorDomain {
            throw error
        } catch let error as DatabaseError where StoreFileFailure(sqliteCode: error.resultCode.primaryResultCode.rawValue) == .other
                                                  && ![.SQLITE_BUSY, .SQLITE_LOCKED].contains(error.resultCode.primaryResultCode) {
            // Any other failure to read a file that has SQLite's header means damage.
            throw CoreDataError.storeFailure(.damaged, during: .reading, url: url, detail: error.message ?? "\(error)",
                                             sqliteCode: error.resultCode.primaryResultCode.rawValue, underlying: error)
        } catch {
            throw translate(error, url: url, during: .reading)
        }
    }

    /// Removes the WAL side files a read-only check created, when they hold nothing.
    private static func removeEmptySideFiles(_ paths: [String]) {
        for path in paths where FileManager.default.fileExists(atPath: path) {
            // Ignored: a size that can't be read keeps the file (1 is "not empty").
            let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 1
            // Ignored: tidying empty side files only; SQLite makes them again when needed.
            if size == 0 || path.hasSuffix("-shm") { try? FileManager.default.removeItem(atPath: path) }
        }
    }

    static func readMetadata(_ db: Database, url: URL) throws -> [String: Any] {
        guard try db.tableExists("Z_METADATA") else {
            throw CoreDataError.make(.invalidType, "The SQLite database at \(url.path) is not a Core Data store (it has no Z_METADATA table).", url: url)
        }
        guard let row = try Row.fetchOne(db, sql: "SELECT Z_UUID, Z_PLIST FROM Z_METADATA ORDER BY Z_VERSION LIMIT 1") else {
            throw CoreDataError.make(.invalidType, "The Core Data store at \(url.path) has no metadata row.", url: url)
        }
        var metadata: [String: Any] = [:]
        if let plist: Data = row["Z_PLIST"] {
            do {
                if let decoded = try PropertyListSerialization.propertyList(from: plist, format: nil) as? [String: Any] {
                    metadata = StoreModelMatching.typed(decoded)
                }
            } catch {
                CoreDataLog.logger.error("The metadata of the store at \(url.path) can't be decoded; it reads as empty: \(error)")
            }
        }
        if let uuid: String = row["Z_UUID"] { metadata[NSStoreUUIDKey] = uuid }
        metadata[NSStoreTypeKey] = NSSQLiteStoreType
        return metadata
    }

    /// Compares the store's recorded model with the entities by Core Data's rule
    /// (`StoreModelMatching`). A store whose hashes are of a kind compared by entity names only
    /// must also have every table and column the model needs.
    private static func checkCompatibility(_ db: Database, metadata: [String: Any], numbers: [String: Int], entities: [NSEntityDescription], url: URL) throws {
        let storeHashes = StoreModelMatching.recordedHashes(metadata) ?? [:]
        let changed = StoreModelMatching.changedEntities(entities, against: metadata)
        if changed.isEmpty {
            guard StoreModelMatching.comparesNamesOnly(metadata) else { return }
            let missing = try SQLiteStoredTables(db, numbers: numbers).fit(entities).missing
            if missing.isEmpty { return }
            throw CoreDataError.make(.incompatibleVersionHash,
                "The model used to open the store is incompatible with the one used to create the store at \(url.path): missing \(missing.joined(separator: "; ")).",
                url: url, userInfo: [NSStoreModelVersionHashesKey: storeHashes])
        }
        throw CoreDataError.make(.incompatibleVersionHash,
            "The model used to open the store is incompatible with the one used to create the store at \(url.path) (changed entities: \(changed.joined(separator: ", "))). Migrate the store or use the model version that created it.",
            url: url, userInfo: [NSStoreModelVersionHashesKey: storeHashes])
    }

    static let openCoreDataMarkerKey = StoreModelMatching.markerKey

    /// The schema of the store file at `url` (read-only; see `SQLiteStoredTables`).
    static func storedTables(at url: URL) throws -> SQLiteStoredTables {
        try inspect(url) { db in try SQLiteStoredTables(db) }
    }

    /// Writes a new store's tables, entity numbers, metadata and (unless told not to) its model.
    private func createStore(keepingModel: Bool = true) throws {
        var initial = initialMetadata()
        initial["_NSAutoVacuumLevel"] = "2"
        metadata = initial
        try write { db in
            for statement in schema.createStatements() { try db.execute(sql: statement) }
            for entity in entities.sorted(by: { schema.mapping(for: $0)!.number < schema.mapping(for: $1)!.number }) {
                let mapping = schema.mapping(for: entity)!
                let superNumber = entity.superentity.flatMap { schema.mapping(for: $0)?.number } ?? 0
                try db.execute(sql: "INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (?, ?, ?, 0)",
                               arguments: [mapping.number, entity.name, superNumber])
            }
            try writeMetadata(db)
            if keepingModel { try SQLiteModelCache.write(model, db) }
        }
    }

    /// Entities of the model that the store has never seen get numbers in Z_PRIMARYKEY (their tables exist).
    private func addMissingEntities(_ stored: [String: Int]) throws {
        let missing = entities.filter { stored[$0.name ?? ""] == nil }
        guard !missing.isEmpty, !isReadOnly else { return }
        try write { db in
            for entity in missing {
                let mapping = schema.mapping(for: entity)!
                try db.execute(sql: "INSERT OR IGNORE INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (?, ?, ?, 0)",
                               arguments: [mapping.number, entity.name, entity.superentity.flatMap { schema.mapping(for: $0)?.number } ?? 0])
            }
        }
    }

    /// The metadata key of the store's change counter, bumped by every save and batch request.
    static let generationKey = "OpenCoreDataGeneration"

    /// Counts one more change of the store's content (recorded in Z_METADATA, in the transaction).
    ///
    /// The counter is read from the file inside the transaction, so two processes (or two
    /// coordinators) writing the same store never both write the same next value.
    func bumpGeneration(_ db: Database) throws {
        var stored = (metadata[Self.generationKey] as? Int) ?? 0
        if let data = try Data.fetchOne(db, sql: "SELECT Z_PLIST FROM Z_METADATA ORDER BY Z_VERSION LIMIT 1"),
           // Ignored: an undecodable Z_PLIST is rewritten below from this store's metadata.
           let plist = try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any],
           let generation = plist[Self.generationKey] as? Int {
            stored = max(stored, generation)
        }
        metadata[Self.generationKey] = stored + 1
        try writeMetadata(db)
    }

    /// The store's change counter as written in the file (other processes may have changed it).
    override func changeToken() -> String {
        let generation: Int?
        do {
            generation = try read { db -> Int? in
                guard let data = try Data.fetchOne(db, sql: "SELECT Z_PLIST FROM Z_METADATA ORDER BY Z_VERSION LIMIT 1"),
                      let plist = try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any] else { return nil }
                return plist[Self.generationKey] as? Int
            }
        } catch {
            // A token no cache was written with: a controller's cache is then not trusted.
            CoreDataLog.logger.error("The change counter of the store at \(url?.path ?? "?") can't be read: \(error)")
            return "\(identifier ?? "")-unreadable-\(UUID().uuidString)"
        }
        return "\(identifier ?? "")-g\(generation ?? 0)"
    }

    /// A store written by OpenCoreData before it recorded Apple's version hashes gets them (and
    /// the other model keys) when it is opened writable with a model that matches it.
    private func recordVersionHashesIfLegacy() throws {
        guard StoreModelMatching.isLegacy(metadata ?? [:]), !isReadOnly else { return }
        metadata?.merge(StoreModelMatching.modelKeys(for: entities, versionIdentifiers: model.versionIdentifiers)) { _, new in new }
        try write { db in
            try writeMetadata(db)
            try SQLiteModelCache.write(model, db)
        }
    }

    private func writeMetadata(_ db: Database) throws {
        let plist = try Self.metadataPropertyList(metadata ?? [:])
        try db.execute(sql: "INSERT OR REPLACE INTO Z_METADATA (Z_VERSION, Z_UUID, Z_PLIST) VALUES (1, ?, ?)",
                       arguments: [metadata?[NSStoreUUIDKey] as? String, plist])
    }

    /// The metadata of a SQLite store file, read without opening it as a store.
    static func readMetadata(at url: URL) throws -> [String: Any] {
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw CoreDataError.make(.fileReadNoSuchFile, "No store at \(url.path).", url: url)
        }
        return try inspect(url) { db in try readMetadata(db, url: url) }
    }

    override func executeBatch(_ request: NSPersistentStoreRequest, entity: NSEntityDescription, author: TransactionAuthor) throws -> NSPersistentStoreResult {
        if let result = try runBatch(request, entity: entity, author: author) { return result }
        return try super.executeBatch(request, entity: entity, author: author)
    }

    override func close() {
        remoteChangeWatcher?.stop()
        remoteChangeWatcher = nil
        writePlans = [:]
        lastWritePlan = nil
        // Ignored: every save has committed or thrown; closing the connection loses nothing.
        try? database?.close()
        database = nil
        Self.removeEmptySideFiles(sideFilesCreatedByReading)
        sideFilesCreatedByReading = []
        readOnlyFile?.remove()
        readOnlyFile = nil
        // A store opened again (`setURL(_:for:)`) starts a new session.
        derivedAttributesInstalled.withLock { $0 = false }
    }

    // MARK: Errors

    /// Maps an SQLite error to Core Data's (`CoreDataError.storeFailure` decides the code).
    static func translate(_ error: Error, url: URL?, during action: CoreDataError.StoreAction) -> NSError {
        if let error = error as NSError?, error.domain == NSCocoaErrorDomain { return error }
        guard let databaseError = error as? DatabaseError else {
            return CoreDataError.storeFailure(.other, during: action, url: url, detail: "\(error)")
        }
        let code = databaseError.resultCode.primaryResultCode.rawValue
        return CoreDataError.storeFailure(StoreFileFailure(sqliteCode: code), during: action, url: url,
                                          detail: databaseError.message ?? "\(databaseError)", sqliteCode: code, underlying: databaseError)
    }

    /// Runs a read: inside the writes being held, if any; else on the snapshot of the query
    /// generation being read, if it has one of this store; else on the store's connection.
    func read<T>(_ body: (Database) throws -> T) throws -> T {
        do {
            if let heldWrite { return try body(heldWrite) }
            if let generation = QueryGeneration.reading, let snapshot = generation.snapshot(of: self) as? SQLiteReadSnapshot {
                return try snapshot.read(body)
            }
            return try database.inDatabase(body)
        } catch {
            throw Self.translate(error, url: url, during: .reading)
        }
    }

    /// The triggers that maintain derived attributes (see `SQLiteDerivedAttributes`).
    private var derivedAttributes: SQLiteDerivedAttributes?
    /// Whether this session's first write has made the file's derived-attribute triggers the
    /// model's (done in a write, since opening a store never changes the file). Set once that
    /// write has committed; writes from several threads may both install, which is idempotent.
    private let derivedAttributesInstalled = LockedValue(false)

    /// One immediate transaction on the store's connection, committed when `body` returns. The
    /// first of a session also makes the file's derived-attribute triggers the model's.
    private func inImmediateTransaction(_ body: (Database) throws -> Void) throws {
        try database.inTransaction(.immediate) { db in
            try body(db)
            // After the body: a new store's tables exist only then, and rows it wrote before
            // the triggers existed are recomputed when they are made.
            if let derivedAttributes, !derivedAttributesInstalled.withLock({ $0 }) { try derivedAttributes.install(db) }
            return .commit
        }
        derivedAttributesInstalled.withLock { $0 = true }
    }

    func write(_ body: (Database) throws -> Void) throws {
        do {
            if let heldWrite {
                // Inside `holdingWrites`: a savepoint of its transaction, undone alone on failure.
                try heldWrite.inSavepoint {
                    try body(heldWrite)
                    return .commit
                }
                return
            }
            try inImmediateTransaction(body)
        } catch let conflicts as StoreVersionConflicts {
            throw conflicts
        } catch let conflicts as StoreConstraintConflicts {
            throw conflicts
        } catch {
            throw Self.translate(error, url: url, during: .saving)
        }
    }

    // MARK: Row decoding

    /// How to decode rows of one entity from a select list.
    /// A class: a fetch holds the plan of the current entity number for every row it reads, and
    /// holding a struct of four references would retain and release each of them per row.
    private final class RowPlan {
        let entity: NSEntityDescription
        /// The entity's slot layout (read once per plan, not per row).
        let layout: SlotLayout
        /// Columns of fixed-width attributes, read straight into their slots' words.
        let wordColumns: [WordColumnPlan]
        /// The other stored properties' columns.
        let otherColumns: [ColumnPlan]

        init(entity: NSEntityDescription, columns: [ColumnPlan]) {
            self.entity = entity
            let layout = entity.slotLayout
            self.layout = layout
            wordColumns = columns.filter { layout.kinds[$0.slot] != .cell }.map { WordColumnPlan(slot: $0.slot, column: $0.column, kind: $0.kind) }
            otherColumns = columns.filter { layout.kinds[$0.slot] == .cell }
        }
    }

    /// A column read as a raw slot word (no class references, so reading it costs no retain).
    private struct WordColumnPlan {
        let slot: Int
        let column: Int32
        let kind: SQLiteValueCoding.ColumnKind
    }

    private struct ColumnPlan {
        let slot: Int
        let column: Int32
        let kind: SQLiteValueCoding.ColumnKind
        /// The property, for to-one relationships and transformable attributes.
        let property: NSPropertyDescription
        /// For a to-one relationship to an entity with subentities: the column of the
        /// destination's entity number (the store's `Z<n>_<NAME>` column, or, in a store without
        /// it, a subquery reading the destination row's `Z_ENT` in the same statement).
        var entityColumn: Int32?
    }

    /// The select list for a set of entities and each entity's decoding plan.
    private final class SelectPlan {
        /// The selected values after `Z_PK, Z_ENT, Z_OPT`: stored columns, and subqueries for
        /// destination entity numbers a store keeps no column for.
        var columns: [SelectedValue] = []
        var plans: [Int: RowPlan] = [:]
        /// `SELECT … WHERE Z_PK IN (?,…)` for a row-loading statement with so many parameters
        /// (see `boundKeyCount`), made once.
        var boundLoadSQL: [Int: String] = [:]

        /// The select list, with columns of the fetched table qualified by `table` (its alias).
        func selectList(qualifiedBy table: String) -> String {
            (["Z_PK", "Z_ENT", "Z_OPT"].map { "\(table).\($0)" } + columns.map { $0.sql(qualifiedBy: table) }).joined(separator: ", ")
        }
    }

    /// One value of a select list after `Z_PK, Z_ENT, Z_OPT`.
    private enum SelectedValue: Hashable {
        /// A column of the fetched table.
        case column(String)
        /// The `Z_ENT` of the row a to-one key column points at, in `table`.
        case destinationEntity(keyColumn: String, table: String)

        func sql(qualifiedBy qualifier: String) -> String {
            switch self {
            case .column(let name): return "\(qualifier).\(name)"
            case .destinationEntity(let key, let table): return "(SELECT d.Z_ENT FROM \(table) d WHERE d.Z_PK = \(qualifier).\(key))"
            }
        }
    }

    private var selectPlans: [ObjectIdentifier: SelectPlan] = [:]

    private func selectPlan(for entity: NSEntityDescription) -> SelectPlan {
        if let plan = selectPlans[ObjectIdentifier(entity)] { return plan }
        let plan = SelectPlan()
        var indexByValue: [SelectedValue: Int32] = [:]
        /// The select-list index of a value, added on first use.
        func column(_ value: SelectedValue) -> Int32 {
            if let existing = indexByValue[value] { return existing }
            let index = Int32(3 + plan.columns.count)
            indexByValue[value] = index
            plan.columns.append(value)
            return index
        }
        let members = entity.selfAndDescendants.filter { schema.mapping(for: $0) != nil }
        for member in members {
            let mapping = schema.mapping(for: member)!
            var columns: [ColumnPlan] = []
            for property in member.frozenProperties where !property.isTransient {
                guard let name = mapping.columnsBySlot[property.slot] else { continue }
                let index = column(.column(name))
                var columnPlan = ColumnPlan(slot: property.slot, column: index, kind: SQLiteValueCoding.ColumnKind(property), property: property)
                if let entityColumn = mapping.entityColumnsBySlot[property.slot] {
                    columnPlan.entityColumn = column(.column(entityColumn))
                } else if let relationship = property as? NSRelationshipDescription, !relationship.isToMany,
                          let destination = relationship.destinationEntity, !destination.subentities.isEmpty,
                          let destinationTable = schema.mapping(for: destination)?.tableName {
                    columnPlan.entityColumn = column(.destinationEntity(keyColumn: name, table: destinationTable))
                }
                columns.append(columnPlan)
            }
            plan.plans[mapping.number] = RowPlan(entity: member, columns: columns)
        }
        selectPlans[ObjectIdentifier(entity)] = plan
        return plan
    }

    /// Makes the ID of an object a dictionary fetch read: its entity is the one the statement's
    /// entity column names when there is one (a destination with subentities), otherwise the
    /// declared destination (also for a dangling key, whose row is gone).
    private func makeDestinationID(_ handle: OpaquePointer, _ column: SQLFetchBuilder.DictionaryColumn, _ destination: NSEntityDescription, _ pk: Int64) -> NSManagedObjectID {
        if let index = column.entityColumnIndex, sqlite3_column_type(handle, index) != SQLITE_NULL,
           let entity = schema.entity(number: Int(sqlite3_column_int64(handle, index))) {
            return objectID(for: entity, primaryKey: pk)
        }
        return objectID(for: destination, primaryKey: pk)
    }

    private func decodeRow(_ statement: OpaquePointer, plan: RowPlan, db: Database) -> StoredRow {
        var values = SlotValues(layout: plan.layout)
        values.writeRow { fillRow($0, from: statement, plan: plan, db: db) }
        return StoredRow(values: values, version: sqlite3_column_int64(statement, 2))
    }

    /// Decodes the current row of a statement into a row's slots: words straight from their
    /// columns, then the other columns' values into their cells.
    @inline(__always)
    private func fillRow(_ writer: SlotRowWriter, from statement: OpaquePointer, plan: RowPlan, db: Database) {
        for column in plan.wordColumns {
            if let word = SQLiteValueCoding.readWord(statement, column.column, column.kind) { writer.set(word, at: column.slot) }
        }
        for column in plan.otherColumns {
            switch column.kind {
            case .toOne:
                guard sqlite3_column_type(statement, column.column) != SQLITE_NULL,
                      let destination = (column.property as? NSRelationshipDescription)?.destinationEntity else { continue }
                let key = sqlite3_column_int64(statement, column.column)
                if let entityColumn = column.entityColumn, sqlite3_column_type(statement, entityColumn) != SQLITE_NULL,
                   let entity = schema.entity(number: Int(sqlite3_column_int64(statement, entityColumn))) {
                    writer.setCell(objectID(for: entity, primaryKey: key), at: column.slot)
                } else {
                    // No subentities, or no entity number (a key to a row that isn't there, or a
                    // number column some other writer left empty): the declared destination.
                    writer.setCell(objectID(for: destination, primaryKey: key), at: column.slot)
                }
            case .transformable:
                writer.setCell(TransformableCoding.decode(SQLiteValueCoding.blobValue(statement, column.column), for: column.property as! NSAttributeDescription), at: column.slot)
            default:
                writer.setCell(SQLiteValueCoding.read(statement, column.column, column.kind), at: column.slot)
            }
        }
    }

    // MARK: Fetching

    override func fetchRows(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription) throws -> FetchedRows {
        guard schema.mapping(for: entity) != nil else { return FetchedRows() }
        let plan = selectPlan(for: entity)
        let withValues = request.includesPropertyValues
        var query = try SQLFetchBuilder(schema: schema, predicates: predicateRegistry, entity: entity, request: request)
        defer { query.releaseTokens() }
        let columns = withValues ? plan.selectList(qualifiedBy: "t0") : "t0.Z_PK, t0.Z_ENT, t0.Z_OPT"
        let sql = query.selectSQL(columns: [columns])
        let start = DispatchTime.now().uptimeNanoseconds
        let rows: FetchedRows = try read { db in
            let statement = try db.cachedStatementKeepingWholeText(sql: sql, arguments: query.arguments)
            let handle = statement.sqliteStatement
            defer { sqlite3_reset(handle) }
            var result = FetchedRows()
            // Rows of one entity come in runs: the plan of the last entity number is kept at hand
            // (no dictionary lookup per row).
            var lastNumber = -1
            // Unretained: `plan` keeps its row plans alive for the whole fetch.
            var lastPlan: Unmanaged<RowPlan>?
            // Values go into batches of rows, one current batch per entity number (see `SlotRowBatch`).
            var batches: [Int: SlotRowBatch] = [:]
            var batch: SlotRowBatch?
            let ids = objectIDFactory
            while try Self.step(handle, db, sql: sql) {
                let pk = sqlite3_column_int64(handle, 0)
                let number = Int(sqlite3_column_int64(handle, 1))
                if number != lastNumber {
                    if let batch { batches[lastNumber] = batch }
                    lastNumber = number
                    lastPlan = plan.plans[number].map(Unmanaged.passUnretained)
                    batch = batches[number]
                }
                guard let lastPlan else { continue }
                lastPlan._withUnsafeGuaranteedRef { rowPlan in
                    guard withValues else {
                        result.append(FetchedRow(ids.objectID(for: rowPlan.entity, primaryKey: pk), nil))
                        return
                    }
                    if batch?.isFull ?? true {
                        // Batches grow from 32 rows to `maximumCapacity`, so a small fetch keeps little.
                        let capacity = min(SlotRowBatch.maximumCapacity, max(32, 2 * (batch?.count ?? 0)))
                        batch = SlotRowBatch.make(layout: rowPlan.layout, capacity: capacity)
                    }
                    // `batch` keeps the batch alive: lent without a retain (the row's is the one kept).
                    Unmanaged.passUnretained(batch.unsafelyUnwrapped)._withUnsafeGuaranteedRef { batch in
                        let index = batch.appendRow { fillRow($0, from: handle, plan: rowPlan, db: db) }
                        result.append(FetchedRow(rowPlan.entity, primaryKey: pk, of: ids, row: index, of: batch, version: sqlite3_column_int64(handle, 2)))
                    }
                }
            }
            return result
        }
        query.log(sql: sql, rows: rows.count, start: start)
        return rows
    }

    override func fetchSortedRows(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription,
                                  sectionNameKeyPath: String?, chunkSize: Int) throws -> SortedRows? {
        try readSortedRows(request, entity: entity, sectionNameKeyPath: sectionNameKeyPath, chunkSize: chunkSize)
    }

    override func countRows(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription) throws -> Int {
        guard schema.mapping(for: entity) != nil else { return 0 }
        var query = try SQLFetchBuilder(schema: schema, predicates: predicateRegistry, entity: entity, request: request)
        defer { query.releaseTokens() }
        let sql = query.countSQL()
        let start = DispatchTime.now().uptimeNanoseconds
        let count = try read { db in try Int.fetchOne(db.cachedStatementKeepingWholeText(sql: sql, arguments: query.arguments)) ?? 0 }
        query.log(sql: sql, rows: 1, start: start)
        return count
    }

    override func fetchDictionaries(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription) throws -> [[String: Any]] {
        guard schema.mapping(for: entity) != nil else { return [] }
        var query = try SQLFetchBuilder(schema: schema, predicates: predicateRegistry, entity: entity, request: request)
        defer { query.releaseTokens() }
        let (sql, columns) = try query.dictionarySelect()
        let start = DispatchTime.now().uptimeNanoseconds
        let results: [[String: Any]] = try read { db in
            let statement = try db.cachedStatementKeepingWholeText(sql: sql, arguments: query.arguments)
            let handle = statement.sqliteStatement
            defer { sqlite3_reset(handle) }
            var results: [[String: Any]] = []
            while try Self.step(handle, db, sql: sql) {
                var dictionary = [String: Any](minimumCapacity: columns.count)
                for (index, column) in columns.enumerated() {
                    let position = Int32(index)
                    if sqlite3_column_type(handle, position) == SQLITE_NULL { continue }
                    if let resultType = column.resultType {
                        dictionary[column.name] = Self.computedValue(handle, position, resultType)
                    } else if column.kind == .toOne, let destination = column.destination {
                        dictionary[column.name] = makeDestinationID(handle, column, destination, sqlite3_column_int64(handle, position))
                    } else {
                        dictionary[column.name] = SQLiteValueCoding.read(handle, position, column.kind)
                    }
                }
                results.append(dictionary)
            }
            return results
        }
        query.log(sql: sql, rows: results.count, start: start)
        return results
    }

    /// Reads a computed column as its declared result type.
    private static func computedValue(_ handle: OpaquePointer, _ index: Int32, _ type: NSAttributeType) -> Any? {
        let storage = sqlite3_column_type(handle, index)
        let double = sqlite3_column_double(handle, index)
        let integer = storage == SQLITE_INTEGER ? sqlite3_column_int64(handle, index) : Int64(exactly: double.rounded()) ?? 0
        switch type {
        case .integer16AttributeType: return Int16(truncatingIfNeeded: integer)
        case .integer32AttributeType: return Int32(truncatingIfNeeded: integer)
        case .integer64AttributeType: return integer
        case .booleanAttributeType: return integer != 0
        case .doubleAttributeType: return double
        case .floatAttributeType: return Float(double)
        case .decimalAttributeType: return Decimal(double)
        case .dateAttributeType: return Date(timeIntervalSinceReferenceDate: double)
        default:
            switch storage {
            case SQLITE_INTEGER: return integer
            case SQLITE_FLOAT: return double
            default: return SQLiteValueCoding.read(handle, index, .string)
            }
        }
    }

    override func loadRow(_ objectID: NSManagedObjectID) throws -> StoredRow? {
        guard let mapping = schema.mapping(for: objectID.entity) else { return nil }
        let plan = selectPlan(for: objectID.entity.rootEntity)
        let sql = "SELECT \(plan.selectList(qualifiedBy: mapping.tableName)) FROM \(mapping.tableName) WHERE Z_PK = ?"
        let start = DispatchTime.now().uptimeNanoseconds
        let row: StoredRow? = try read { db in
            let statement = try db.cachedStatement(sql: sql)
            try statement.setArguments([objectID.primaryKey])
            let handle = statement.sqliteStatement
            defer { sqlite3_reset(handle) }
            guard try Self.step(handle, db, sql: sql) else { return nil }
            guard let rowPlan = plan.plans[Int(sqlite3_column_int64(handle, 1))] else { return nil }
            return decodeRow(handle, plan: rowPlan, db: db)
        }
        SQLDebugLog.statement(sql, rows: row == nil ? 0 : 1, start: start)
        return row
    }

    override func loadRows(_ objectIDs: [NSManagedObjectID]) throws -> [ObjectKey: StoredRow] {
        var rows: [ObjectKey: StoredRow] = [:]
        for group in Dictionary(grouping: objectIDs, by: { ObjectIdentifier($0.entity.rootEntity) }).values {
            guard let mapping = schema.mapping(for: group[0].entity.rootEntity) else { continue }
            let plan = selectPlan(for: group[0].entity.rootEntity)
            var select: String { "SELECT \(plan.selectList(qualifiedBy: mapping.tableName)) FROM \(mapping.tableName) WHERE Z_PK IN " }
            // A fault batch (a few dozen keys) reuses a prepared statement: its keys are bound to a
            // power-of-two number of parameters, the last key repeated, so a handful of statements
            // serve every batch; preparing one costs more than reading its rows. Larger groups are
            // written into the SQL.
            let bound = Self.boundKeyCount(group.count)
            let sql: String
            let arguments: [DatabaseValue]
            if let bound {
                if let known = plan.boundLoadSQL[bound] {
                    sql = known
                } else {
                    sql = select + "(" + Array(repeating: "?", count: bound).joined(separator: ",") + ")"
                    plan.boundLoadSQL[bound] = sql
                }
                arguments = (0..<bound).map { group[Swift.min($0, group.count - 1)].primaryKey.databaseValue }
            } else {
                sql = select + "(" + group.map { String($0.primaryKey) }.joined(separator: ",") + ")"
                arguments = []
            }
            let start = DispatchTime.now().uptimeNanoseconds
            let byKey: [Int64: StoredRow] = try read { db in
                let statement = bound == nil ? try db.makeStatement(sql: sql) : try db.cachedStatementKeepingWholeText(sql: sql, arguments: arguments)
                let handle = statement.sqliteStatement
                var found: [Int64: StoredRow] = [:]
                while try Self.step(handle, db, sql: sql) {
                    guard let rowPlan = plan.plans[Int(sqlite3_column_int64(handle, 1))] else { continue }
                    found[sqlite3_column_int64(handle, 0)] = decodeRow(handle, plan: rowPlan, db: db)
                }
                return found
            }
            SQLDebugLog.statement(sql, rows: byKey.count, start: start)
            for id in group { if let row = byKey[id.primaryKey] { rows[id.key] = row } }
        }
        return rows
    }

    /// The number of parameters a group of `count` keys is bound to when loading rows: the next
    /// power of two up to 256, or nil above that (the keys are then written into the SQL).
    static func boundKeyCount(_ count: Int) -> Int? {
        guard count > 0, count <= 256 else { return nil }
        var bound = 1
        while bound < count { bound <<= 1 }
        return bound
    }

    override func loadToManyIDs(_ objectIDs: [NSManagedObjectID], relationship: NSRelationshipDescription) throws -> [ObjectKey: [NSManagedObjectID]] {
        guard let destination = relationship.destinationEntity, let destinationMapping = schema.mapping(for: destination),
              let source = objectIDs.first?.entity else { return [:] }
        let keys = objectIDs.map { String($0.primaryKey) }.joined(separator: ",")
        let sql: String
        if let join = schema.joinTable(for: relationship) {
            let (mine, theirs) = join.columns(from: relationship)
            let order = join.orderColumn.map { ", j.\($0)" } ?? ""
            sql = "SELECT j.\(mine), t.Z_PK, t.Z_ENT FROM \(join.name) j JOIN \(destinationMapping.tableName) t ON t.Z_PK = j.\(theirs) WHERE j.\(mine) IN (\(keys)) ORDER BY j.\(mine)\(order)"
        } else if let inverse = relationship.inverseRelationship, let column = destinationMapping.columnsBySlot[inverse.slot] {
            let order = schema.orderColumn(for: relationship).map { ", \($0)" } ?? ""
            sql = "SELECT \(column), Z_PK, Z_ENT FROM \(destinationMapping.tableName) WHERE \(column) IN (\(keys)) ORDER BY \(column)\(order), Z_PK"
        } else {
            return [:]
        }
        let start = DispatchTime.now().uptimeNanoseconds
        let rows = try read { db in try Row.fetchAll(db, sql: sql) }
        SQLDebugLog.statement(sql, rows: rows.count, start: start)
        var bySource: [Int64: [NSManagedObjectID]] = [:]
        for row in rows {
            let entity = schema.entity(number: row[2]) ?? destination
            bySource[row[0], default: []].append(objectID(for: entity, primaryKey: row[1]))
        }
        var result: [ObjectKey: [NSManagedObjectID]] = [:]
        for id in objectIDs { result[id.key] = bySource[id.primaryKey] ?? [] }
        _ = source
        return result
    }

    override func loadToManyIDs(_ objectID: NSManagedObjectID, relationship: NSRelationshipDescription) throws -> [NSManagedObjectID] {
        guard let destination = relationship.destinationEntity, let destinationMapping = schema.mapping(for: destination) else { return [] }
        let sql: String
        if let join = schema.joinTable(for: relationship) {
            let (mine, theirs) = join.columns(from: relationship)
            let order = join.orderColumn.map { " ORDER BY j.\($0)" } ?? ""
            sql = "SELECT t.Z_PK, t.Z_ENT FROM \(join.name) j JOIN \(destinationMapping.tableName) t ON t.Z_PK = j.\(theirs) WHERE j.\(mine) = ?\(order)"
        } else if let inverse = relationship.inverseRelationship, let column = destinationMapping.columnsBySlot[inverse.slot] {
            let order = schema.orderColumn(for: relationship).map { " ORDER BY \($0), Z_PK" } ?? " ORDER BY Z_PK"
            sql = "SELECT Z_PK, Z_ENT FROM \(destinationMapping.tableName) WHERE \(column) = ?\(order)"
        } else {
            return []
        }
        let start = DispatchTime.now().uptimeNanoseconds
        let ids: [NSManagedObjectID] = try read { db in
            try Row.fetchAll(db, sql: sql, arguments: [objectID.primaryKey]).compactMap { row in
                let entity = schema.entity(number: row[1]) ?? destination
                return self.objectID(for: entity, primaryKey: row[0])
            }
        }
        SQLDebugLog.statement(sql, rows: ids.count, start: start)
        return ids
    }

    // MARK: Saving (SQLiteStore+Save.swift)

    override func allocatePrimaryKeys(for entity: NSEntityDescription, count: Int) throws -> [Int64] {
        try allocatePrimaryKeysInOwnTransaction(for: entity, count: count)
    }

    override func save(_ changes: SaveChanges) throws -> PermanentIDs {
        try saveInOneTransaction(changes)
    }

    /// The connection inside `holdingWrites`' transaction, where `read` and `write` run meanwhile.
    /// Used only under the coordinator's lock, by the thread that holds it.
    private var heldWrite: Database?

    /// Runs `body` in one immediate transaction: no other connection or process can commit until
    /// it ends, and this store's reads and saves inside it (savepoints) are part of it. Committed
    /// when `body` returns, rolled back when it throws.
    override func holdingWrites<T>(_ body: () throws -> T) throws -> T {
        guard heldWrite == nil else { return try body() }
        var result: T?
        do {
            try inImmediateTransaction { db in
                heldWrite = db
                defer { heldWrite = nil }
                result = try body()
            }
        } catch let error as DatabaseError {
            throw Self.translate(error, url: url, during: .saving)
        }
        return result!
    }

    /// The write plans made so far, by entity.
    var writePlans: [ObjectIdentifier: WritePlan] = [:]
    /// The plan used last: a save writes runs of records of one entity.
    var lastWritePlan: WritePlan?
}
