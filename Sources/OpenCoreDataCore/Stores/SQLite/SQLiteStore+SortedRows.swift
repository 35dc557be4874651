import Foundation
import GRDB
import GRDBSQLite

extension SQLiteStore {
    /// Reads sorted results in columnar form for a fetched results controller: one query of the
    /// primary keys, the sort columns and the section column, in the request's order, with no object
    /// or object ID made per row. Nil when a sort or section key is not a stored attribute.
    func readSortedRows(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription,
                        sectionNameKeyPath: String?, chunkSize: Int) throws -> SortedRows? {
        guard let mapping = schema.mapping(for: entity), let sorts = request.sortDescriptors, !sorts.isEmpty else { return nil }
        // Ties in primary key order: put there in memory (usually nothing to do, SQLite's sorter
        // keeps the scan's order) rather than by a third sort key SQLite would compare on every
        // step, when that can't change which rows are read (no limit or offset) or their sections
        // (the section key is a sort key) and the sort values compare exactly (numbers and dates).
        let numeric = sorts.allSatisfy { descriptor in
            guard let key = descriptor.key, !key.contains("."), let attribute = entity.frozenPropertiesByName[key] as? NSAttributeDescription else { return false }
            switch SortValue.Kind(attribute) {
            case .integer, .double: return true
            case .string, .other: return false
            }
        }
        let ordersTiesInMemory = numeric && request.fetchLimit == 0 && request.fetchOffset == 0
            && (sectionNameKeyPath == nil || sorts.contains { $0.key == sectionNameKeyPath })
        var query = try SQLFetchBuilder(schema: schema, predicates: predicateRegistry, entity: entity, request: request, tieBreakByPrimaryKey: !ordersTiesInMemory)
        defer { query.releaseTokens() }
        var columns = ["t0.Z_PK"]
        let readsEntity = mapping.numbersWithSubentities.count > 1 && request.includesSubentities
        if readsEntity { columns.append("t0.Z_ENT") }
        func column(for keyPath: String) throws -> (Int32, NSAttributeDescription)? {
            let (sql, property) = try query.columnReference(forKeyPath: keyPath, from: "t0", entity: entity)
            guard let attribute = property as? NSAttributeDescription, attribute.attributeType != .transformableAttributeType else { return nil }
            if let existing = columns.firstIndex(of: sql) { return (Int32(existing), attribute) }
            columns.append(sql)
            return (Int32(columns.count - 1), attribute)
        }
        var sortColumns: [(index: Int32, kind: SortValue.Kind, read: SQLiteValueCoding.ColumnKind)] = []
        for descriptor in sorts {
            guard let key = descriptor.key, let (index, attribute) = try column(for: key) else { return nil }
            sortColumns.append((index, SortValue.Kind(attribute), SQLiteValueCoding.ColumnKind(attribute)))
        }
        var sectionColumn: (index: Int32, read: SQLiteValueCoding.ColumnKind)?
        if let sectionNameKeyPath {
            // A section key SQL can't read (a transient attribute, or a value the class derives in
            // `value(forKey:)`) is read from the objects, as Core Data does.
            guard let (index, attribute) = try? column(for: sectionNameKeyPath) else { return nil }
            sectionColumn = (index, SQLiteValueCoding.ColumnKind(attribute))
        }
        let sql = query.selectSQL(columns: columns)
        let kinds = sortColumns.map(\.kind)
        let start = DispatchTime.now().uptimeNanoseconds
        let result: SortedRows = try read { db in
            let statement = try db.cachedStatementKeepingWholeText(sql: sql, arguments: query.arguments)
            let handle = statement.sqliteStatement
            defer { sqlite3_reset(handle) }
            var rows = SortedRows()
            rows.origins = [SortedRows.Origin(entity: entity, store: self)]
            var originByNumber: [Int: Int] = [mapping.number: 0]
            var chunk = SortedRowsChunk(kinds: kinds, capacity: chunkSize)
            var sections = SectionRunBuilder()
            var rowIndex = 0
            while try Self.step(handle, db, sql: sql) {
                let pk = sqlite3_column_int64(handle, 0)
                var origin = 0
                if readsEntity {
                    let number = Int(sqlite3_column_int64(handle, 1))
                    if let known = originByNumber[number] {
                        origin = known
                    } else if let member = schema.entity(number: number) {
                        origin = rows.origins.count
                        rows.origins.append(SortedRows.Origin(entity: member, store: self))
                        originByNumber[number] = origin
                    }
                }
                chunk.keys.append(SortedRows.key(primaryKey: pk, origin: origin))
                for (position, sortColumn) in sortColumns.enumerated() {
                    let index = sortColumn.index
                    let isNull = sqlite3_column_type(handle, index) == SQLITE_NULL
                    switch sortColumn.kind {
                    case .integer: chunk.columns[position].appendInteger(isNull ? 0 : sqlite3_column_int64(handle, index), isNull: isNull)
                    case .double: chunk.columns[position].appendDouble(isNull ? .nan : sqlite3_column_double(handle, index))
                    case .string where isNull:
                        chunk.columns[position].appendUTF8(nil)
                    case .string where sqlite3_column_type(handle, index) == SQLITE_TEXT:
                        // The bytes as SQLite holds them: no String made per row.
                        let text = sqlite3_column_text(handle, index)
                        chunk.columns[position].appendUTF8(UnsafeRawBufferPointer(start: text, count: Int(sqlite3_column_bytes(handle, index))))
                    case .string, .other:
                        chunk.columns[position].append(SortValue(SQLiteValueCoding.read(handle, index, sortColumn.read), kind: sortColumn.kind))
                    }
                }
                if let sectionColumn {
                    try sections.add(handle, column: sectionColumn.index, kind: sectionColumn.read, row: rowIndex)
                }
                rowIndex += 1
                rows.keepIfFull(&chunk, kinds: kinds, capacity: chunkSize)
            }
            rows.keepLast(&chunk)
            rows.sections = sectionColumn == nil ? (rowIndex > 0 ? [("", rowIndex)] : []) : sections.runs
            if ordersTiesInMemory { rows.orderNumericTiesByKey() }
            return rows
        }
        query.log(sql: sql, rows: result.count, start: start)
        return result
    }
}

/// Splits a sorted column into section runs, naming a section only when the raw value changes.
private struct SectionRunBuilder {
    private var sections = SectionRuns()
    private var previousType: Int32 = -1
    private var previousInteger: Int64 = 0
    private var previousDouble: Double = 0
    private var previousBytes: [UInt8] = []

    mutating func add(_ handle: OpaquePointer, column: Int32, kind: SQLiteValueCoding.ColumnKind, row: Int) throws {
        let type = sqlite3_column_type(handle, column)
        var changed = type != previousType || row == 0
        switch type {
        case SQLITE_INTEGER:
            let value = sqlite3_column_int64(handle, column)
            changed = changed || value != previousInteger
            previousInteger = value
        case SQLITE_FLOAT:
            let value = sqlite3_column_double(handle, column)
            changed = changed || value != previousDouble
            previousDouble = value
        case SQLITE_NULL:
            break
        default:
            let bytes = sqlite3_column_blob(handle, column)
            let count = Int(sqlite3_column_bytes(handle, column))
            let buffer = UnsafeRawBufferPointer(start: bytes, count: count)
            // memcmp: the generic `elementsEqual` costs more than SQLite's own step per row.
            let same = previousBytes.count == count && (count == 0 || previousBytes.withUnsafeBytes { memcmp($0.baseAddress!, bytes!, count) == 0 })
            if changed || !same {
                changed = true
                previousBytes = Array(buffer)
            }
        }
        previousType = type
        if changed {
            try sections.append(SectionNaming.name(from: SQLiteValueCoding.read(handle, column, kind)), row: row)
        } else {
            sections.repeatLast()
        }
    }

    var runs: [(name: String, count: Int)] { sections.runs }
}
