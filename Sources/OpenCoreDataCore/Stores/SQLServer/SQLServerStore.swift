import Foundation

/// A store kept by a database server (PostgreSQL) in Core Data's layout (`SQLiteSchema`):
/// `Z<ENTITY>` tables with `Z_PK`, `Z_ENT` and `Z_OPT`, join tables, `Z_PRIMARYKEY` and
/// `Z_METADATA`. Several coordinators, in several processes on several machines, share one.
///
/// - Opening creates the tables in one transaction when the database has none (serialized with
///   other openers), or checks the recorded model and the tables against the model.
/// - Primary keys come from one sequence per entity hierarchy: no lock held across saves.
/// - A save is one transaction: rows are written only if their `Z_OPT` is still the version the
///   objects were read at, so a change another server saved meanwhile is a merge conflict.
/// - Fetches read the entity's rows and evaluate predicates and sort descriptors in Swift, with
///   the in-memory evaluator, so their answers are the in-memory store's.
///
/// Calls come under the coordinator's lock; the connection has a lock of its own too.
final class SQLServerStore: NSPersistentStore, @unchecked Sendable {
    let connector: SQLServerConnector
    /// The connection saves, migrations and held writes run on.
    private var connection: (any SQLServerConnection)?
    /// The connections fetches and faults read through, several at once (see `answersConcurrentReads`).
    private var readPool: SQLServerConnectionPool?
    private let connectionLock = NSRecursiveLock()
    private(set) var schema: SQLiteSchema!
    /// How each table's rows are read, by table name.
    private var readPlans: [String: SQLServerReadPlan] = [:]
    /// How each entity's rows are written, by entity, made on first use.
    private var writePlans: [ObjectIdentifier: SQLServerWritePlan] = [:]
    /// Names this store object (this coordinator's connection to the database) in its saves'
    /// change notices, so its own listener knows its own saves.
    let instanceID = String(UUID().uuidString.filter { $0 != "-" }.prefix(12))
    /// Whether `holdingWrites` holds this store's saves now.
    private var holdsWrites = false
    /// Posts `NSPersistentStoreRemoteChange` for saves anywhere, when the options ask for it.
    private(set) var changeListener: SQLServerChangeListener?
    /// The store's persistent history: kept when the store was added with
    /// `NSPersistentHistoryTrackingKey`, or when the database already keeps it (another server
    /// asked for it, and its readers must not miss this one's saves).
    private(set) var history: SQLServerHistory?
    /// The triggers that maintain derived attributes (see `SQLServerDerivedAttributes`).
    private(set) var derivedAttributes: SQLServerDerivedAttributes?

    init(model: NSManagedObjectModel, configurationName: String?, url: URL, options: [AnyHashable: Any]?, connector: SQLServerConnector, storeType: String) {
        self.connector = connector
        super.init(persistentStoreCoordinator: nil, configurationName: configurationName, at: url, options: options)
        self.model = model
        registeredType = storeType
    }

    /// Not registrable as a class: the coordinator makes server stores with their connector.
    required convenience init(registeredFor coordinator: NSPersistentStoreCoordinator, configurationName name: String?, at url: URL, options: [AnyHashable: Any]?) {
        coreDataMisuse("SQLServerStore is made by the coordinator for a registered connector, not as a registered store class.")
    }

    /// The store's URL for messages, without its password.
    var locationDescription: String { url.map(connector.describe) ?? "(no URL)" }

    // MARK: Opening and closing

    override func load() throws {
        guard let url else { throw CoreDataError.make(.invalidType, "A \(type) store needs a URL.") }
        let connection = try connector.open(url)
        self.connection = connection
        do {
            try transaction { connection in
                try connection.run(connection.dialect.setupLockStatement, [])
                let tables = try storedColumns(connection)
                if tables["Z_METADATA"] == nil {
                    try create(connection)
                } else {
                    try open(connection, tables: tables)
                }
                try createUniqueIndexes(connection)
                if entities.contains(where: { !$0.derivedSlots.isEmpty }) {
                    let derived = try SQLServerDerivedAttributes(schema: schema)
                    try derived.install(connection)
                    derivedAttributes = derived
                }
                if SQLiteStore.wantsHistory(options) || tables["ATRANSACTION"] != nil {
                    let history = SQLServerHistory(schema: schema)
                    try history.createTables(connection)
                    self.history = history
                }
            }
        } catch {
            connection.close()
            self.connection = nil
            throw error
        }
        identifier = metadata[NSStoreUUIDKey] as? String
        readPlans = SQLServerReadPlan.plans(for: entities, schema: schema)
        let connector = connector, location = locationDescription, type = type
        readPool = SQLServerConnectionPool(size: connector.poolSize(url), open: { try connector.open(url) }, closedError: {
            CoreDataError.make(.coreData, "The \(type) store \(location) was removed from its coordinator.")
        })
    }

    /// Starts listening for saves when the store was added with
    /// `NSPersistentStoreRemoteChangeNotificationPostOptionKey`.
    override func didAttach(to coordinator: NSPersistentStoreCoordinator) throws {
        guard StoreOptions.flag(options?[NSPersistentStoreRemoteChangeNotificationPostOptionKey]), let url, let identifier else { return }
        let listener = SQLServerChangeListener(store: self, url: url, storeID: identifier, coordinator: coordinator)
        try listener.start()
        changeListener = listener
    }

    /// The objects a change notice names, as IDs of this store (entities it doesn't know are left out).
    func objectIDs(in notice: SQLServerChangeNotice) -> (inserted: [NSManagedObjectID], updated: [NSManagedObjectID], deleted: [NSManagedObjectID]) {
        let ids = objectIDFactory
        func resolve(_ items: [SQLServerChangeNotice.Item]) -> [NSManagedObjectID] {
            items.compactMap { item in schema.entity(number: item.entity).map { ids.objectID(for: $0, primaryKey: item.key) } }
        }
        return (resolve(notice.inserted), resolve(notice.updated), resolve(notice.deleted))
    }

    override func close() {
        changeListener?.stop()
        changeListener = nil
        readPool?.close()
        connectionLock.withLock {
            connection?.close()
            connection = nil
        }
    }

    /// The tables of the store's schema and their columns, in upper case.
    private func storedColumns(_ connection: any SQLServerConnection) throws -> [String: Set<String>] {
        var tables: [String: Set<String>] = [:]
        for row in try connection.run(connection.dialect.tableColumnsQuery, []) {
            guard row.count == 2, case .text(let table) = row[0], case .text(let column) = row[1] else { continue }
            tables[table.uppercased(), default: []].insert(column.uppercased())
        }
        return tables
    }

    /// Writes a new store's tables, entity numbers, key sequences and metadata.
    private func create(_ connection: any SQLServerConnection) throws {
        let schema = SQLiteSchema(entities: entities, storedNumbers: [:])
        for statement in schema.createStatements(dialect: connection.dialect) { try connection.run(statement, []) }
        for entity in entities {
            guard let mapping = schema.mapping(for: entity) else { continue }
            let superNumber = entity.superentity.flatMap { schema.mapping(for: $0)?.number } ?? 0
            try connection.run("INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES ($1, $2, $3, 0)",
                               [.integer(Int64(mapping.number)), .text(entity.name ?? ""), .integer(Int64(superNumber))])
        }
        for root in Set(entities.map { ObjectIdentifier($0.rootEntity) }) {
            guard let entity = entities.first(where: { ObjectIdentifier($0.rootEntity) == root }) else { continue }
            try connection.run(connection.dialect.createSequenceStatement(Self.sequenceName(for: entity, schema)), [])
        }
        let metadata = initialMetadata()
        let plist = try SQLiteStore.metadataPropertyList(metadata)
        try connection.run("INSERT INTO Z_METADATA (Z_VERSION, Z_UUID, Z_PLIST) VALUES (1, $1, $2)",
                           [.text(metadata[NSStoreUUIDKey] as? String ?? ""), .bytes(plist)])
        self.metadata = metadata
        self.schema = schema
    }

    /// Reads an existing store's metadata and entity numbers, and refuses one whose recorded
    /// model or tables don't fit the model.
    private func open(_ connection: any SQLServerConnection, tables: [String: Set<String>]) throws {
        guard let row = try connection.run("SELECT Z_UUID, Z_PLIST FROM Z_METADATA ORDER BY Z_VERSION LIMIT 1", []).first, row.count == 2 else {
            throw CoreDataError.make(.invalidType, "The database \(locationDescription) has a Z_METADATA table without a row: it is not a Core Data store.")
        }
        var metadata: [String: Any] = [:]
        if case .bytes(let plist) = row[1],
           let decoded = try? PropertyListSerialization.propertyList(from: plist, format: nil) as? [String: Any] {
            metadata = StoreModelMatching.typed(decoded)
        }
        guard case .text(let uuid) = row[0], !uuid.isEmpty else {
            throw CoreDataError.make(.invalidType, "The store \(locationDescription) has no identifier in Z_METADATA.")
        }
        metadata[NSStoreUUIDKey] = uuid
        metadata[NSStoreTypeKey] = type
        let changed = StoreModelMatching.changedEntities(entities, against: metadata)
        var tables = tables
        if !changed.isEmpty, options?[NSPersistentStoreStagedMigrationManagerOptionKey] != nil {
            throw CoreDataError.make(.migration,
                "The store \(locationDescription) needs migrating, and staged migration runs on SQLite and binary stores only: a server store migrates by lightweight migration (NSMigratePersistentStoresAutomaticallyOption).")
        } else if !changed.isEmpty, StoreOptions.flag(options?[NSMigratePersistentStoresAutomaticallyOption]) {
            metadata = try migrate(connection, metadata: metadata)
            tables = try storedColumns(connection)
        } else if !changed.isEmpty {
            throw CoreDataError.make(.incompatibleVersionHash,
                "The model used to open the store is incompatible with the one used to create the store \(locationDescription) (changed entities: \(changed.joined(separator: ", "))).",
                userInfo: [NSStoreModelVersionHashesKey: StoreModelMatching.recordedHashes(metadata) ?? [:]])
        }
        var numbers: [String: Int] = [:]
        // Rows from 16000 on count history's transactions, not an entity's rows.
        for row in try connection.run("SELECT Z_ENT, Z_NAME FROM Z_PRIMARYKEY WHERE Z_ENT < 16000", []) {
            guard row.count == 2, let number = SQLServerValueCoding.integer(row[0]), case .text(let name) = row[1] else { continue }
            numbers[name] = Int(number)
        }
        let schema = SQLiteSchema(entities: entities, storedNumbers: numbers)
        var missing: [String] = []
        for (table, columns) in schema.expectedColumns().sorted(by: { $0.key < $1.key }) {
            guard let present = tables[table] else {
                missing.append("table \(table)")
                continue
            }
            missing += columns.subtracting(present).sorted().map { "\(table).\($0)" }
        }
        guard missing.isEmpty else {
            throw CoreDataError.make(.incompatibleSchema,
                "The tables of the store \(locationDescription) don't fit the model: missing \(missing.joined(separator: ", ")).")
        }
        self.metadata = metadata
        self.schema = schema
    }

    /// The sequence that numbers an entity hierarchy's rows.
    static func sequenceName(for entity: NSEntityDescription, _ schema: SQLiteSchema) -> String {
        "Z_\(schema.mapping(for: entity.rootEntity)?.number ?? 0)_PK"
    }

    override var tracksHistory: Bool { history != nil }

    /// A server store's content changes with every save anywhere: no token is reused, so no
    /// fetched results cache is taken for current.
    override func changeToken() -> String { "\(identifier ?? "")-server-\(UUID())" }

    // MARK: Statements

    /// Runs `body` with the connection, under its lock; throws if the store was closed.
    func withConnection<T>(_ body: (any SQLServerConnection) throws -> T) throws -> T {
        try connectionLock.withLock {
            guard let connection else {
                throw CoreDataError.make(.coreData, "The \(type) store \(locationDescription) was removed from its coordinator.")
            }
            return try body(connection)
        }
    }

    /// Reads from several threads run at once, each on a connection of the pool: the coordinator
    /// lets them run outside its lock.
    override var answersConcurrentReads: Bool { true }

    /// Runs a read (one or more statements outside a transaction) on a connection of the pool.
    func withReadConnection<T>(_ body: (any SQLServerConnection) throws -> T) throws -> T {
        guard let readPool else { return try withConnection(body) }
        return try readPool.with(body)
    }

    /// Runs `body` in one transaction: committed if it returns, rolled back if it throws.
    func transaction<T>(_ body: (any SQLServerConnection) throws -> T) throws -> T {
        try withConnection { connection in
            try connection.run("BEGIN", [])
            do {
                let result = try body(connection)
                try connection.run("COMMIT", [])
                return result
            } catch {
                // Ignored: a failed ROLLBACK means the connection is gone, and the server
                // discards the transaction with it; the body's error is the one to report.
                _ = try? connection.run("ROLLBACK", [])
                throw error
            }
        }
    }

    /// The rows one SELECT of a table returns, decoded: `where` follows `WHERE`, its parameters
    /// are `values`.
    func readRows(_ plan: SQLServerReadPlan, where condition: String, _ values: [SQLServerValue], suffix: String = "") throws -> [(NSManagedObjectID, StoredRow)] {
        let sql = "SELECT \(plan.selectList) FROM \(plan.table) WHERE \(condition)\(suffix)"
        let rows = try withReadConnection { try $0.run(sql, values) }
        let ids = objectIDFactory
        return rows.compactMap { row in plan.decode(row, schema: schema, ids: ids) }
    }

    /// Runs `body` for each run of at most 500 keys, with its `$1, $2, …` list and bound keys: how
    /// `IN (…)` reads of many rows are split.
    static func forEachChunk(of keys: [Int64], _ body: (_ placeholders: String, _ keys: [SQLServerValue]) throws -> Void) rethrows {
        for start in stride(from: 0, to: keys.count, by: 500) {
            let chunk = keys[start..<min(keys.count, start + 500)]
            try body((1...chunk.count).map { "$\($0)" }.joined(separator: ", "), chunk.map { .integer($0) })
        }
    }

    /// `Z_ENT IN (…)` for an entity, with its subentities when asked.
    func entityCondition(_ entity: NSEntityDescription, subentities: Bool) -> String {
        let numbers = (subentities ? entity.selfAndDescendants : [entity]).compactMap { schema.mapping(for: $0)?.number }
        return "Z_ENT IN (\(numbers.map(String.init).joined(separator: ", ")))"
    }

    // MARK: Reading

    override func loadRow(_ objectID: NSManagedObjectID) throws -> StoredRow? {
        guard let plan = readPlan(for: objectID.entity) else { return nil }
        return try readRows(plan, where: "Z_PK = $1", [.integer(objectID.primaryKey)]).first?.1
    }

    override func loadRows(_ objectIDs: [NSManagedObjectID]) throws -> [ObjectKey: StoredRow] {
        var rows: [ObjectKey: StoredRow] = [:]
        var byTable: [String: [NSManagedObjectID]] = [:]
        for id in objectIDs { if let plan = readPlan(for: id.entity) { byTable[plan.table, default: []].append(id) } }
        for (table, ids) in byTable {
            guard let plan = readPlans[table] else { continue }
            try Self.forEachChunk(of: ids.map(\.primaryKey)) { placeholders, keys in
                for (id, row) in try readRows(plan, where: "Z_PK IN (\(placeholders))", keys) { rows[id.key] = row }
            }
        }
        return rows
    }

    override func loadToManyIDs(_ objectID: NSManagedObjectID, relationship: NSRelationshipDescription) throws -> [NSManagedObjectID] {
        try loadToManyIDs([objectID], relationship: relationship)[objectID.key] ?? []
    }

    /// The members of a to-many relationship of many objects, a query per 500 sources: rows of
    /// (source key, member key, member entity) from the join table or the members' table.
    override func loadToManyIDs(_ objectIDs: [NSManagedObjectID], relationship: NSRelationshipDescription) throws -> [ObjectKey: [NSManagedObjectID]] {
        guard let destination = relationship.destinationEntity, let target = schema.mapping(for: destination), !objectIDs.isEmpty else { return [:] }
        var result: [ObjectKey: [NSManagedObjectID]] = [:]
        for id in objectIDs { result[id.key] = [] }
        let ids = objectIDFactory
        let sources = Dictionary(objectIDs.map { ($0.primaryKey, $0.key) }, uniquingKeysWith: { first, _ in first })
        try Self.forEachChunk(of: Array(sources.keys)) { placeholders, keys in
            let sql: String
            if let join = schema.joinTable(for: relationship) {
                let (mine, theirs) = join.columns(from: relationship)
                let order = join.owner === relationship ? join.orderColumn.map { "j.\($0), " } ?? "" : ""
                sql = "SELECT j.\(mine), d.Z_PK, d.Z_ENT FROM \(join.name) j JOIN \(target.tableName) d ON d.Z_PK = j.\(theirs) WHERE j.\(mine) IN (\(placeholders)) ORDER BY j.\(mine), \(order)d.Z_PK"
            } else if let inverse = relationship.inverseRelationship, !inverse.isToMany,
                      let column = schema.mapping(for: inverse.entity ?? destination)?.columnsBySlot[inverse.slot] {
                let order = schema.orderColumn(for: relationship).map { "\($0), " } ?? ""
                sql = "SELECT \(column), Z_PK, Z_ENT FROM \(target.tableName) WHERE \(column) IN (\(placeholders)) AND \(entityCondition(destination, subentities: true)) ORDER BY \(column), \(order)Z_PK"
            } else {
                return
            }
            let rows = try withReadConnection { try $0.run(sql, keys) }
            for row in rows {
                guard row.count == 3, let source = SQLServerValueCoding.integer(row[0]).flatMap({ sources[$0] }),
                      let key = SQLServerValueCoding.integer(row[1]), let number = SQLServerValueCoding.integer(row[2]),
                      let entity = schema.entity(number: Int(number)) else { continue }
                result[source, default: []].append(ids.objectID(for: entity, primaryKey: key))
            }
        }
        return result
    }

    /// The write plan of an entity, made once (saves run under the connection's lock).
    func writePlan(for entity: NSEntityDescription) -> SQLServerWritePlan {
        if let plan = writePlans[ObjectIdentifier(entity)] { return plan }
        let plan = SQLServerWritePlan(entity: entity, schema: schema)
        writePlans[ObjectIdentifier(entity)] = plan
        return plan
    }

    /// The read plan of an entity's table.
    func readPlan(for entity: NSEntityDescription) -> SQLServerReadPlan? {
        schema.mapping(for: entity).flatMap { readPlans[$0.tableName] }
    }

    // MARK: Saving (SQLServerStore+Save)

    override func allocatePrimaryKeys(for entity: NSEntityDescription, count: Int) throws -> [Int64] {
        try nextKeys(for: entity, count: count)
    }

    override func save(_ changes: SaveChanges) throws -> PermanentIDs {
        try saveInOneTransaction(changes)
    }

    override func executeBatch(_ request: NSPersistentStoreRequest, entity: NSEntityDescription, author: TransactionAuthor) throws -> NSPersistentStoreResult {
        if let result = try runBatch(request, entity: entity, author: author) { return result }
        return try super.executeBatch(request, entity: entity, author: author)
    }

    /// Runs `body` (a save resolving conflicts: it reads rows, then saves) with every save of this
    /// store, by any process, held until it ends: an exclusive advisory lock that each save's
    /// shared one waits for. The connection stays this thread's meanwhile.
    override func holdingWrites<T>(_ body: () throws -> T) throws -> T {
        try withConnection { connection in
            if holdsWrites { return try body() }
            let store: [SQLServerValue] = [.text(identifier ?? "")]
            try connection.run(connection.dialect.holdWritesStatement, store)
            holdsWrites = true
            defer {
                holdsWrites = false
                // Ignored: a failed unlock means the connection is gone, and its locks with it.
                _ = try? connection.run(connection.dialect.releaseWritesStatement, store)
            }
            return try body()
        }
    }

    // MARK: Fetching

    override func fetchRows(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription) throws -> FetchedRows {
        guard let plan = readPlan(for: entity) else { return FetchedRows() }
        let selection = selection(for: request, entity: entity)
        if !request.includesPropertyValues && selection.answersWhole {
            return FetchedRows(try keys(plan, selection, request).lazy.map { FetchedRow($0, nil) })
        }
        return FetchedRows(try matching(request, entity: entity, selection: selection).lazy.map { id, row in FetchedRow(id, request.includesPropertyValues ? row : nil) })
    }

    override func countRows(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription) throws -> Int {
        guard let plan = readPlan(for: entity) else { return 0 }
        let selection = selection(for: request, entity: entity)
        if request.fetchLimit == 0, request.fetchOffset == 0, selection.isExact {
            let sql = "SELECT count(*) FROM \(plan.table) WHERE \(selection.condition)"
            let rows = try withReadConnection { try $0.run(sql, selection.values) }
            return rows.first?.first.flatMap(SQLServerValueCoding.integer).map(Int.init) ?? 0
        }
        return try matching(request, entity: entity, selection: selection).count
    }

    override func fetchDictionaries(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription) throws -> [[String: Any]] {
        let source = SQLServerRowSource(store: self)
        let rows = try matching(StoredRowEvaluation.rowsRequest(forDictionaries: request), entity: entity, source: source)
        let results = DictionaryResults.make(from: rows.map { RowReader(store: source, id: $0.0) }, request: request, entity: entity)
        if let error = source.firstError { throw error }
        return results
    }

    override func fetchSortedRows(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription,
                                  sectionNameKeyPath: String?, chunkSize: Int) throws -> SortedRows? {
        try readSortedRows(request, entity: entity, sectionNameKeyPath: sectionNameKeyPath, chunkSize: chunkSize)
    }

    /// What SQL can do of a request: the `WHERE` condition (the entity's rows, narrowed by the
    /// predicate), whether it is the whole predicate, and the `ORDER BY` list when SQL can sort.
    struct Selection {
        let condition: String
        let values: [SQLServerValue]
        /// The condition is the predicate itself: its rows need no evaluation in Swift.
        let isExact: Bool
        /// The request's order in SQL, or nil when Swift must sort.
        let order: String?
        /// SQL answers the request whole: its rows, in order, with offset and limit.
        var answersWhole: Bool { isExact && order != nil }

        /// `ORDER BY …` with the request's offset and limit when SQL does everything, else just the order.
        func suffix(_ request: NSFetchRequest<NSFetchRequestResult>) -> String {
            guard let order else { return " ORDER BY Z_PK" }
            var suffix = " ORDER BY \(order)"
            if isExact {
                if request.fetchLimit > 0 { suffix += " LIMIT \(request.fetchLimit)" }
                if request.fetchOffset > 0 { suffix += " OFFSET \(request.fetchOffset)" }
            }
            return suffix
        }
    }

    func selection(for request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription) -> Selection {
        let entities = entityCondition(entity, subentities: request.includesSubentities)
        var prefilter = SQLServerPrefilter(entity: entity, schema: schema)
        let narrowed = request.predicate.flatMap { prefilter.condition(for: $0) }
        let order = SQLServerOrdering.clause(for: request.sortDescriptors ?? [], entity: entity, columns: schema.mapping(for: entity)?.columnsBySlot ?? [:])
        return Selection(condition: narrowed.map { "\(entities) AND \($0)" } ?? entities, values: prefilter.values,
                         isExact: request.predicate == nil || (narrowed != nil && prefilter.isExact), order: order)
    }

    /// The IDs a selection that answers its request whole selects, in order, read as keys alone.
    private func keys(_ plan: SQLServerReadPlan, _ selection: Selection, _ request: NSFetchRequest<NSFetchRequestResult>) throws -> [NSManagedObjectID] {
        let sql = "SELECT Z_PK, Z_ENT FROM \(plan.table) WHERE \(selection.condition)\(selection.suffix(request))"
        let ids = objectIDFactory
        return try withReadConnection { try $0.run(sql, selection.values) }.compactMap { row in
            guard row.count == 2, let key = SQLServerValueCoding.integer(row[0]),
                  let number = SQLServerValueCoding.integer(row[1]), let found = schema.entity(number: Int(number)) else { return nil }
            return ids.objectID(for: found, primaryKey: key)
        }
    }

    /// The rows a request matches, in its order, with offset and limit applied: SQL narrows the
    /// rows and sorts them when it can, Swift evaluates what SQL could not answer exactly.
    /// `selection` is the request's when the caller made it already.
    func matching(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription,
                  source: SQLServerRowSource? = nil, selection: Selection? = nil) throws -> [(NSManagedObjectID, StoredRow)] {
        guard let plan = readPlan(for: entity) else { return [] }
        let selection = selection ?? self.selection(for: request, entity: entity)
        let rows = try readRows(plan, where: selection.condition, selection.values, suffix: selection.suffix(request))
        if selection.answersWhole { return rows }
        let source = source ?? SQLServerRowSource(store: self)
        for (id, row) in rows { source.rows[id] = row }
        let matched = StoredRowEvaluation.matching(rows.map(\.0), in: source, request: request, alreadySorted: selection.order != nil)
        if let error = source.firstError { throw error }
        return matched.compactMap { id in source.rows[id].map { (id, $0) } }
    }
}

/// Stored rows seen by the in-memory evaluator during one fetch: the fetched rows, and the rows
/// and to-many members that key paths reach. A row or relationship not read yet is read for
/// every row of the fetch at once (a query per table or relationship, not per row).
final class SQLServerRowSource: StoredValueSource {
    unowned let store: SQLServerStore
    var rows: [NSManagedObjectID: StoredRow] = [:]
    private var toMany: [NSManagedObjectID: [Int: [NSManagedObjectID]]] = [:]
    /// Rows asked for that the store doesn't have (deleted meanwhile).
    private var absent: Set<NSManagedObjectID> = []
    /// The first error a read met: the fetch throws it rather than answer from missing rows.
    private(set) var firstError: (any Error)?

    init(store: SQLServerStore) { self.store = store }

    func value(of id: NSManagedObjectID, forKey key: String) -> Any? {
        guard let property = id.entity.frozenPropertiesByName[key], let row = row(id) else { return nil }
        if let relationship = property as? NSRelationshipDescription {
            if relationship.isToMany {
                return members(of: id, relationship).map { $0.map { RowReader(store: self, id: $0) } }
            }
            return (row.values[relationship.slot] as? NSManagedObjectID).map { RowReader(store: self, id: $0) }
        }
        return row.values[property.slot]
    }

    private func members(of id: NSManagedObjectID, _ relationship: NSRelationshipDescription) -> [NSManagedObjectID]? {
        if let members = toMany[id]?[relationship.slot] { return members }
        guard let owner = relationship.entity else { return nil }
        // Every known row of the relationship's entity, read in one go.
        let sources = rows.keys.filter { $0.entity.isKindOf(entity: owner) && toMany[$0]?[relationship.slot] == nil }
        do {
            let loaded = try store.loadToManyIDs(sources.contains(id) ? sources : sources + [id], relationship: relationship)
            for source in sources + [id] { toMany[source, default: [:]][relationship.slot] = loaded[source.key] ?? [] }
            return toMany[id]?[relationship.slot]
        } catch {
            firstError = firstError ?? error
            return nil
        }
    }

    private func row(_ id: NSManagedObjectID) -> StoredRow? {
        if let row = rows[id] { return row }
        if absent.contains(id) { return nil }
        // Every row of this table the known rows and to-many members point to that isn't read
        // yet, with this one.
        var wanted: Set<NSManagedObjectID> = [id]
        func want(_ destination: NSManagedObjectID) {
            if rows[destination] == nil, !absent.contains(destination), destination.entity.rootEntity === id.entity.rootEntity { wanted.insert(destination) }
        }
        for (source, stored) in rows {
            for relationship in source.entity.frozenRelationships where !relationship.isToMany {
                if let destination = stored.values[relationship.slot] as? NSManagedObjectID { want(destination) }
            }
        }
        for members in toMany.values { for list in members.values { list.forEach(want) } }
        do {
            let loaded = try store.loadRows(Array(wanted))
            for destination in wanted {
                if let row = loaded[destination.key] { rows[destination] = row } else { absent.insert(destination) }
            }
            return rows[id]
        } catch {
            firstError = firstError ?? error
            return nil
        }
    }
}
