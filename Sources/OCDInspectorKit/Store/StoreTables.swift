import Foundation
import GRDB
import OpenCoreData

/// One entity as a Core Data SQLite store records it, without a model: its row in
/// `Z_PRIMARYKEY` and the table its objects live in.
struct StoredEntity: Equatable {
    /// The entity's name (`Z_NAME`).
    let name: String
    /// The entity number (`Z_ENT`).
    let number: Int
    /// The parent entity's name, from `Z_SUPER`.
    let parent: String?
    /// The table holding its rows (the root entity's `Z<NAME>`; Apple's history tables are `A<NAME>`), nil when there is none.
    let table: String?
    /// The objects whose `Z_ENT` is this entity (not counting subentities); nil without a table.
    let rows: Int?
    /// The highest primary key given out (`Z_MAX`).
    let maxPrimaryKey: Int64
}

/// Reads a SQLite store's entity list and row counts straight from its tables, read-only.
enum StoreTables {
    /// The entities recorded in `Z_PRIMARYKEY`, by entity number, with their row counts.
    static func read(_ url: URL) throws -> [StoredEntity] {
        try ReadOnlyDatabase.with(url, label: "ocd.info") { database in try database.read { db in
            guard try db.tableExists("Z_PRIMARYKEY") else {
                throw InspectorError("\(url.path) is a SQLite database but not a Core Data store (it has no Z_PRIMARYKEY table)", code: NSPersistentStoreInvalidTypeError)
            }
            let rows = try Row.fetchAll(db, sql: "SELECT Z_ENT, Z_NAME, Z_SUPER, Z_MAX FROM Z_PRIMARYKEY ORDER BY Z_ENT")
            let names = Dictionary(rows.map { (($0["Z_ENT"] as Int?) ?? 0, ($0["Z_NAME"] as String?) ?? "?") }, uniquingKeysWith: { first, _ in first })
            let parents = Dictionary(rows.map { (($0["Z_ENT"] as Int?) ?? 0, ($0["Z_SUPER"] as Int?) ?? 0) }, uniquingKeysWith: { first, _ in first })
            return try rows.map { row in
                let number: Int = row["Z_ENT"] ?? 0
                let name = names[number] ?? "?"
                let table = try table(for: root(of: number, parents: parents, names: names), in: db)
                return StoredEntity(
                    name: name, number: number,
                    parent: parents[number].flatMap { $0 == 0 ? nil : names[$0] },
                    table: table,
                    rows: try table.map { try count(number, in: $0, db) },
                    maxPrimaryKey: row["Z_MAX"] ?? 0)
            }
        } }
    }

    /// The name of the root of an entity's inheritance chain (subentities share its table).
    private static func root(of number: Int, parents: [Int: Int], names: [Int: String]) -> String {
        names[rootNumber(of: number, parents: parents, names: names)] ?? "?"
    }

    /// The number of the root of an entity's inheritance chain, from `Z_SUPER` (a cycle stops it).
    static func rootNumber(of number: Int, parents: [Int: Int], names: [Int: String]) -> Int {
        var current = number
        var seen: Set<Int> = []
        while let parent = parents[current], parent != 0, names[parent] != nil, seen.insert(current).inserted { current = parent }
        return current
    }

    /// `Z<NAME>` for model entities, `A<NAME>` for the history tables of Apple's Core Data.
    private static func table(for rootName: String, in db: Database) throws -> String? {
        for candidate in ["Z" + rootName.uppercased(), "A" + rootName.uppercased()] where try db.tableExists(candidate) {
            return candidate
        }
        return nil
    }

    private static func count(_ number: Int, in table: String, _ db: Database) throws -> Int {
        let quoted = table.quotedDatabaseIdentifier
        let hasEntityColumn = try db.columns(in: table).contains { $0.name.uppercased() == "Z_ENT" }
        let sql = hasEntityColumn ? "SELECT count(*) FROM \(quoted) WHERE Z_ENT = ?" : "SELECT count(*) FROM \(quoted)"
        return try Int.fetchOne(db, sql: sql, arguments: hasEntityColumn ? [number] : []) ?? 0
    }
}
