import Foundation
import GRDB
import OpenCoreData

/// The rows of the watched entities at one moment, read straight from a store's tables:
/// each object's `Z_OPT` (bumped by every save that changes it) and attribute values.
struct StoreSnapshot {
    struct Row: Equatable {
        let entity: String
        let version: Int64
        let values: [String: JSONValue]
    }

    /// Rows by object ID URI.
    var rows: [String: Row] = [:]

    /// The changes that lead from `old` to `self`, deletions first, then inserts and updates by object ID.
    func changes(since old: StoreSnapshot) -> [StoreChange] {
        var changes: [StoreChange] = []
        for id in old.rows.keys.sorted() where rows[id] == nil {
            changes.append(StoreChange(kind: .delete, entity: old.rows[id]!.entity, objectID: id, values: []))
        }
        for id in rows.keys.sorted() {
            let row = rows[id]!
            guard let before = old.rows[id] else {
                changes.append(StoreChange(kind: .insert, entity: row.entity, objectID: id,
                                           values: row.values.keys.sorted().map { ($0, nil, row.values[$0]!) }))
                continue
            }
            guard before.version != row.version || before.values != row.values else { continue }
            let changed = row.values.keys.sorted().filter { before.values[$0] != row.values[$0] }
            changes.append(StoreChange(kind: .update, entity: row.entity, objectID: id,
                                       values: changed.map { ($0, before.values[$0] ?? .null, row.values[$0]!) }))
        }
        return changes
    }
}

/// Reads `StoreSnapshot`s of some entities of a Core Data SQLite store over a read-only connection.
struct StoreSnapshotReader {
    private struct Source {
        let table: String
        let entitiesByNumber: [Int: NSEntityDescription]
    }

    private let sources: [Source]
    private let storeUUID: String

    /// Prepares to read `entities` (with their subentities) of the store `db` is connected to.
    init(_ db: Database, entities: [NSEntityDescription], storeUUID: String) throws {
        self.storeUUID = storeUUID
        var numbers: [String: Int] = [:]
        for row in try GRDB.Row.fetchAll(db, sql: "SELECT Z_ENT, Z_NAME FROM Z_PRIMARYKEY") {
            if let name: String = row["Z_NAME"], let number: Int = row["Z_ENT"] { numbers[name] = number }
        }
        var byTable: [String: [Int: NSEntityDescription]] = [:]
        for entity in entities {
            for member in [entity] + Self.descendants(of: entity) {
                guard let name = member.name, let number = numbers[name] else { continue }
                var root = member
                while let parent = root.superentity { root = parent }
                byTable["Z" + (root.name ?? "").uppercased(), default: [:]][number] = member
            }
        }
        sources = byTable.keys.sorted().map { Source(table: $0, entitiesByNumber: byTable[$0]!) }
    }

    private static func descendants(of entity: NSEntityDescription) -> [NSEntityDescription] {
        entity.subentities.flatMap { [$0] + descendants(of: $0) }
    }

    /// The current rows.
    func read(_ db: Database) throws -> StoreSnapshot {
        var snapshot = StoreSnapshot()
        for source in sources where try db.tableExists(source.table) {
            let numbers = source.entitiesByNumber.keys.sorted().map(String.init).joined(separator: ",")
            let cursor = try GRDB.Row.fetchCursor(db, sql: "SELECT * FROM \(source.table.quotedDatabaseIdentifier) WHERE Z_ENT IN (\(numbers))")
            while let row = try cursor.next() {
                let number: Int = row["Z_ENT"] ?? 0
                guard let entity = source.entitiesByNumber[number], let name = entity.name else { continue }
                let primaryKey: Int64 = row["Z_PK"] ?? 0
                var values: [String: JSONValue] = [:]
                for attribute in entity.properties.compactMap({ $0 as? NSAttributeDescription }) where !attribute.isTransient {
                    let column = "Z" + attribute.name.uppercased()
                    guard row.hasColumn(column) else { continue }
                    values[attribute.name] = Self.value(row[column] as DatabaseValue, type: attribute.attributeType)
                }
                let id = "x-coredata://\(storeUUID)/\(name)/p\(primaryKey)"
                snapshot.rows[id] = StoreSnapshot.Row(entity: name, version: row["Z_OPT"] ?? 0, values: values)
            }
        }
        return snapshot
    }

    /// A column value in the form `ocd fetch --json` prints the attribute.
    private static func value(_ value: DatabaseValue, type: NSAttributeType) -> JSONValue {
        switch (value.storage, type) {
        case (.null, _): return .null
        case (.int64(let number), .booleanAttributeType): return .bool(number != 0)
        case (.int64(let seconds), .dateAttributeType): return ValueText.json(Date(timeIntervalSinceReferenceDate: Double(seconds)))
        case (.double(let seconds), .dateAttributeType): return ValueText.json(Date(timeIntervalSinceReferenceDate: seconds))
        case (.blob(let data), .UUIDAttributeType) where data.count == 16:
            return .string(data.withUnsafeBytes { UUID(uuid: $0.load(as: uuid_t.self)) }.uuidString)
        case (.int64(let number), _): return .int(number)
        case (.double(let number), _): return JSONValue(number)
        case (.string(let text), _): return .string(text)
        case (.blob(let data), _): return .string(data.base64EncodedString())
        }
    }
}
