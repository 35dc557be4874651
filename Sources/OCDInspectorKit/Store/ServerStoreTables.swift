import Foundation
import OpenCoreData
import OpenCoreDataCore
import OpenCoreDataPostgreSQL

/// Reads a store kept by a PostgreSQL server (`postgres://…?schema=…`) for `ocd info`, without
/// changing anything: not even the schema is created.
enum ServerStoreTables {
    /// Whether a store argument is a server URL rather than a file path.
    static func isServerURL(_ text: String) -> Bool {
        let lowered = text.lowercased()
        return lowered.hasPrefix("postgres://") || lowered.hasPrefix("postgresql://")
    }

    /// What `ocd info` reads of a server store: its metadata, the entities of `Z_PRIMARYKEY` with
    /// their row counts and highest keys (from their sequences: a server store keeps no `Z_MAX`),
    /// and the size of the schema's tables.
    struct Reading {
        let location: String
        let metadata: [String: Any]
        let entities: [StoredEntity]
        let size: Int
    }

    static func read(_ argument: String) throws -> Reading {
        guard let url = URL(string: argument) else { throw InspectorError("'\(argument)' is not a URL", code: NSPersistentStoreInvalidTypeError) }
        let location = try PostgreSQLLocation(url: url)
        let connection = try PostgreSQLConnection.open(location)
        defer { connection.close() }
        func rows(_ sql: String, _ values: [SQLServerValue] = []) throws -> [[SQLServerValue]] { try connection.run(sql, values) }
        func integer(_ value: SQLServerValue?) -> Int64? {
            if case .integer(let number)? = value { return number }
            return nil
        }
        func text(_ value: SQLServerValue?) -> String? {
            if case .text(let text)? = value { return text }
            return nil
        }
        let tables = Set(try rows("SELECT upper(table_name::text) FROM information_schema.tables WHERE table_schema = $1", [.text(location.schema)]).compactMap { text($0.first) })
        guard tables.contains("Z_METADATA"), tables.contains("Z_PRIMARYKEY") else {
            throw InspectorError("\(location.summary) holds no Core Data store in schema \(location.schema) (no Z_METADATA table)", code: NSPersistentStoreInvalidTypeError)
        }
        let quoted = "\"" + location.schema.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        _ = try rows("SET search_path TO \(quoted)")
        var metadata: [String: Any] = [:]
        if let row = try rows("SELECT Z_UUID, Z_PLIST FROM Z_METADATA ORDER BY Z_VERSION LIMIT 1").first, row.count == 2 {
            if case .bytes(let plist) = row[1], let decoded = try? PropertyListSerialization.propertyList(from: plist, format: nil) as? [String: Any] {
                metadata = decoded
            }
            metadata[NSStoreUUIDKey] = text(row[0])
        }
        metadata[NSStoreTypeKey] = NSPostgreSQLStoreType
        let recorded = try rows("SELECT Z_ENT, Z_NAME, Z_SUPER, Z_MAX FROM Z_PRIMARYKEY ORDER BY Z_ENT")
        let names = Dictionary(recorded.compactMap { row in integer(row[0]).map { (Int($0), text(row[1]) ?? "?") } }, uniquingKeysWith: { first, _ in first })
        let parents = Dictionary(recorded.compactMap { row in integer(row[0]).map { (Int($0), Int(integer(row[2]) ?? 0)) } }, uniquingKeysWith: { first, _ in first })
        var entities: [StoredEntity] = []
        for row in recorded {
            guard let number = integer(row[0]).map(Int.init) else { continue }
            let root = StoreTables.rootNumber(of: number, parents: parents, names: names)
            let rootName = (names[root] ?? "?").uppercased()
            // History's counter row (16002) counts the rows of ATRANSACTION; its Z_MAX is kept.
            let isHistory = number >= 16000
            let table = isHistory ? "A" + rootName : "Z" + rootName
            let present = tables.contains(table)
            let count = present ? try integer(rows(isHistory ? "SELECT count(*) FROM \(table)" : "SELECT count(*) FROM \(table) WHERE Z_ENT = \(number)").first?.first) : nil
            var highest = integer(row[3]) ?? 0
            if !isHistory, present, let given = try integer(rows("SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM Z_\(root)_PK").first?.first) {
                highest = given
            }
            entities.append(StoredEntity(name: names[number] ?? "?", number: number, parent: parents[number].flatMap { $0 == 0 ? nil : names[$0] },
                                         table: present ? table : nil, rows: count.map(Int.init), maxPrimaryKey: highest))
        }
        let size = try integer(rows("""
            SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = $1 AND c.relkind = 'r'
            """, [.text(location.schema)]).first?.first) ?? 0
        return Reading(location: PostgreSQLLocation.redacted(url), metadata: metadata, entities: entities, size: Int(size))
    }
}
