import Foundation
import GRDB
import GRDBSQLite

/// Persistent history of one SQLite store, kept in the store's own file in the tables Apple's Core
/// Data uses, and written inside the transaction of the save or batch request it describes.
///
/// - `ATRANSACTIONSTRING` (`Z_PK`, `Z_ENT` 16003, `Z_OPT`, `ZNAME`): interned strings.
/// - `ATRANSACTION` (`Z_PK`, `Z_ENT` 16002, `Z_OPT`, `ZAUTHORTS`, `ZBUNDLEIDTS`, `ZCONTEXTNAMETS`,
///   `ZPROCESSIDTS` pointing at strings, `ZTIMESTAMP` in seconds since 2001, and the unused text
///   columns `ZAUTHOR`, `ZBUNDLEID`, `ZCONTEXTNAME`, `ZPROCESSID`, `ZQUERYGEN`).
/// - `ACHANGE` (`Z_PK`, `Z_ENT` 16001, `Z_OPT`, `ZCHANGETYPE` 0 insert / 1 update / 2 delete,
///   `ZENTITY` the entity number, `ZENTITYPK` the row's `Z_PK`, `ZTRANSACTIONID`, `ZCOLUMNS` a bit
///   set of the updated properties' slots, `ZTOMBSTONE0…` the preserved attribute values of a
///   deleted row, in slot order).
///
/// Transaction and change numbers use `AUTOINCREMENT`, so they never go back after a purge and
/// tokens stay meaningful.
final class SQLiteHistory {
    static let changeEntityNumber = 16001
    static let transactionEntityNumber = 16002
    static let stringEntityNumber = 16003

    private let schema: SQLiteSchema
    /// The attributes whose values a delete keeps in `ZTOMBSTONE<n>`, by entity number.
    private let preservedAttributes: [Int: [NSAttributeDescription]]
    private let tombstoneColumnCount: Int

    init(schema: SQLiteSchema) {
        self.schema = schema
        self.preservedAttributes = Self.preservedAttributes(schema)
        self.tombstoneColumnCount = preservedAttributes.values.map(\.count).max() ?? 0
    }

    /// The attributes whose values a delete keeps in `ZTOMBSTONE<n>`, in slot order, by entity number.
    static func preservedAttributes(_ schema: SQLiteSchema) -> [Int: [NSAttributeDescription]] {
        var preserved: [Int: [NSAttributeDescription]] = [:]
        for entity in schema.entities {
            guard let mapping = schema.mapping(for: entity) else { continue }
            let attributes = entity.frozenAttributes.filter { $0.preservesValueInHistoryOnDeletion && !$0.isTransient && mapping.columnsBySlot[$0.slot] != nil }
            if !attributes.isEmpty { preserved[mapping.number] = attributes.sorted { $0.slot < $1.slot } }
        }
        return preserved
    }

    private var tombstoneColumns: [String] { (0..<tombstoneColumnCount).map { "ZTOMBSTONE\($0)" } }

    // MARK: Tables

    /// Creates the history tables if the file lacks them, and tombstone columns the model now needs.
    func createTables(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE IF NOT EXISTS ATRANSACTIONSTRING (Z_PK INTEGER PRIMARY KEY AUTOINCREMENT, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR NOT NULL UNIQUE);
            CREATE TABLE IF NOT EXISTS ATRANSACTION (Z_PK INTEGER PRIMARY KEY AUTOINCREMENT, Z_ENT INTEGER, Z_OPT INTEGER,
                ZAUTHORTS INTEGER, ZBUNDLEIDTS INTEGER, ZCONTEXTNAMETS INTEGER, ZPROCESSIDTS INTEGER, ZTIMESTAMP FLOAT,
                ZAUTHOR VARCHAR, ZBUNDLEID VARCHAR, ZCONTEXTNAME VARCHAR, ZPROCESSID VARCHAR, ZQUERYGEN BLOB);
            CREATE INDEX IF NOT EXISTS Z_TRANSACTION_TIMESTAMP ON ATRANSACTION (ZTIMESTAMP);
            CREATE TABLE IF NOT EXISTS ACHANGE (Z_PK INTEGER PRIMARY KEY AUTOINCREMENT, Z_ENT INTEGER, Z_OPT INTEGER,
                ZCHANGETYPE INTEGER, ZENTITY INTEGER, ZENTITYPK INTEGER, ZTRANSACTIONID INTEGER, ZCOLUMNS BLOB);
            CREATE INDEX IF NOT EXISTS Z_CHANGE_TRANSACTIONID ON ACHANGE (ZTRANSACTIONID);
            """)
        let present = Set(try db.columns(in: "ACHANGE").map { $0.name.uppercased() })
        for column in tombstoneColumns where !present.contains(column) {
            try db.execute(sql: "ALTER TABLE ACHANGE ADD COLUMN \(column)")
        }
    }

    // MARK: Writing

    /// The process's bundle identifier (its executable's name without one) and identifier.
    static let processStrings: (bundleID: String, processID: String) = (
        Bundle.main.bundleIdentifier ?? ProcessInfo.processInfo.processName,
        String(ProcessInfo.processInfo.processIdentifier)
    )

    /// Starts a transaction record; returns its number.
    func beginTransaction(_ db: Database, _ author: TransactionAuthor) throws -> Int64 {
        let strings = Self.processStrings
        try db.cachedStatement(sql: """
            INSERT INTO ATRANSACTION (Z_ENT, Z_OPT, ZAUTHORTS, ZBUNDLEIDTS, ZCONTEXTNAMETS, ZPROCESSIDTS, ZTIMESTAMP)
            VALUES (?, 1, ?, ?, ?, ?, ?)
            """).execute(arguments: [
                Self.transactionEntityNumber, try intern(author.author, db), try intern(strings.bundleID, db),
                try intern(author.contextName, db), try intern(strings.processID, db), Date().timeIntervalSinceReferenceDate,
            ])
        return db.lastInsertedRowID
    }

    private func intern(_ string: String?, _ db: Database) throws -> Int64? {
        guard let string else { return nil }
        try db.cachedStatement(sql: "INSERT OR IGNORE INTO ATRANSACTIONSTRING (Z_ENT, Z_OPT, ZNAME) VALUES (?, 1, ?)")
            .execute(arguments: [Self.stringEntityNumber, string])
        return try Int64.fetchOne(db.cachedStatement(sql: "SELECT Z_PK FROM ATRANSACTIONSTRING WHERE ZNAME = ?"), arguments: [string])
    }

    /// Records one object's change; `values` (the row as saved) gives a delete's tombstone.
    func recordChange(_ db: Database, transaction: Int64, type: NSPersistentHistoryChangeType, entity: NSEntityDescription,
                      primaryKey: Int64, updatedSlots: [Int]? = nil, values: SlotValues? = nil) throws {
        guard let number = schema.mapping(for: entity)?.number else { return }
        var arguments: [DatabaseValue] = [
            Self.changeEntityNumber.databaseValue, type.rawValue.databaseValue, number.databaseValue, primaryKey.databaseValue,
            transaction.databaseValue, (updatedSlots.map(Self.columnBits) ?? nil).databaseValue,
        ]
        var columns = ""
        if type == .delete, let values, let preserved = preservedAttributes[number] {
            for (index, attribute) in preserved.enumerated() {
                columns += ", ZTOMBSTONE\(index)"
                arguments.append(SQLiteValueCoding.databaseValue(values[attribute.slot], for: attribute, primaryKeyOf: { _ in nil }))
            }
        }
        let placeholders = String(repeating: ", ?", count: arguments.count - 6)
        try db.cachedStatement(sql: "INSERT INTO ACHANGE (Z_ENT, Z_OPT, ZCHANGETYPE, ZENTITY, ZENTITYPK, ZTRANSACTIONID, ZCOLUMNS\(columns)) VALUES (?, 1, ?, ?, ?, ?, ?\(placeholders))")
            .execute(arguments: StatementArguments(arguments))
    }

    /// Records a change for every row of an entity's hierarchy that `condition` (SQL on the
    /// table, unqualified column names) selects, reading tombstones from the rows themselves.
    func recordRows(_ db: Database, transaction: Int64, type: NSPersistentHistoryChangeType, of entity: NSEntityDescription,
                    where condition: String, arguments: [DatabaseValue] = [], updatedSlots: [Int]? = nil) throws {
        guard let table = schema.mapping(for: entity.rootEntity)?.tableName else { return }
        let bits = (updatedSlots.map(Self.columnBits) ?? nil).databaseValue
        for member in entity.rootEntity.selfAndDescendants {
            guard let mapping = schema.mapping(for: member) else { continue }
            var columns = ""
            var selected = ""
            if type == .delete, let preserved = preservedAttributes[mapping.number] {
                for (index, attribute) in preserved.enumerated() {
                    columns += ", ZTOMBSTONE\(index)"
                    selected += ", \(mapping.columnsBySlot[attribute.slot]!)"
                }
            }
            try db.executeKeepingWholeText(sql: """
                INSERT INTO ACHANGE (Z_ENT, Z_OPT, ZCHANGETYPE, ZENTITY, ZENTITYPK, ZTRANSACTIONID, ZCOLUMNS\(columns))
                SELECT \(Self.changeEntityNumber), 1, \(type.rawValue), Z_ENT, Z_PK, \(transaction), ?\(selected)
                FROM \(table) WHERE Z_ENT = \(mapping.number) AND (\(condition))
                """, arguments: [bits] + arguments)
        }
    }

    /// A bit set of property slots, as stored in `ZCOLUMNS`.
    static func columnBits(_ slots: [Int]) -> Data? {
        guard let highest = slots.max() else { return nil }
        var bytes = [UInt8](repeating: 0, count: highest / 8 + 1)
        for slot in slots where slot >= 0 { bytes[slot / 8] |= 1 << UInt8(slot % 8) }
        return Data(bytes)
    }

    static func slots(fromColumnBits data: Data) -> [Int] {
        var slots: [Int] = []
        for (index, byte) in data.enumerated() {
            for bit in 0..<8 where byte & (1 << UInt8(bit)) != 0 { slots.append(index * 8 + bit) }
        }
        return slots
    }

    // MARK: Reading

    /// The transaction numbers a boundary selects, as a SQL condition on `ATRANSACTION` (alias `t`).
    private func condition(_ boundary: NSPersistentHistoryChangeRequest.Boundary, storeID: String, _ db: Database) throws -> (String, [DatabaseValue]) {
        let range = HistoryRange(boundary, storeID: storeID)
        if let number = range.keptAfter { try checkNotExpired(number, db) }
        let (sql, parameter) = range.condition(placeholder: "?")
        switch parameter {
        case .number(let number): return (sql, [number.databaseValue])
        case .time(let seconds): return (sql, [seconds.databaseValue])
        case nil: return (sql, [])
        }
    }

    /// The number of the newest transaction ever recorded (0 before the first). It comes from
    /// `AUTOINCREMENT`'s counter, so a purge of every transaction does not lower it.
    static func newestTransactionNumber(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'ATRANSACTION'") ?? 0
    }

    /// Throws 134301 when history after `number` has been purged.
    private func checkNotExpired(_ number: Int64, _ db: Database) throws {
        try HistoryRange.checkNotExpired(number, newest: try Self.newestTransactionNumber(db),
                                         oldestKept: try Int64.fetchOne(db, sql: "SELECT MIN(Z_PK) FROM ATRANSACTION"))
    }

    /// The transactions meeting a condition on `ATRANSACTION t`, oldest first: rows of number,
    /// timestamp, author, bundle identifier, context name and process identifier.
    static func transactionsQuery(where condition: String) -> String {
        """
            SELECT t.Z_PK, t.ZTIMESTAMP, a.ZNAME, b.ZNAME, c.ZNAME, p.ZNAME FROM ATRANSACTION t
            LEFT JOIN ATRANSACTIONSTRING a ON a.Z_PK = t.ZAUTHORTS
            LEFT JOIN ATRANSACTIONSTRING b ON b.Z_PK = t.ZBUNDLEIDTS
            LEFT JOIN ATRANSACTIONSTRING c ON c.Z_PK = t.ZCONTEXTNAMETS
            LEFT JOIN ATRANSACTIONSTRING p ON p.Z_PK = t.ZPROCESSIDTS
            WHERE \(condition) ORDER BY t.Z_PK
            """
    }

    /// The transactions a fetch boundary selects, oldest first, with their changes when asked.
    func fetch(_ boundary: NSPersistentHistoryChangeRequest.Boundary, storeID: String, withChanges: Bool, _ db: Database,
               objectID: (NSEntityDescription, Int64) -> NSManagedObjectID) throws -> [NSPersistentHistoryTransaction] {
        let (condition, arguments) = try condition(boundary, storeID: storeID, db)
        let rows = try Row.fetchAll(db, sql: Self.transactionsQuery(where: condition), arguments: StatementArguments(arguments))
        var transactions: [NSPersistentHistoryTransaction] = []
        var byNumber: [Int64: NSPersistentHistoryTransaction] = [:]
        for row in rows {
            let transaction = NSPersistentHistoryTransaction(
                transactionNumber: row[0], storeID: storeID, timestamp: Date(timeIntervalSinceReferenceDate: row[1] ?? 0),
                bundleID: row[3] ?? "", processID: row[5] ?? "", contextName: row[4], author: row[2])
            if withChanges { transaction.changes = [] }
            transactions.append(transaction)
            byNumber[transaction.transactionNumber] = transaction
        }
        guard withChanges, let first = transactions.first, let last = transactions.last else { return transactions }
        let columns = (["Z_PK", "ZTRANSACTIONID", "ZCHANGETYPE", "ZENTITY", "ZENTITYPK", "ZCOLUMNS"] + tombstoneColumns).joined(separator: ", ")
        let statement = try db.makeStatement(sql: "SELECT \(columns) FROM ACHANGE WHERE ZTRANSACTIONID BETWEEN ? AND ? ORDER BY Z_PK")
        try statement.setArguments([first.transactionNumber, last.transactionNumber])
        let handle = statement.sqliteStatement
        while true {
            let code = sqlite3_step(handle)
            if code == SQLITE_DONE { break }
            guard code == SQLITE_ROW else {
                throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)))
            }
            guard let transaction = byNumber[sqlite3_column_int64(handle, 1)],
                  let entity = schema.entity(number: Int(sqlite3_column_int64(handle, 3))),
                  let type = NSPersistentHistoryChangeType(rawValue: Int(sqlite3_column_int64(handle, 2))) else { continue }
            var updated: Set<NSPropertyDescription>?
            if type == .update {
                let properties = entity.frozenProperties
                let slots = SQLiteValueCoding.blobValue(handle, 5).map(Self.slots(fromColumnBits:)) ?? []
                updated = Set(slots.filter { $0 < properties.count }.map { properties[$0] })
            }
            var tombstone: [AnyHashable: Any]?
            if type == .delete, let mapping = schema.mapping(for: entity), let preserved = preservedAttributes[mapping.number] {
                var values: [AnyHashable: Any] = [:]
                for (index, attribute) in preserved.enumerated() {
                    let column = Int32(6 + index)
                    let kind = SQLiteValueCoding.ColumnKind(attribute)
                    let value = kind == .transformable
                        ? TransformableCoding.decode(SQLiteValueCoding.blobValue(handle, column), for: attribute)
                        : SQLiteValueCoding.read(handle, column, kind)
                    if let value { values[attribute.name] = value }
                }
                tombstone = values
            }
            let change = NSPersistentHistoryChange(
                changeID: sqlite3_column_int64(handle, 0), changedObjectID: objectID(entity, sqlite3_column_int64(handle, 4)),
                changeType: type, updatedProperties: updated, tombstone: tombstone)
            change.linkedTransaction = transaction
            transaction.changes?.append(change)
        }
        return transactions
    }

    /// Deletes the transactions (and their changes) a delete boundary selects; returns how many.
    func delete(_ boundary: NSPersistentHistoryChangeRequest.Boundary, storeID: String, _ db: Database) throws -> Int {
        let (condition, arguments) = try condition(boundary, storeID: storeID, db)
        try db.execute(sql: "DELETE FROM ACHANGE WHERE ZTRANSACTIONID IN (SELECT t.Z_PK FROM ATRANSACTION t WHERE \(condition))",
                       arguments: StatementArguments(arguments))
        try db.execute(sql: "DELETE FROM ATRANSACTION AS t WHERE \(condition)", arguments: StatementArguments(arguments))
        return db.changesCount
    }
}
