import Foundation

/// Keeps a server store's derived-attribute columns current with PostgreSQL triggers, so that
/// every write that changes what a value derives from (a save or batch request of any server, a
/// change in a related table, another program's `UPDATE`) recomputes it in the same transaction.
///
/// Each write `DerivedColumnPlan` lists becomes a PL/pgSQL function and a row trigger calling it
/// (both named `ocd_derived_<hash of table.column>_<n>`); the function keeps the schema it was
/// made in (`SET search_path FROM CURRENT`), so a program writing under another search path
/// updates the right tables.
///
/// `canonical:`, `lowercase:` and `uppercase:` need Foundation's case mapping and diacritic
/// folding, which PostgreSQL doesn't have: the triggers write the database's `lower`/`upper` of
/// the value and name the row in `OCD_DERIVED_PENDING`; before each save of this store commits,
/// `settle(_:)` computes those rows' values in Swift and writes the ones that differ. A row
/// changed by another program keeps the approximation until the next save of any OpenCoreData
/// store on the database.
struct SQLServerDerivedAttributes {
    /// One trigger with the function it runs.
    struct Trigger: Equatable {
        /// The name of both the trigger and its function, in lower case (as PostgreSQL keeps it).
        let name: String
        /// The table whose writes fire it, in lower case.
        let table: String
        /// The event clause (`AFTER UPDATE OF ZNAME ON ZAUTHOR`).
        let event: String
        /// The function's body; it begins with the event, so a changed event changes the body.
        let body: String
        /// The derived column it maintains (`table.column`).
        let column: String
    }

    static let pendingTable = "OCD_DERIVED_PENDING"
    private static let prefix = "ocd_derived_"

    /// The derived columns by `table.column`.
    private let plans: [String: DerivedColumnPlan]
    /// Every trigger the model needs, in a stable order.
    let triggers: [Trigger]
    /// Whether some derived column applies a string function, so saves settle pending rows.
    let needsSettling: Bool

    /// Reads the derivations of the schema's entities; throws 134020 for one no store can derive.
    init(schema: SQLiteSchema) throws {
        let plans = try DerivedColumnPlan.plans(for: schema, dialect: .postgreSQL)
        var triggers: [Trigger] = []
        for plan in plans {
            // A short, stable name part: PostgreSQL names are at most 63 bytes.
            let stem = Self.prefix + String(NSEntityDescription.keyHash(plan.key), radix: 16)
            for (index, dependency) in plan.dependencies.enumerated() {
                let body = "-- \(dependency.event)\nBEGIN\n\(Self.recompute(plan, where: dependency.rows));\nRETURN NULL;\nEND\n"
                triggers.append(Trigger(name: "\(stem)_\(index)", table: dependency.table.lowercased(), event: dependency.event, body: body, column: plan.key))
            }
        }
        self.plans = Dictionary(plans.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
        self.triggers = triggers
        needsSettling = plans.contains { $0.stringTransform != nil }
    }

    /// The statement recomputing a plan's column for the rows `rows` selects (all when nil); for a
    /// string function, it also names the rows in the pending table.
    private static func recompute(_ plan: DerivedColumnPlan, where rows: String?) -> String {
        guard plan.stringTransform != nil else { return plan.update(where: rows) }
        return "WITH changed AS (\(plan.update(where: rows)) RETURNING Z_PK) INSERT INTO \(pendingTable) (Z_TABLE, Z_COLUMN, Z_KEY) SELECT '\(plan.table)', '\(plan.column)', Z_PK FROM changed"
    }

    /// Makes the schema's derived-attribute triggers exactly the model's: drops ours that are no
    /// longer wanted, creates or replaces those that differ or are missing, and recomputes every
    /// column whose triggers changed. Runs inside the transaction that opens the store.
    func install(_ connection: any SQLServerConnection) throws {
        let namespace = "(SELECT oid FROM pg_namespace WHERE nspname = current_schema())"
        var functions: [String: String] = [:]
        for row in try connection.run("SELECT proname::text, prosrc FROM pg_proc WHERE pronamespace = \(namespace) AND left(proname, \(Self.prefix.count)) = $1",
                                      [.text(Self.prefix)]) {
            guard row.count == 2, case .text(let name) = row[0], case .text(let source) = row[1] else { continue }
            functions[name] = source
        }
        var existingTriggers: [String: String] = [:]
        for row in try connection.run("""
            SELECT t.tgname::text, c.relname::text FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
            WHERE c.relnamespace = \(namespace) AND NOT t.tgisinternal AND left(t.tgname, \(Self.prefix.count)) = $1
            """, [.text(Self.prefix)]) {
            guard row.count == 2, case .text(let name) = row[0], case .text(let table) = row[1] else { continue }
            existingTriggers[name] = table
        }
        let wanted = Dictionary(triggers.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        // Ours that are no longer wanted, or whose table or function changed.
        for (name, table) in existingTriggers.sorted(by: { $0.key < $1.key })
            where wanted[name].map({ $0.table != table || functions[name] != $0.body }) ?? true {
            try connection.run("DROP TRIGGER \(name) ON \(table)", [])
            existingTriggers[name] = nil
        }
        for name in functions.keys.sorted() where wanted[name] == nil {
            try connection.run("DROP FUNCTION \(name)()", [])
        }
        if needsSettling {
            try connection.run("CREATE TABLE IF NOT EXISTS \(Self.pendingTable) (Z_TABLE text NOT NULL, Z_COLUMN text NOT NULL, Z_KEY bigint NOT NULL)", [])
        }
        var changedColumns = Set<String>()
        for trigger in triggers where existingTriggers[trigger.name] == nil {
            if functions[trigger.name] != trigger.body {
                try connection.run("CREATE OR REPLACE FUNCTION \(trigger.name)() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $ocd$\(trigger.body)$ocd$", [])
            }
            try connection.run("CREATE TRIGGER \(trigger.name) \(trigger.event) FOR EACH ROW EXECUTE FUNCTION \(trigger.name)()", [])
            changedColumns.insert(trigger.column)
        }
        for column in changedColumns.sorted() {
            if let plan = plans[column] { try connection.run(Self.recompute(plan, where: nil), []) }
        }
        try settle(connection)
    }

    /// Gives the rows the triggers left pending their exact string values (Foundation's
    /// `lowercased()`, `uppercased()` and canonical folding), writing those that differ from the
    /// database's approximation. Runs at the end of each save's transaction, before it commits.
    func settle(_ connection: any SQLServerConnection) throws {
        guard needsSettling else { return }
        // A written value can feed another derived column, which names its rows again.
        for _ in 0..<8 {
            let pending = try connection.run("DELETE FROM \(Self.pendingTable) RETURNING Z_TABLE, Z_COLUMN, Z_KEY", [])
            guard !pending.isEmpty else { return }
            var keysByColumn: [String: Set<Int64>] = [:]
            for row in pending {
                guard row.count == 3, case .text(let table) = row[0], case .text(let column) = row[1],
                      let key = SQLServerValueCoding.integer(row[2]) else { continue }
                keysByColumn["\(table).\(column)", default: []].insert(key)
            }
            for (column, keys) in keysByColumn.sorted(by: { $0.key < $1.key }) {
                guard let plan = plans[column], let transform = plan.stringTransform else { continue }
                try SQLServerStore.forEachChunk(of: keys.sorted()) { placeholders, keys in
                    let rows = try connection.run("SELECT Z_PK, \(plan.source), \(plan.column) FROM \(plan.table) WHERE Z_PK IN (\(placeholders))", keys)
                    for row in rows {
                        guard row.count == 3, let key = SQLServerValueCoding.integer(row[0]) else { continue }
                        let exact: SQLServerValue
                        if case .text(let source) = row[1] { exact = .text(DerivedColumnPlan.apply(transform, to: source)) } else { exact = .null }
                        if exact != row[2] {
                            try connection.run("UPDATE \(plan.table) SET \(plan.column) = $1 WHERE Z_PK = $2", [exact, .integer(key)])
                        }
                    }
                }
            }
        }
        throw CoreDataError.make(.coreData, "Derived attributes kept deriving one another: their string values could not be settled.")
    }
}
