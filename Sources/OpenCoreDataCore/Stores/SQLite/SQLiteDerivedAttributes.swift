import Foundation
import GRDB

/// Keeps a SQLite store's derived-attribute columns current with SQLite triggers, so that every
/// write that changes what a value derives from (a save, a batch request, a change in a related
/// table) recomputes it in the same transaction.
///
/// For a derived attribute stored in column `C` of table `T` (see `AttributeDerivation`), the
/// value is one SQL expression over the row being updated (`Plan.value`):
/// - a to-one key path reads the attribute's column through a subquery per relationship;
/// - `canonical:`, `lowercase:` and `uppercase:` wrap it in `OCD_CANONICAL`, `OCD_LOWERCASE` and
///   `OCD_UPPERCASE` (registered on every connection of the store: Unicode-aware, unlike
///   SQLite's own `lower` and `upper`);
/// - `@count` and `@sum` aggregate the destination rows (by the inverse's foreign key, or through
///   the join table of a many-to-many relationship);
/// - `now()` is `OCD_NOW()`, seconds since the reference date.
///
/// Triggers (named `OCD_DERIVED_<T>_<C>_<n>`) recompute it for the rows a change can affect: the
/// row itself when inserted or when the column it reads changes (for `now()`, whenever its version
/// `Z_OPT` changes: every save of the object), rows whose relationship path reaches a changed or
/// deleted row of another table, and the owners of inserted, deleted or moved destination rows.
/// Values are derived only for rows of the attribute's entity and its subentities.
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
        for entity in schema.entities {
            guard let mapping = schema.mapping(for: entity) else { continue }
            for slot in entity.derivedSlots {
                // An inherited derived attribute is handled once, on the entity that declares it.
                guard let derived = entity.frozenProperties[slot] as? NSDerivedAttributeDescription, derived.entity === entity,
                      let column = mapping.columnsBySlot[slot] else { continue }
                let derivation = try AttributeDerivation.make(for: derived, in: entity)
                let plan = try Plan(derivation: derivation, mapping: mapping, column: column, schema: schema)
                let key = "\(mapping.tableName).\(column)"
                recompute[key] = plan.update(where: nil)
                for (index, trigger) in plan.dependencies.enumerated() {
                    let name = "\(Self.triggerPrefix)\(mapping.tableName)_\(column)_\(index)"
                    triggers.append(Trigger(name: name, sql: "CREATE TRIGGER \(name) \(trigger.event) BEGIN \(plan.update(where: trigger.rows)); END", column: key))
                }
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

    private static let functions: [DatabaseFunction] = [
        DatabaseFunction("OCD_CANONICAL", argumentCount: 1, pure: true) { values in
            String.fromDatabaseValue(values[0]).map(StringComparison.canonical)
        },
        DatabaseFunction("OCD_LOWERCASE", argumentCount: 1, pure: true) { values in
            String.fromDatabaseValue(values[0])?.lowercased()
        },
        DatabaseFunction("OCD_UPPERCASE", argumentCount: 1, pure: true) { values in
            String.fromDatabaseValue(values[0])?.uppercased()
        },
        DatabaseFunction("OCD_NOW", argumentCount: 0, pure: false) { _ in
            Date().timeIntervalSinceReferenceDate
        },
    ]

    /// How one derived column is computed and which changes recompute it.
    private struct Plan {
        let table: String
        let column: String
        /// `Z_ENT IN (…)`: the attribute's entity and its subentities.
        let entityFilter: String
        /// The value, as an expression over the row of `table` being updated.
        let value: String
        /// (trigger event, which rows of `table` to recompute).
        let dependencies: [(event: String, rows: String)]

        init(derivation: AttributeDerivation, mapping: SQLiteSchema.EntityMapping, column: String, schema: SQLiteSchema) throws {
            table = mapping.tableName
            self.column = column
            entityFilter = "Z_ENT IN (\(mapping.numbersWithSubentities.map(String.init).joined(separator: ", ")))"
            var dependencies: [(event: String, rows: String)] = [("AFTER INSERT ON \(table)", "Z_PK = NEW.Z_PK")]
            func columnOf(_ property: NSPropertyDescription, in entity: NSEntityDescription?) throws -> (table: String, column: String) {
                guard let entity, let mapping = schema.mapping(for: entity), let column = mapping.columnsBySlot[property.slot] else {
                    throw CoreDataError.make(.incompatibleSchema, "The derived attribute \(column) reads \(property.name), which the store doesn't hold.")
                }
                return (mapping.tableName, column)
            }
            switch derivation.kind {
            case .copy, .lowercase, .uppercase, .canonical:
                let attribute = derivation.attribute!
                if derivation.path.isEmpty {
                    let source = try columnOf(attribute, in: mapping.entity)
                    value = Self.wrap("\(table).\(source.column)", derivation.kind)
                    dependencies.append(("AFTER UPDATE OF \(source.column) ON \(table)", "Z_PK = NEW.Z_PK"))
                } else {
                    // The tables along the path, and the column read in each: the next
                    // relationship's foreign key, then the attribute.
                    var hops: [(table: String, column: String)] = []
                    var entity: NSEntityDescription? = mapping.entity
                    for relationship in derivation.path {
                        hops.append(try columnOf(relationship, in: entity))
                        entity = relationship.destinationEntity
                    }
                    let target = try columnOf(attribute, in: entity)
                    // hops[0] is (table, fk of the first relationship); the subquery tables are
                    // the destinations: hops[1...] tables, then the target's.
                    let firstKey = hops[0].column
                    let levels = Array(hops.dropFirst()) + [target]
                    // Each level's subquery reads its column from the row the level before points at.
                    var read = "\(table).\(firstKey)"
                    for (level, hop) in levels.enumerated() {
                        read = "(SELECT d\(level).\(hop.column) FROM \(hop.table) d\(level) WHERE d\(level).Z_PK = \(read))"
                    }
                    value = Self.wrap(read, derivation.kind)
                    dependencies.append(("AFTER UPDATE OF \(firstKey) ON \(table)", "Z_PK = NEW.Z_PK"))
                    // A change (or deletion) of a row along the path recomputes every row whose
                    // path goes through it.
                    for (level, read) in levels.enumerated() {
                        func reaching(_ pk: String) -> String {
                            var set = pk
                            for back in stride(from: level - 1, through: 0, by: -1) {
                                set = "SELECT Z_PK FROM \(levels[back].table) WHERE \(levels[back].column) IN (\(set))"
                            }
                            return "\(firstKey) IN (\(set))"
                        }
                        dependencies.append(("AFTER UPDATE OF \(read.column) ON \(read.table)", reaching("NEW.Z_PK")))
                        dependencies.append(("AFTER DELETE ON \(read.table)", reaching("OLD.Z_PK")))
                    }
                }
            case .count, .sum:
                let relationship = derivation.toMany!
                let summed = try derivation.attribute.map { try columnOf($0, in: relationship.destinationEntity).column }
                let destination = try Self.table(of: relationship.destinationEntity, schema)
                let aggregate = summed.map { "COALESCE(SUM(d.\($0)), 0)" } ?? "COUNT(*)"
                if let join = schema.joinTable(for: relationship) {
                    let (mine, theirs) = join.columns(from: relationship)
                    value = summed == nil
                        ? "(SELECT COUNT(*) FROM \(join.name) j WHERE j.\(mine) = \(table).Z_PK)"
                        : "(SELECT \(aggregate) FROM \(join.name) j JOIN \(destination) d ON d.Z_PK = j.\(theirs) WHERE j.\(mine) = \(table).Z_PK)"
                    dependencies.append(("AFTER INSERT ON \(join.name)", "Z_PK = NEW.\(mine)"))
                    dependencies.append(("AFTER DELETE ON \(join.name)", "Z_PK = OLD.\(mine)"))
                    if let summed {
                        dependencies.append(("AFTER UPDATE OF \(summed) ON \(destination)", "Z_PK IN (SELECT \(mine) FROM \(join.name) WHERE \(theirs) = NEW.Z_PK)"))
                    }
                } else {
                    guard let inverse = relationship.inverseRelationship else {
                        throw CoreDataError.make(.incompatibleSchema, "The derived attribute \(column) aggregates \(relationship.name), which has no inverse.")
                    }
                    let foreignKey = try columnOf(inverse, in: inverse.entity).column
                    value = "(SELECT \(aggregate) FROM \(destination) d WHERE d.\(foreignKey) = \(table).Z_PK)"
                    dependencies.append(("AFTER INSERT ON \(destination)", "Z_PK = NEW.\(foreignKey)"))
                    dependencies.append(("AFTER DELETE ON \(destination)", "Z_PK = OLD.\(foreignKey)"))
                    let moved = [foreignKey] + (summed.map { [$0] } ?? [])
                    dependencies.append(("AFTER UPDATE OF \(moved.joined(separator: ", ")) ON \(destination)", "Z_PK IN (OLD.\(foreignKey), NEW.\(foreignKey))"))
                }
            case .now:
                value = "OCD_NOW()"
                dependencies.append(("AFTER UPDATE OF Z_OPT ON \(table)", "Z_PK = NEW.Z_PK"))
            }
            self.dependencies = dependencies
        }

        /// The table of an entity's hierarchy.
        static func table(of entity: NSEntityDescription?, _ schema: SQLiteSchema) throws -> String {
            guard let entity, let mapping = schema.mapping(for: entity) else {
                throw CoreDataError.make(.incompatibleSchema, "A derived attribute reads an entity the store doesn't hold.")
            }
            return mapping.tableName
        }

        static func wrap(_ expression: String, _ kind: AttributeDerivation.Kind) -> String {
            switch kind {
            case .canonical: "OCD_CANONICAL(\(expression))"
            case .lowercase: "OCD_LOWERCASE(\(expression))"
            case .uppercase: "OCD_UPPERCASE(\(expression))"
            default: expression
            }
        }

        /// The statement recomputing the column for the rows `rows` selects (all when nil).
        func update(where rows: String?) -> String {
            "UPDATE \(table) SET \(column) = \(value) WHERE \(entityFilter)\(rows.map { " AND \($0)" } ?? "")"
        }
    }
}
