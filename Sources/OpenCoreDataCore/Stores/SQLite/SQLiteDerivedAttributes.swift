import Foundation
import GRDB

/// Keeps a SQLite store's derived-attribute columns current with SQLite triggers, so that every
/// write that changes what a value derives from (a save, a batch request, a change in a related
/// table) recomputes it in the same transaction.
///
/// For a derived attribute stored in column `C` of table `T`, `DerivedColumnPlan` gives the value
/// as one SQL expression and the writes that can change it; here each of those writes is a
/// trigger (named `OCD_DERIVED_<T>_<C>_<n>`) that recomputes the rows it affects. The string
/// functions are `OCD_CANONICAL`, `OCD_LOWERCASE` and `OCD_UPPERCASE` (registered on every
/// connection of the store: Unicode-aware, unlike SQLite's own `lower` and `upper`), and
/// `now()` is `OCD_NOW()`.
struct SQLiteDerivedAttributes {
    /// A trigger and the statement that creates it.
    struct Trigger: Equatable {
        let name: String
        let sql: String
        /// The derived column it maintains, as `table.column`.
        let column: String
    }

    /// Every trigger the model needs, in a stable order.
    let triggers: [Trigger]
    /// For each derived column (`table.column`), the statement that recomputes it for all rows.
    let recomputeStatements: [String: String]

    static let triggerPrefix = "OCD_DERIVED_"

    /// Reads the derivations of the schema's entities; throws 134020 for one no store can derive.
    init(schema: SQLiteSchema) throws {
        var triggers: [Trigger] = []
        var recompute: [String: String] = [:]
        for plan in try DerivedColumnPlan.plans(for: schema, dialect: .sqlite) {
            recompute[plan.key] = plan.update(where: nil)
            for (index, trigger) in plan.dependencies.enumerated() {
                let name = "\(Self.triggerPrefix)\(plan.table)_\(plan.column)_\(index)"
                triggers.append(Trigger(name: name, sql: "CREATE TRIGGER \(name) \(trigger.event) BEGIN \(plan.update(where: trigger.rows)); END", column: plan.key))
            }
        }
        self.triggers = triggers
        recomputeStatements = recompute
    }

    /// The names and SQL of the derived-attribute triggers in the file.
    private static func existingTriggers(_ db: Database) throws -> [String: String] {
        var existing: [String: String] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND substr(name, 1, \(triggerPrefix.count)) = ?",
                                    arguments: [triggerPrefix]) {
            existing[row["name"]] = row["sql"]
        }
        return existing
    }

    /// Drops every derived-attribute trigger (before a migration rebuilds the tables they name).
    static func dropAll(_ db: Database) throws {
        for name in try existingTriggers(db).keys.sorted() { try db.execute(sql: "DROP TRIGGER \(name)") }
    }

    /// Makes the file's derived-attribute triggers exactly the model's: drops ours that are no
    /// longer wanted or differ, creates the missing ones, and recomputes every column whose
    /// triggers changed (values written before they existed). Runs inside a write transaction.
    func install(_ db: Database) throws {
        let existing = try Self.existingTriggers(db)
        let wanted = Dictionary(triggers.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        for (name, sql) in existing where wanted[name]?.sql != sql {
            try db.execute(sql: "DROP TRIGGER \(name)")
        }
        var changedColumns = Set<String>()
        for trigger in triggers where existing[trigger.name] != trigger.sql {
            try db.execute(sql: trigger.sql)
            changedColumns.insert(trigger.column)
        }
        for column in changedColumns.sorted() {
            if let statement = recomputeStatements[column] { try db.execute(sql: statement) }
        }
    }

    /// Registers the SQL functions the triggers call on a connection (every connection that
    /// writes a store: its own, and a migration's).
    static func registerFunctions(_ db: Database) {
        for function in functions { db.add(function: function) }
    }

    /// The string functions (Foundation's folding and case mapping, as fetches apply them) and the time.
    private static let functions: [DatabaseFunction] = ([("OCD_CANONICAL", .canonical), ("OCD_LOWERCASE", .lowercase), ("OCD_UPPERCASE", .uppercase)] as [(String, AttributeDerivation.Kind)])
        .map { name, transform in
            DatabaseFunction(name, argumentCount: 1, pure: true) { values in
                String.fromDatabaseValue(values[0]).map { DerivedColumnPlan.apply(transform, to: $0) }
            }
        } + [
            DatabaseFunction("OCD_NOW", argumentCount: 0, pure: false) { _ in
                Date().timeIntervalSinceReferenceDate
            },
        ]
}
