import Foundation
import GRDB
import GRDBSQLite

/// The SQLite store: incremental, in WAL mode, in Core Data's on-disk layout (see `SQLiteSchema`).
///
/// Fetches run in SQLite (filtering, sorting, limits); rows are decoded with the raw statement
/// handle. A save is one immediate transaction: primary keys, inserts, updates, deletes and join
/// rows commit together or not at all.
final class SQLiteStore: NSPersistentStore, @unchecked Sendable {
    override var type: String { NSSQLiteStoreType }

    private var database: DatabaseQueue!
    private(set) var schema: SQLiteSchema!
    /// The persistent history, when the store was added with `NSPersistentHistoryTrackingKey`.
    private(set) var history: SQLiteHistory?
    private var remoteChangeWatcher: RemoteChangeWatcher?

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
            let storedNumbers = try Self.validateExistingStore(at: url, model: model, entities: entities)
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
            database = try DatabaseQueue(configuration: connectionConfiguration(journalMode: .default))
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
    override func didAdd(to coordinator: NSPersistentStoreCoordinator) throws {
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

    private func open(_ url: URL) throws {
        if isReadOnly {
            sideFilesCreatedByReading = StoreFiles.sideFileSuffixes.map { url.path + $0 }.filter { !FileManager.default.fileExists(atPath: $0) }
        }
        let configuration = connectionConfiguration(journalMode: isReadOnly ? .default : .wal)
        do {
            database = try DatabaseQueue(path: isReadOnly ? Self.readOnlyName(url) : url.path, configuration: configuration)
        } catch {
            throw Self.translate(error, url: url, during: .opening)
        }
    }

    /// The store connection's settings: the options' lock timeout and pragmas, and the functions
    /// and collations its SQL uses.
    private func connectionConfiguration(journalMode: Configuration.JournalModeConfiguration) -> Configuration {
        var configuration = Configuration()
        configuration.readonly = isReadOnly
        configuration.journalMode = journalMode
        configuration.busyMode = .timeout(StoreOptions.seconds(options?[NSPersistentStoreTimeoutOption]) ?? StoreOptions.defaultLockTimeout)
        configuration.label = "OpenCoreData.SQLiteStore"
        let pragmas = ((options?[NSSQLitePragmasOption] as? [String: Any]) ?? [:]).map { "PRAGMA \($0.key) = \($0.value)" }
        configuration.prepareDatabase { db in
            for pragma in pragmas { try db.execute(sql: pragma) }
            db.add(function: SQLPredicateFunctions.match)
            SQLiteDerivedAttributes.registerFunctions(db)
            try SQLiteCollations.register(on: db)
        }
        return configuration
    }

    /// The name SQLite opens a store by for reading only. Reading a WAL-mode file needs its
    /// `-shm` file, which SQLite creates when missing; in a directory that can't be written it
    /// can't, and the open fails. When neither side file exists there, no write is pending and
    /// nobody can be writing, so the file is opened as immutable (a URI filename) instead.
    static func readOnlyName(_ url: URL) -> String {
        let path = url.path
        let directory = url.deletingLastPathComponent().path
        let sideFiles = StoreFiles.sideFileSuffixes.map { path + $0 }.filter { FileManager.default.fileExists(atPath: $0) }
        guard sideFiles.isEmpty, access(directory, W_OK) != 0 else { return path }
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "?#%")
        return "file:" + (path.addingPercentEncoding(withAllowedCharacters: allowed) ?? path) + "?immutable=1"
    }

    /// Checks an existing file without changing it; returns its entity numbers and metadata.
    /// The tables' columns are read only when the entities have entity-number columns to check.
    static func validateExistingStore(at url: URL, model: NSManagedObjectModel, entities: [NSEntityDescription]) throws
        -> (numbers: [String: Int], metadata: [String: Any], columns: [String: Set<String>]) {
        try inspect(url) { db in
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
    /// than access or locking means the file is damaged (259).
    static func inspect<T>(_ url: URL, _ body: (Database) throws -> T) throws -> T {
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
            let reader = try DatabaseQueue(path: readOnlyName(url), configuration: configuration)
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

    override func executeBatch(_ request: NSPersistentStoreRequest, entity: NSEntityDescription) throws -> NSPersistentStoreResult {
        if let result = try runBatch(request, entity: entity) { return result }
        return try super.executeBatch(request, entity: entity)
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

    func read<T>(_ body: (Database) throws -> T) throws -> T {
        do {
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

    func write(_ body: (Database) throws -> Void) throws {
        do {
            try database.inTransaction(.immediate) { db in
                try body(db)
                // After the body: a new store's tables exist only then, and rows it wrote before
                // the triggers existed are recomputed when they are made.
                if let derivedAttributes, !derivedAttributesInstalled.withLock({ $0 }) { try derivedAttributes.install(db) }
                return .commit
            }
            derivedAttributesInstalled.withLock { $0 = true }
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
    private struct RowPlan {
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

    /// Makes an ID for a to-one key read by a dictionary fetch; for a destination with
    /// subentities, looks up the row's entity (a missing row: the declared destination).
    private func makeDestinationID(_ db: Database, _ destination: NSEntityDescription, _ pk: Int64) throws -> NSManagedObjectID {
        if destination.subentities.isEmpty { return objectID(for: destination, primaryKey: pk) }
        guard let mapping = schema.mapping(for: destination),
              let number = try Int.fetchOne(db, sql: "SELECT Z_ENT FROM \(mapping.tableName) WHERE Z_PK = ?", arguments: [pk]),
              let entity = schema.entity(number: number) else {
            return objectID(for: destination, primaryKey: pk)
        }
        return objectID(for: entity, primaryKey: pk)
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

    override func fetchRows(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription) throws -> [FetchedRow] {
        guard schema.mapping(for: entity) != nil else { return [] }
        let plan = selectPlan(for: entity)
        let withValues = request.includesPropertyValues
        var query = try SQLFetchBuilder(schema: schema, entity: entity, request: request)
        defer { query.releaseTokens() }
        let columns = withValues ? plan.selectList(qualifiedBy: "t0") : "t0.Z_PK, t0.Z_ENT, t0.Z_OPT"
        let sql = query.selectSQL(columns: [columns])
        let start = DispatchTime.now().uptimeNanoseconds
        let rows: [FetchedRow] = try read { db in
            let statement = try db.cachedStatementKeepingWholeText(sql: sql, arguments: query.arguments)
            let handle = statement.sqliteStatement
            defer { sqlite3_reset(handle) }
            var result: [FetchedRow] = []
            // Rows of one entity come in runs: the plan of the last entity number is kept at hand
            // (no dictionary lookup per row).
            var lastNumber = -1
            var lastPlan: RowPlan?
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
                    lastPlan = plan.plans[number]
                    batch = batches[number]
                }
                guard let rowPlan = lastPlan else { continue }
                let id = ids.objectID(for: rowPlan.entity, primaryKey: pk)
                guard withValues else {
                    result.append(FetchedRow(id, nil))
                    continue
                }
                if batch?.isFull ?? true {
                    // Batches grow from 32 rows to `maximumCapacity`, so a small fetch keeps little.
                    let capacity = min(SlotRowBatch.maximumCapacity, max(32, 2 * (batch?.count ?? 0)))
                    batch = SlotRowBatch.make(layout: rowPlan.layout, capacity: capacity)
                }
                let index = batch.unsafelyUnwrapped.appendRow { fillRow($0, from: handle, plan: rowPlan, db: db) }
                result.append(FetchedRow(id, row: index, of: batch.unsafelyUnwrapped, version: sqlite3_column_int64(handle, 2)))
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
        var query = try SQLFetchBuilder(schema: schema, entity: entity, request: request)
        defer { query.releaseTokens() }
        let sql = query.countSQL()
        let start = DispatchTime.now().uptimeNanoseconds
        let count = try read { db in try Int.fetchOne(db.cachedStatementKeepingWholeText(sql: sql, arguments: query.arguments)) ?? 0 }
        query.log(sql: sql, rows: 1, start: start)
        return count
    }

    override func fetchDictionaries(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription) throws -> [[String: Any]] {
        guard schema.mapping(for: entity) != nil else { return [] }
        var query = try SQLFetchBuilder(schema: schema, entity: entity, request: request)
        defer { query.releaseTokens() }
        let (sql, columns) = try query.dictionarySelect()
        let start = DispatchTime.now().uptimeNanoseconds
        let results: [[String: Any]] = try read { db in
            let statement = try db.cachedStatementKeepingWholeText(sql: sql, arguments: query.arguments)
            let handle = statement.sqliteStatement
            defer { sqlite3_reset(handle) }
            var results: [[String: Any]] = []
            while try Self.step(handle, db, sql: sql) {
                var dictionary: [String: Any] = [:]
                for (index, column) in columns.enumerated() {
                    let position = Int32(index)
                    if sqlite3_column_type(handle, position) == SQLITE_NULL { continue }
                    if let resultType = column.resultType {
                        dictionary[column.name] = Self.computedValue(handle, position, resultType)
                    } else if column.kind == .toOne, let destination = column.destination {
                        dictionary[column.name] = try makeDestinationID(db, destination, sqlite3_column_int64(handle, position))
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

    // MARK: Saving

    override func allocatePrimaryKeys(for entity: NSEntityDescription, count: Int) throws -> [Int64] {
        var keys: [Int64] = []
        try write { db in keys = try allocate(db, entity: entity, count: count) }
        return keys
    }

    func allocate(_ db: Database, entity: NSEntityDescription, count: Int) throws -> [Int64] {
        guard count > 0 else { return [] }
        let rootNumber = schema.mapping(for: entity.rootEntity)!.number
        let current = try Int64.fetchOne(db, sql: "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = ?", arguments: [rootNumber]) ?? 0
        let newMax = current + Int64(count)
        try db.execute(sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_ENT = ?", arguments: [newMax, rootNumber])
        if entity !== entity.rootEntity {
            try db.execute(sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_ENT = ?", arguments: [newMax, schema.mapping(for: entity)!.number])
        }
        return Array((current + 1)...newMax)
    }

    override func save(_ changes: SaveChanges) throws -> PermanentIDs {
        var mapping: PermanentIDs = [:]
        let start = DispatchTime.now().uptimeNanoseconds
        try write { db in
            // Permanent IDs, inside the transaction so a failed save leaves Z_PRIMARYKEY as it was.
            // Objects given permanent IDs earlier (obtainPermanentIDs) keep them.
            let groups = Self.temporaryIDGroups(changes.inserted)
            mapping.reserveCapacity(groups.reduce(0) { $0 + $1.positions.count })
            let ids = objectIDFactory
            for group in groups {
                let keys = try allocate(db, entity: group.entity, count: group.positions.count)
                for (position, key) in zip(group.positions, keys) {
                    mapping.assign(primaryKey: key, of: group.entity, in: ids, to: changes.inserted[position].key)
                }
            }
            let primaryKey: (NSManagedObjectID) -> Int64? = { id in
                if let permanent = mapping[id.key] { return permanent.primaryKey }
                return id.isTemporaryID ? nil : id.primaryKey
            }
            for record in changes.deleted { try delete(record, db) }
            let violations = try uniquenessViolations(changes.inserted, db, primaryKey)
            if !violations.isEmpty { throw StoreConstraintConflicts(violations: violations) }
            // By index, reading only the fields each pass needs: copying a whole record would
            // retain its ID, entity, values and to-many members, cold for a large save. Each run
            // of records of one entity is written by `insertRows`.
            var runStart = changes.inserted.startIndex
            while runStart < changes.inserted.endIndex {
                let entity = changes.inserted[runStart].entity
                var runEnd = runStart + 1
                while runEnd < changes.inserted.endIndex, changes.inserted[runEnd].entity === entity { runEnd += 1 }
                try insertRows(of: entity, count: runEnd - runStart, db, primaryKey) { offset in
                    let key = changes.inserted[runStart + offset].key
                    return (mapping[key]?.primaryKey ?? key.primaryKey, changes.inserted[runStart + offset].values)
                }
                runStart = runEnd
            }
            let conflicting = try changes.updated.filter { try !update(record: $0, db, primaryKey) }
                + changes.checked.filter { try !hasVersion($0, db) }
            if !conflicting.isEmpty { throw StoreVersionConflicts(objectIDs: conflicting.map(\.objectID)) }
            for records in [changes.inserted, changes.updated] {
                for index in records.indices where !records[index].toMany.isEmpty { try writeToMany(records[index], db, primaryKey) }
            }
            try bumpGeneration(db)
            if let history { try recordSave(changes, permanentIDs: mapping, history: history, db) }
        }
        SQLDebugLog.save(inserted: changes.inserted.count, updated: changes.updated.count, deleted: changes.deleted.count, start: start)
        return mapping
    }

    /// The positions of the inserted records that still have temporary IDs, grouped by entity
    /// (a save holds few entities, mostly in runs: a linear search, no hashing per record).
    static func temporaryIDGroups(_ inserted: [SaveRecord]) -> [(entity: NSEntityDescription, positions: [Int])] {
        var groups: [(entity: NSEntityDescription, positions: [Int])] = []
        var current = -1
        for position in inserted.indices where inserted[position].key.isTemporary {
            let entity = inserted[position].entity
            if current < 0 || groups[current].entity !== entity {
                current = groups.firstIndex { $0.entity === entity } ?? -1
                if current < 0 {
                    groups.append((entity, []))
                    current = groups.count - 1
                }
            }
            groups[current].positions.append(position)
        }
        return groups
    }

    /// The prepared SQL, statements and column order for writing one entity's rows.
    private final class WritePlan {
        let entity: NSEntityDescription
        let insertSQL: String
        let updateSQL: String
        let slots: [Int]
        let kinds: [SQLiteValueCoding.ColumnKind]
        let properties: [NSPropertyDescription]
        let entityNumber: Int64
        /// To-one slots whose destination's entity number is written too (`Z<n>_<NAME>`), after
        /// the slots' own columns.
        let entitySlots: [Int]
        /// Entity numbers of the destinations of `entitySlots`, by entity.
        let destinationNumbers: [ObjectIdentifier: Int64]
        /// Parameters of one row: key, entity, version, the slots' columns, the entity columns.
        var parametersPerRow: Int32 { Int32(3 + slots.count + entitySlots.count) }
        /// Rows that one multi-row INSERT writes: `rowsPerInsertLimit`, fewer when that many rows
        /// would bind more than `parametersPerStatementLimit` values.
        let rowsPerInsert: Int
        /// An INSERT of `rowsPerInsert` rows (`VALUES (…), (…), …`).
        let multiRowInsertSQL: String
        /// Prepared once per entity (GRDB's own cache would hash the SQL text per row).
        var insertStatement: Statement?
        var multiRowInsertStatement: Statement?
        var updateStatement: Statement?

        /// The most rows one INSERT writes. A statement's start, halt and reset cost SQLite about
        /// a third of a ten-column row's insert; measured on 50,000 rows of eleven integers, 16
        /// rows to a statement cut SQLite's instructions by a quarter, 64 rows only 3% more.
        static let rowsPerInsertLimit = 16
        /// The most parameters a statement may have in SQLite before 3.32 (999), the lowest limit
        /// a linked SQLite can have unless it was built with a smaller one on purpose.
        static let parametersPerStatementLimit = 999

        init(entity: NSEntityDescription, mapping: SQLiteSchema.EntityMapping, schema: SQLiteSchema) {
            self.entity = entity
            // Derived attributes are the store's to compute (its triggers): never written from objects.
            slots = mapping.columnsBySlot.keys.sorted().filter { !(entity.frozenProperties[$0] is NSDerivedAttributeDescription) }
            entitySlots = mapping.entityColumnsBySlot.keys.sorted()
            var numbers: [ObjectIdentifier: Int64] = [:]
            for slot in entitySlots {
                for destination in (entity.frozenProperties[slot] as? NSRelationshipDescription)?.destinationEntity?.selfAndDescendants ?? [] {
                    if let number = schema.mapping(for: destination)?.number { numbers[ObjectIdentifier(destination)] = Int64(number) }
                }
            }
            destinationNumbers = numbers
            let written = slots.map { mapping.columnsBySlot[$0]! } + entitySlots.map { mapping.entityColumnsBySlot[$0]! }
            let columns = ["Z_PK", "Z_ENT", "Z_OPT"] + written
            let assignments = ["Z_OPT = Z_OPT + 1"] + written.map { "\($0) = ?" }
            properties = slots.map { entity.frozenProperties[$0] }
            let rowParameters = "(\(Array(repeating: "?", count: columns.count).joined(separator: ", ")))"
            func insert(rows: Int) -> String {
                "INSERT INTO \(mapping.tableName) (\(columns.joined(separator: ", "))) VALUES \(Array(repeating: rowParameters, count: rows).joined(separator: ", "))"
            }
            rowsPerInsert = max(1, min(Self.rowsPerInsertLimit, Self.parametersPerStatementLimit / columns.count))
            insertSQL = insert(rows: 1)
            multiRowInsertSQL = insert(rows: rowsPerInsert)
            updateSQL = "UPDATE \(mapping.tableName) SET \(assignments.joined(separator: ", ")) WHERE Z_PK = ? AND Z_OPT = ?"
            kinds = properties.map(SQLiteValueCoding.ColumnKind.init)
            entityNumber = Int64(mapping.number)
        }

        /// The handle of a statement prepared on first use and kept in `cache`.
        private static func prepared(_ cache: inout Statement?, _ sql: String, _ db: Database) throws -> OpaquePointer {
            if let cache { return cache.sqliteStatement }
            let statement = try db.makeStatement(sql: sql)
            cache = statement
            return statement.sqliteStatement
        }

        /// The INSERT of `rows` rows: 1 or `rowsPerInsert`, with its SQL (for the log).
        func preparedInsert(rows: Int, _ db: Database) throws -> (handle: OpaquePointer, sql: String) {
            rows == 1 ? (try Self.prepared(&insertStatement, insertSQL, db), insertSQL)
                      : (try Self.prepared(&multiRowInsertStatement, multiRowInsertSQL, db), multiRowInsertSQL)
        }

        /// Binds one row of an INSERT: its primary key, entity number and first version, then its
        /// columns, to parameters `first`, `first + 1`, ….
        func bindInsertedRow(primaryKey: Int64, values: SlotValues, to handle: OpaquePointer, from first: Int32, primaryKeyOf: (NSManagedObjectID) -> Int64?) {
            sqlite3_bind_int64(handle, first, primaryKey)
            sqlite3_bind_int64(handle, first + 1, entityNumber)
            sqlite3_bind_int64(handle, first + 2, 1)
            bindColumns(of: values, to: handle, from: first + 3, primaryKeyOf: primaryKeyOf)
        }

        func preparedUpdate(_ db: Database) throws -> OpaquePointer {
            try Self.prepared(&updateStatement, updateSQL, db)
        }

        /// Binds a row's column values to parameters `first`, `first + 1`, … of a statement.
        /// Reads the plan's tables through buffer pointers (no retain per column) and the row's
        /// words and state bytes straight from its memory, binding integers and doubles held as
        /// words without a call per slot; other values go through `SQLiteValueCoding.bind`.
        func bindColumns(of values: SlotValues, to handle: OpaquePointer, from first: Int32, primaryKeyOf: (NSManagedObjectID) -> Int64?) {
            values.withUnsafeRow { row, layout in
                let states = row + layout.statesOffset * 8
                slots.withUnsafeBufferPointer { slots in
                    kinds.withUnsafeBufferPointer { kinds in
                        for index in 0..<slots.count {
                            let slot = slots[index]
                            let parameter = first + Int32(index)
                            if layout.kindTable[slot] != .cell, states.load(fromByteOffset: slot, as: UInt8.self) == SlotStorage.stateWord {
                                let word = row.load(fromByteOffset: slot * 8, as: UInt64.self)
                                switch kinds[index] {
                                case .int64, .int32, .int16, .bool:
                                    sqlite3_bind_int64(handle, parameter, Int64(bitPattern: word))
                                    continue
                                case .double, .date:
                                    sqlite3_bind_double(handle, parameter, Double(bitPattern: word))
                                    continue
                                default:
                                    break
                                }
                            }
                            SQLiteValueCoding.bind(values[slot], to: handle, at: parameter, kind: kinds[index], property: properties[index], primaryKeyOf: primaryKeyOf)
                        }
                    }
                }
            }
            for (offset, slot) in entitySlots.enumerated() {
                let parameter = first + Int32(slots.count + offset)
                if let destination = values[slot] as? NSManagedObjectID, let number = destinationNumbers[ObjectIdentifier(destination.entity)] {
                    sqlite3_bind_int64(handle, parameter, number)
                } else {
                    sqlite3_bind_null(handle, parameter)
                }
            }
        }
    }

    private var writePlans: [ObjectIdentifier: WritePlan] = [:]
    /// The plan used last: a save writes runs of records of one entity.
    private var lastWritePlan: WritePlan?

    private func writePlan(for entity: NSEntityDescription) -> WritePlan {
        if let lastWritePlan, lastWritePlan.entity === entity { return lastWritePlan }
        let plan = writePlans[ObjectIdentifier(entity)] ?? WritePlan(entity: entity, mapping: schema.mapping(for: entity)!, schema: schema)
        writePlans[ObjectIdentifier(entity)] = plan
        lastWritePlan = plan
        return plan
    }

    /// Steps a statement that reads rows: true at a row, false when there are no more; any other
    /// answer (a busy or locked database, an I/O error, a table gone) is thrown as SQLite's
    /// error, never taken for the end of the rows.
    @inline(__always)
    static func step(_ handle: OpaquePointer, _ db: Database, sql: String) throws -> Bool {
        let code = sqlite3_step(handle)
        if code == SQLITE_ROW { return true }
        if code == SQLITE_DONE { return false }
        throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)), sql: sql)
    }

    /// Steps a bound statement once, resetting it afterwards; throws SQLite's error. (Its
    /// bindings stay: every use binds all parameters again.)
    private func run(_ handle: OpaquePointer, _ db: Database, sql: String) throws {
        if SQLDebugLog.enabled { SQLDebugLog.statement(sql, rows: 1, start: DispatchTime.now().uptimeNanoseconds, isFetch: false) }
        let code = sqlite3_step(handle)
        sqlite3_reset(handle)
        guard code == SQLITE_DONE || code == SQLITE_ROW else {
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)), sql: sql)
        }
    }

    /// Inserts `count` new rows of one entity; `row(i)` gives the primary key and values of the
    /// `i`th. Whole groups of `rowsPerInsert` rows go in one multi-row INSERT each, the rest one
    /// row to a statement. A failing statement throws; the caller's transaction then rolls back
    /// every row.
    func insertRows(of entity: NSEntityDescription, count: Int, _ db: Database, _ primaryKey: (NSManagedObjectID) -> Int64?,
                    row: (Int) -> (primaryKey: Int64, values: SlotValues)) throws {
        let plan = writePlan(for: entity)
        let parametersPerRow = plan.parametersPerRow
        var next = 0
        while next < count {
            let rows = count - next >= plan.rowsPerInsert ? plan.rowsPerInsert : 1
            let (handle, sql) = try plan.preparedInsert(rows: rows, db)
            for offset in 0..<rows {
                let (key, values) = row(next + offset)
                plan.bindInsertedRow(primaryKey: key, values: values, to: handle, from: Int32(offset) * parametersPerRow + 1, primaryKeyOf: primaryKey)
            }
            try run(handle, db, sql: sql)
            next += rows
        }
    }

    /// Writes an updated row if its version (`Z_OPT`) is still the one the record was read at;
    /// returns false, writing nothing, when the row changed or was deleted since.
    private func update(record: SaveRecord, _ db: Database, _ primaryKey: (NSManagedObjectID) -> Int64?) throws -> Bool {
        let plan = writePlan(for: record.entity)
        let handle = try plan.preparedUpdate(db)
        plan.bindColumns(of: record.values, to: handle, from: 1, primaryKeyOf: primaryKey)
        let written = plan.parametersPerRow - 3
        sqlite3_bind_int64(handle, written + 1, record.objectID.primaryKey)
        sqlite3_bind_int64(handle, written + 2, record.version)
        try run(handle, db, sql: plan.updateSQL)
        return db.changesCount > 0
    }

    /// Whether an object's row is still at the version it was read at (`detectConflicts(for:)`).
    private func hasVersion(_ record: SaveRecord, _ db: Database) throws -> Bool {
        guard let mapping = schema.mapping(for: record.entity) else { return false }
        let version = try Int64.fetchOne(db, sql: "SELECT Z_OPT FROM \(mapping.tableName) WHERE Z_PK = ?", arguments: [record.objectID.primaryKey])
        return version == record.version
    }

    private func delete(_ record: SaveRecord, _ db: Database) throws {
        let mapping = schema.mapping(for: record.entity)!
        try db.execute(sql: "DELETE FROM \(mapping.tableName) WHERE Z_PK = ?", arguments: [record.objectID.primaryKey])
        for relationship in record.entity.frozenRelationships {
            guard let join = schema.joinTable(for: relationship) else { continue }
            try db.execute(sql: "DELETE FROM \(join.name) WHERE \(join.columns(from: relationship).mine) = ?", arguments: [record.objectID.primaryKey])
        }
    }

    private func writeToMany(_ record: SaveRecord, _ db: Database, _ primaryKey: (NSManagedObjectID) -> Int64?) throws {
        guard !record.toMany.isEmpty, let ownPK = primaryKey(record.objectID) else { return }
        let properties = record.entity.frozenProperties
        for (slot, members) in record.toMany {
            guard let relationship = properties[slot] as? NSRelationshipDescription else { continue }
            if let join = schema.joinTable(for: relationship) {
                let (mine, theirs) = join.columns(from: relationship)
                try db.execute(sql: "DELETE FROM \(join.name) WHERE \(mine) = ?", arguments: [ownPK])
                let orderColumn = join.owner === relationship ? join.orderColumn : nil
                let sql = "INSERT OR IGNORE INTO \(join.name) (\(mine), \(theirs)\(orderColumn.map { ", \($0)" } ?? "")) VALUES (?, ?\(orderColumn == nil ? "" : ", ?"))"
                for (index, member) in members.enumerated() {
                    guard let memberPK = primaryKey(member) else { continue }
                    var arguments: [DatabaseValue] = [ownPK.databaseValue, memberPK.databaseValue]
                    if orderColumn != nil { arguments.append((index + 1).databaseValue) }
                    try db.execute(sql: sql, arguments: StatementArguments(arguments))
                }
            } else if let order = schema.orderColumn(for: relationship), let destination = relationship.destinationEntity,
                      let table = schema.mapping(for: destination)?.tableName {
                for (index, member) in members.enumerated() {
                    guard let memberPK = primaryKey(member) else { continue }
                    try db.execute(sql: "UPDATE \(table) SET \(order) = ? WHERE Z_PK = ?", arguments: [index + 1, memberPK])
                }
            }
        }
    }
}
