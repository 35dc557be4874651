import Foundation
import GRDB
import GRDBSQLite

/// Saving: one immediate transaction that allocates primary keys, then inserts, updates, deletes
/// and writes join rows, checking optimistic-locking versions; it commits whole or not at all.
extension SQLiteStore {
    /// Allocates primary keys in a transaction of their own (`obtainPermanentIDs(for:)`).
    func allocatePrimaryKeysInOwnTransaction(for entity: NSEntityDescription, count: Int) throws -> [Int64] {
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

    /// Writes a save's changes in one immediate transaction, all or nothing.
    func saveInOneTransaction(_ changes: SaveChanges) throws -> PermanentIDs {
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
    final class WritePlan {
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
            destinationNumbers = schema.destinationNumbers(ofEntityColumnsOf: entity)
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
