import Foundation
import GRDB

/// What a store file's schema is, read once: its entity numbers (`Z_PRIMARYKEY`) and the columns
/// of each of its tables. Compared with models in memory, it decides whether a store another Core
/// Data implementation wrote (whose version hashes can't be reproduced) fits a model, and which
/// model version wrote it.
struct SQLiteStoredTables {
    /// Entity numbers by entity name.
    let numbers: [String: Int]
    /// Column names by table name, all upper-cased (SQLite names are case-insensitive).
    let columns: [String: Set<String>]

    /// The entity numbers a store's `Z_PRIMARYKEY` records, by name.
    static func entityNumbers(_ db: Database) throws -> [String: Int] {
        var numbers: [String: Int] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT Z_ENT, Z_NAME FROM Z_PRIMARYKEY") {
            if let name: String = row["Z_NAME"], let number: Int = row["Z_ENT"] { numbers[name] = number }
        }
        return numbers
    }

    /// Reads the columns of every table (and the entity numbers, unless given).
    init(_ db: Database, numbers: [String: Int]? = nil) throws {
        self.numbers = try numbers ?? Self.entityNumbers(db)
        var columns: [String: Set<String>] = [:]
        for table in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'") {
            columns[table.uppercased()] = Set(try db.columns(in: table).map { $0.name.uppercased() })
        }
        self.columns = columns
    }

    /// How the tables fit a model's entities: what the model needs that the file lacks (entities
    /// in `Z_PRIMARYKEY`, tables, columns), and the property columns the file has that the model
    /// would not make. Columns named `Z_…` or `Z` and a digit are Core Data's own bookkeeping and
    /// never count as extra.
    func fit(_ entities: [NSEntityDescription]) -> (missing: [String], extra: [String]) {
        let modelNames = Set(entities.compactMap(\.name))
        guard modelNames.isSubset(of: Set(numbers.keys)) else {
            return (["entities \(modelNames.subtracting(numbers.keys).sorted().joined(separator: ", "))"], [])
        }
        var missing: [String] = []
        var extra: [String] = []
        for (table, expectedColumns) in SQLiteSchema(entities: entities, storedNumbers: numbers).expectedColumns().sorted(by: { $0.key < $1.key }) {
            guard let present = columns[table.uppercased()] else { missing.append("table \(table)"); continue }
            let expected = Set(expectedColumns.map { $0.uppercased() })
            let absent = expected.subtracting(present)
            if !absent.isEmpty { missing.append("columns \(absent.sorted().joined(separator: ", ")) of \(table)") }
            let unexpected = present.subtracting(expected).filter { name in
                let afterZ = name.dropFirst().first
                return !(name.hasPrefix("Z_") || (name.hasPrefix("Z") && afterZ?.isNumber == true))
            }
            if !unexpected.isEmpty { extra.append("columns \(unexpected.sorted().joined(separator: ", ")) of \(table)") }
        }
        return (missing, extra)
    }

    /// Whether a model is exactly the one the store was made with, as far as the file shows: the
    /// same entity names as the store's version hashes, every table and column the model makes
    /// present, and no property column the model would not make.
    func isExactly(_ model: NSManagedObjectModel, configuration: String?, metadata: [String: Any]) -> Bool {
        model.freeze()
        let entities = model.entities(forConfigurationName: configuration) ?? model.entities
        guard let hashes = StoreModelMatching.recordedHashes(metadata),
              Set(hashes.keys) == Set(entities.compactMap(\.name)) else { return false }
        let fit = fit(entities)
        return fit.missing.isEmpty && fit.extra.isEmpty
    }
}
