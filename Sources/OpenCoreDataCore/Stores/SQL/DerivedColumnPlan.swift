import Foundation

/// How one derived attribute's column is computed in SQL, and which writes recompute it: the part
/// of derived attributes shared by the SQLite store (`SQLiteDerivedAttributes`, triggers in SQLite)
/// and the server stores (`SQLServerDerivedAttributes`, triggers in PostgreSQL).
///
/// The value (`value`) is one SQL expression over the row of `table` being updated:
/// - a to-one key path reads the attribute's column through a subquery per relationship;
/// - `canonical:`, `lowercase:` and `uppercase:` wrap it in the dialect's string function
///   (`stringFunction`): exact in SQLite (functions registered by the store), an approximation in
///   PostgreSQL that the store corrects in Swift before the save commits (`stringTransform`);
/// - `@count` and `@sum` aggregate the destination rows (by the inverse's foreign key, or through
///   the join table of a many-to-many relationship);
/// - `now()` is the time in seconds since the reference date.
///
/// `dependencies` lists, for each write that can change the value, the trigger event and which
/// rows of `table` it recomputes: the row itself when inserted or when the column it reads
/// changes (for `now()`, whenever its version `Z_OPT` changes: every save of the object), rows
/// whose relationship path reaches a changed or deleted row of another table, and the owners of
/// inserted, deleted or moved destination rows. Values are derived only for rows of the
/// attribute's entity and its subentities (`entityFilter`).
struct DerivedColumnPlan {
    let table: String
    let column: String
    /// `Z_ENT IN (…)`: the attribute's entity and its subentities.
    let entityFilter: String
    /// The value, as an expression over the row of `table` being updated.
    let value: String
    /// `value` before its string function: the string the function applies to.
    let source: String
    /// The string function applied to the value read (`canonical:`, `lowercase:`, `uppercase:`), if any.
    let stringTransform: AttributeDerivation.Kind?
    /// The writes that recompute the column, and which rows of `table` each recomputes.
    let dependencies: [Dependency]

    /// One kind of write that can change the value.
    struct Dependency {
        /// `AFTER INSERT`, `AFTER DELETE` or `AFTER UPDATE OF columns`.
        let change: String
        /// The table written.
        let table: String
        /// Which rows of the plan's table to recompute: a condition over `NEW` and `OLD`.
        let rows: String

        init(_ change: String, on table: String, rows: String) {
            (self.change, self.table, self.rows) = (change, table, rows)
        }

        /// The trigger event: `AFTER UPDATE OF ZNAME ON ZAUTHOR`.
        var event: String { "\(change) ON \(table)" }
    }

    /// Reads the derivations of the schema's entities in a stable order, one plan per derived
    /// column; throws 134020 for one no store can derive.
    static func plans(for schema: SQLiteSchema, dialect: SQLDialect) throws -> [DerivedColumnPlan] {
        var plans: [DerivedColumnPlan] = []
        for entity in schema.entities {
            guard let mapping = schema.mapping(for: entity) else { continue }
            for slot in entity.derivedSlots {
                // An inherited derived attribute is handled once, on the entity that declares it.
                guard let derived = entity.frozenProperties[slot] as? NSDerivedAttributeDescription, derived.entity === entity,
                      let column = mapping.columnsBySlot[slot] else { continue }
                let derivation = try AttributeDerivation.make(for: derived, in: entity)
                plans.append(try DerivedColumnPlan(derivation: derivation, mapping: mapping, column: column, schema: schema, dialect: dialect))
            }
        }
        return plans
    }

    /// `table.column`, the key the stores index plans by.
    var key: String { "\(table).\(column)" }

    init(derivation: AttributeDerivation, mapping: SQLiteSchema.EntityMapping, column: String, schema: SQLiteSchema, dialect: SQLDialect) throws {
        table = mapping.tableName
        self.column = column
        entityFilter = "Z_ENT IN (\(mapping.numbersWithSubentities.map(String.init).joined(separator: ", ")))"
        var dependencies = [Dependency("AFTER INSERT", on: table, rows: "Z_PK = NEW.Z_PK")]
        // The string a copy or a string function reads.
        var sourceExpression: String?
        func columnOf(_ property: NSPropertyDescription, in entity: NSEntityDescription?) throws -> (table: String, column: String) {
            guard let entity, let mapping = schema.mapping(for: entity), let column = mapping.columnsBySlot[property.slot] else {
                throw CoreDataError.make(.incompatibleSchema, "The derived attribute \(column) reads \(property.name), which the store doesn't hold.")
            }
            return (mapping.tableName, column)
        }
        switch derivation.kind {
        case .copy, .lowercase, .uppercase, .canonical:
            stringTransform = derivation.kind == .copy ? nil : derivation.kind
            let attribute = derivation.attribute!
            if derivation.path.isEmpty {
                let source = try columnOf(attribute, in: mapping.entity)
                sourceExpression = "\(table).\(source.column)"
                value = Self.wrap("\(table).\(source.column)", derivation.kind, dialect)
                dependencies.append(Dependency("AFTER UPDATE OF \(source.column)", on: table, rows: "Z_PK = NEW.Z_PK"))
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
                var expression = "\(table).\(firstKey)"
                for (level, hop) in levels.enumerated() {
                    expression = "(SELECT d\(level).\(hop.column) FROM \(hop.table) d\(level) WHERE d\(level).Z_PK = \(expression))"
                }
                sourceExpression = expression
                value = Self.wrap(expression, derivation.kind, dialect)
                dependencies.append(Dependency("AFTER UPDATE OF \(firstKey)", on: table, rows: "Z_PK = NEW.Z_PK"))
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
                    dependencies.append(Dependency("AFTER UPDATE OF \(read.column)", on: read.table, rows: reaching("NEW.Z_PK")))
                    dependencies.append(Dependency("AFTER DELETE", on: read.table, rows: reaching("OLD.Z_PK")))
                }
            }
        case .count, .sum:
            stringTransform = nil
            let relationship = derivation.toMany!
            let summed = try derivation.attribute.map { try columnOf($0, in: relationship.destinationEntity).column }
            let destination = try Self.table(of: relationship.destinationEntity, schema)
            let aggregate = summed.map { "COALESCE(SUM(d.\($0)), 0)" } ?? "COUNT(*)"
            if let join = schema.joinTable(for: relationship) {
                let (mine, theirs) = join.columns(from: relationship)
                value = summed == nil
                    ? "(SELECT COUNT(*) FROM \(join.name) j WHERE j.\(mine) = \(table).Z_PK)"
                    : "(SELECT \(aggregate) FROM \(join.name) j JOIN \(destination) d ON d.Z_PK = j.\(theirs) WHERE j.\(mine) = \(table).Z_PK)"
                dependencies.append(Dependency("AFTER INSERT", on: join.name, rows: "Z_PK = NEW.\(mine)"))
                dependencies.append(Dependency("AFTER DELETE", on: join.name, rows: "Z_PK = OLD.\(mine)"))
                if let summed {
                    dependencies.append(Dependency("AFTER UPDATE OF \(summed)", on: destination, rows: "Z_PK IN (SELECT \(mine) FROM \(join.name) WHERE \(theirs) = NEW.Z_PK)"))
                }
            } else {
                guard let inverse = relationship.inverseRelationship else {
                    throw CoreDataError.make(.incompatibleSchema, "The derived attribute \(column) aggregates \(relationship.name), which has no inverse.")
                }
                let foreignKey = try columnOf(inverse, in: inverse.entity).column
                value = "(SELECT \(aggregate) FROM \(destination) d WHERE d.\(foreignKey) = \(table).Z_PK)"
                dependencies.append(Dependency("AFTER INSERT", on: destination, rows: "Z_PK = NEW.\(foreignKey)"))
                dependencies.append(Dependency("AFTER DELETE", on: destination, rows: "Z_PK = OLD.\(foreignKey)"))
                let moved = [foreignKey] + (summed.map { [$0] } ?? [])
                dependencies.append(Dependency("AFTER UPDATE OF \(moved.joined(separator: ", "))", on: destination, rows: "Z_PK IN (OLD.\(foreignKey), NEW.\(foreignKey))"))
            }
        case .now:
            stringTransform = nil
            value = dialect == .sqlite ? "OCD_NOW()" : "(EXTRACT(EPOCH FROM clock_timestamp())::double precision - 978307200)"
            dependencies.append(Dependency("AFTER UPDATE OF Z_OPT", on: table, rows: "Z_PK = NEW.Z_PK"))
        }
        source = sourceExpression ?? value
        self.dependencies = dependencies
    }

    /// The table of an entity's hierarchy.
    private static func table(of entity: NSEntityDescription?, _ schema: SQLiteSchema) throws -> String {
        guard let entity, let mapping = schema.mapping(for: entity) else {
            throw CoreDataError.make(.incompatibleSchema, "A derived attribute reads an entity the store doesn't hold.")
        }
        return mapping.tableName
    }

    /// The expression with the derivation's string function applied, in the dialect's SQL:
    /// SQLite calls the store's own functions (Foundation's case mapping and folding);
    /// PostgreSQL's `lower` and `upper` follow the database's locale, and have no diacritic
    /// folding, so the server store recomputes those values in Swift (see `stringTransform`).
    private static func wrap(_ expression: String, _ kind: AttributeDerivation.Kind, _ dialect: SQLDialect) -> String {
        switch (kind, dialect) {
        case (.canonical, .sqlite): "OCD_CANONICAL(\(expression))"
        case (.lowercase, .sqlite): "OCD_LOWERCASE(\(expression))"
        case (.uppercase, .sqlite): "OCD_UPPERCASE(\(expression))"
        case (.canonical, .postgreSQL), (.lowercase, .postgreSQL): "lower(\(expression))"
        case (.uppercase, .postgreSQL): "upper(\(expression))"
        default: expression
        }
    }

    /// Applies a string function exactly as a fetch or the SQLite store does.
    static func apply(_ transform: AttributeDerivation.Kind, to string: String) -> String {
        switch transform {
        case .canonical: StringComparison.canonical(string)
        case .lowercase: string.lowercased()
        case .uppercase: string.uppercased()
        default: string
        }
    }

    /// The statement recomputing the column for the rows `rows` selects (all when nil).
    func update(where rows: String?) -> String {
        "UPDATE \(table) SET \(column) = \(value) WHERE \(entityFilter)\(rows.map { " AND \($0)" } ?? "")"
    }
}
