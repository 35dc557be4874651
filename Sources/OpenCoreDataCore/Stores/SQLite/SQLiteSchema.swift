import Foundation

/// How a model maps onto Core Data's SQLite layout, for one store.
///
/// - One table `Z<ROOTENTITY>` per inheritance hierarchy, with `Z_PK` (primary key), `Z_ENT` (the
///   row's entity number) and `Z_OPT` (optimistic-locking version), then one column per stored
///   attribute (`Z<NAME>`) and per to-one relationship (`Z<NAME>`, the destination's `Z_PK`) of
///   every entity of the hierarchy.
/// - A to-one relationship whose destination has subentities also has `Z<n>_<NAME>` beside its
///   key, holding the destination row's `Z_ENT` (n is the destination's entity number), so a row
///   decodes to the right subentity without reading the destination's table.
/// - An ordered to-many relationship whose inverse is to-one adds `Z_FOK_<INVERSE>` (the order)
///   to the destination's table.
/// - A many-to-many relationship has a join table `Z_<n><NAME>` with columns `Z_<n><INVERSE>` and
///   `Z_<m><NAME>`, where n and m are the entity numbers of the two sides.
/// - Entity numbers come from the store's `Z_PRIMARYKEY` table when it exists (so stores written
///   by Apple keep their numbering), otherwise from the model.
///
/// The same layout serves the PostgreSQL store, with its column types (`SQLDialect`).
package final class SQLiteSchema {
    /// The mapping of one entity.
    final class EntityMapping {
        let entity: NSEntityDescription
        let number: Int
        let tableName: String
        /// Column name by property slot, for stored attributes and to-one relationships.
        var columnsBySlot: [Int: String] = [:]
        /// The destination entity-number column (`Z<n>_<NAME>`) by slot, for to-one relationships
        /// whose destination has subentities, when the store has it.
        var entityColumnsBySlot: [Int: String] = [:]
        /// The entity and its subentities' numbers (for `Z_ENT IN (…)`).
        var numbersWithSubentities: [Int] = []

        init(entity: NSEntityDescription, number: Int, tableName: String) {
            self.entity = entity
            self.number = number
            self.tableName = tableName
        }
    }

    /// A many-to-many join table.
    struct JoinTable {
        let name: String
        /// The column holding the `Z_PK` of the relationship's source (owner side).
        let sourceColumn: String
        /// The column holding the `Z_PK` of the destination.
        let destinationColumn: String
        /// The order column for an ordered relationship.
        let orderColumn: String?
        /// The relationship that owns the table.
        let owner: NSRelationshipDescription

        /// The columns seen from one side of the relationship: `mine` holds the `Z_PK` of that
        /// relationship's source, `theirs` the `Z_PK` of its destination.
        func columns(from relationship: NSRelationshipDescription) -> (mine: String, theirs: String) {
            owner === relationship ? (sourceColumn, destinationColumn) : (destinationColumn, sourceColumn)
        }
    }

    private(set) var mappings: [ObjectIdentifier: EntityMapping] = [:]
    private(set) var entitiesByNumber: [Int: NSEntityDescription] = [:]
    private var joinTables: [ObjectIdentifier: JoinTable] = [:]
    let entities: [NSEntityDescription]

    /// Builds the mapping; `storedNumbers` are the numbers from an existing `Z_PRIMARYKEY` table.
    package init(entities: [NSEntityDescription], storedNumbers: [String: Int]) {
        self.entities = entities
        var next = (storedNumbers.values.max() ?? 0) + 1
        func number(for entity: NSEntityDescription) -> Int {
            if let stored = storedNumbers[entity.name ?? ""] { return stored }
            if storedNumbers.isEmpty { return entity.entityNumber }
            defer { next += 1 }
            return next
        }
        for entity in entities {
            let mapping = EntityMapping(entity: entity, number: number(for: entity), tableName: "Z" + (entity.rootEntity.name ?? "").uppercased())
            mappings[ObjectIdentifier(entity)] = mapping
            entitiesByNumber[mapping.number] = entity
        }
        for entity in entities {
            let mapping = mappings[ObjectIdentifier(entity)]!
            mapping.numbersWithSubentities = entity.selfAndDescendants.compactMap { mappings[ObjectIdentifier($0)]?.number }.sorted()
            for property in entity.frozenProperties where !property.isTransient {
                if let attribute = property as? NSAttributeDescription {
                    mapping.columnsBySlot[attribute.slot] = columnName(for: attribute)
                } else if let relationship = property as? NSRelationshipDescription, !relationship.isToMany {
                    mapping.columnsBySlot[relationship.slot] = columnName(for: relationship)
                    if Self.hasEntityColumn(relationship), let destination = relationship.destinationEntity,
                       let destinationNumber = mappings[ObjectIdentifier(destination)]?.number {
                        mapping.entityColumnsBySlot[relationship.slot] = "Z\(destinationNumber)_" + relationship.name.uppercased()
                    }
                }
            }
        }
        for entity in entities {
            for relationship in entity.frozenRelationships where relationship.entity === entity && isManyToMany(relationship) {
                guard let inverse = relationship.inverseRelationship, let destination = relationship.destinationEntity else { continue }
                let ownerIsThis = (entity.name ?? "", relationship.name) <= (destination.name ?? "", inverse.name)
                let owner = ownerIsThis ? relationship : inverse
                let ownerInverse = ownerIsThis ? inverse : relationship
                guard let ownerEntity = owner.entity, let ownerDestination = owner.destinationEntity,
                      let n = mappings[ObjectIdentifier(ownerEntity)]?.number,
                      let m = mappings[ObjectIdentifier(ownerDestination)]?.number else { continue }
                let table = JoinTable(
                    name: "Z_\(n)\(owner.name.uppercased())",
                    sourceColumn: "Z_\(n)\(ownerInverse.name.uppercased())",
                    destinationColumn: "Z_\(m)\(owner.name.uppercased())",
                    orderColumn: owner.isOrdered ? "Z_FOK_\(m)\(owner.name.uppercased())" : nil,
                    owner: owner
                )
                joinTables[ObjectIdentifier(owner)] = table
                joinTables[ObjectIdentifier(ownerInverse)] = table
            }
        }
    }

    func mapping(for entity: NSEntityDescription) -> EntityMapping? { mappings[ObjectIdentifier(entity)] }

    /// Whether a relationship has an entity-number column beside its key: a to-one whose
    /// destination has subentities.
    static func hasEntityColumn(_ relationship: NSRelationshipDescription) -> Bool {
        !relationship.isToMany && !(relationship.destinationEntity?.subentities.isEmpty ?? true)
    }

    /// Whether any of the entities' stored relationships has an entity-number column (so opening
    /// an existing store must check which of them it has).
    static func hasEntityColumns(_ entities: [NSEntityDescription]) -> Bool {
        entities.contains { entity in entity.frozenRelationships.contains { !$0.isTransient && hasEntityColumn($0) } }
    }

    /// Forgets the entity-number columns an existing store lacks (stores OpenCoreData wrote
    /// before it made them); `columns` are the store's columns by upper-cased table name.
    func keepEntityColumns(presentIn columns: [String: Set<String>]) {
        for mapping in mappings.values {
            let present = columns[mapping.tableName.uppercased()] ?? []
            mapping.entityColumnsBySlot = mapping.entityColumnsBySlot.filter { present.contains($0.value.uppercased()) }
        }
    }

    /// Statements that set every entity-number column from the destination rows (after rows were
    /// copied in without them).
    func entityColumnFillStatements() -> [String] {
        var statements: [String] = []
        for entity in entities {
            guard let mapping = mapping(for: entity) else { continue }
            for (slot, entityColumn) in mapping.entityColumnsBySlot.sorted(by: { $0.key < $1.key }) {
                guard let relationship = entity.frozenProperties[slot] as? NSRelationshipDescription, relationship.entity === entity,
                      let destination = relationship.destinationEntity, let target = self.mapping(for: destination),
                      let key = mapping.columnsBySlot[slot] else { continue }
                statements.append("UPDATE \(mapping.tableName) SET \(entityColumn) = (SELECT d.Z_ENT FROM \(target.tableName) d WHERE d.Z_PK = \(mapping.tableName).\(key)) WHERE \(key) IS NOT NULL")
            }
        }
        return statements
    }

    func entity(number: Int) -> NSEntityDescription? { entitiesByNumber[number] }

    /// The entity numbers of the possible destinations of an entity's to-ones that have an
    /// entity column (`Z<n>_<NAME>`), by destination entity: what those columns hold.
    func destinationNumbers(ofEntityColumnsOf entity: NSEntityDescription) -> [ObjectIdentifier: Int64] {
        var numbers: [ObjectIdentifier: Int64] = [:]
        for slot in mapping(for: entity)?.entityColumnsBySlot.keys ?? [:].keys {
            for destination in (entity.frozenProperties[slot] as? NSRelationshipDescription)?.destinationEntity?.selfAndDescendants ?? [] {
                if let number = mapping(for: destination)?.number { numbers[ObjectIdentifier(destination)] = Int64(number) }
            }
        }
        return numbers
    }

    func joinTable(for relationship: NSRelationshipDescription) -> JoinTable? { joinTables[ObjectIdentifier(relationship)] }

    var allJoinTables: [JoinTable] {
        var seen = Set<String>()
        return joinTables.values.filter { seen.insert($0.name).inserted }.sorted { $0.name < $1.name }
    }

    func isManyToMany(_ relationship: NSRelationshipDescription) -> Bool {
        relationship.isToMany && (relationship.inverseRelationship?.isToMany ?? true)
    }

    func columnName(for attribute: NSAttributeDescription) -> String { "Z" + attribute.name.uppercased() }
    func columnName(for relationship: NSRelationshipDescription) -> String { "Z" + relationship.name.uppercased() }

    /// The order column on a to-many relationship's destination table, for an ordered one-to-many.
    func orderColumn(for relationship: NSRelationshipDescription) -> String? {
        guard relationship.isToMany, relationship.isOrdered, let inverse = relationship.inverseRelationship, !inverse.isToMany else { return nil }
        return "Z_FOK_" + inverse.name.uppercased()
    }

    /// Every table's columns, for creating a store.
    package func createStatements(dialect: SQLDialect = .sqlite) -> [String] {
        var statements: [String] = []
        var tables: [String: [(String, String)]] = [:]
        var tableOrder: [String] = []
        for entity in entities.sorted(by: { mapping(for: $0)!.number < mapping(for: $1)!.number }) {
            let mapping = mapping(for: entity)!
            if tables[mapping.tableName] == nil {
                tables[mapping.tableName] = [("Z_PK", dialect.primaryKeyType), ("Z_ENT", dialect.integerType), ("Z_OPT", dialect.integerType)]
                tableOrder.append(mapping.tableName)
            }
            for property in entity.frozenProperties where property.entity === entity && !property.isTransient {
                guard let column = mapping.columnsBySlot[property.slot] else { continue }
                let type = (property as? NSAttributeDescription).map(dialect.columnType) ?? dialect.integerType
                if !tables[mapping.tableName]!.contains(where: { $0.0 == column }) { tables[mapping.tableName]!.append((column, type)) }
                if let entityColumn = mapping.entityColumnsBySlot[property.slot], !tables[mapping.tableName]!.contains(where: { $0.0 == entityColumn }) {
                    tables[mapping.tableName]!.append((entityColumn, dialect.integerType))
                }
            }
            for relationship in entity.frozenRelationships where relationship.entity === entity {
                if let order = orderColumn(for: relationship), let destination = relationship.destinationEntity,
                   let table = self.mapping(for: destination)?.tableName {
                    if tables[table] == nil {
                        tables[table] = [("Z_PK", dialect.primaryKeyType), ("Z_ENT", dialect.integerType), ("Z_OPT", dialect.integerType)]
                        tableOrder.append(table)
                    }
                    if !tables[table]!.contains(where: { $0.0 == order }) { tables[table]!.append((order, dialect.integerType)) }
                }
            }
        }
        for table in tableOrder {
            statements.append("CREATE TABLE \(table) ( \(tables[table]!.map { "\($0.0) \($0.1)" }.joined(separator: ", ")) )")
        }
        for entity in entities {
            let mapping = mapping(for: entity)!
            for relationship in entity.frozenRelationships where relationship.entity === entity && !relationship.isToMany && !relationship.isTransient {
                let column = mapping.columnsBySlot[relationship.slot]!
                statements.append("CREATE INDEX IF NOT EXISTS \(mapping.tableName)_\(column)_INDEX ON \(mapping.tableName) (\(column))")
            }
            if entity.superentity == nil && !entity.subentities.isEmpty {
                statements.append("CREATE INDEX IF NOT EXISTS \(mapping.tableName)_Z_ENT_INDEX ON \(mapping.tableName) (Z_ENT)")
            }
            for index in entity.indexes {
                let columns = index.elements.compactMap { element -> String? in
                    guard let property = element.property, let column = mapping.columnsBySlot[property.slot] else { return nil }
                    return column + (element.isAscending ? "" : " DESC")
                }
                if !columns.isEmpty {
                    statements.append("CREATE INDEX IF NOT EXISTS Z_\(entity.name ?? "")_\(index.name) ON \(mapping.tableName) (\(columns.joined(separator: ", ")))")
                }
            }
            // Uniqueness constraints are checked by query at save (`SQLiteStore+Constraints`); an
            // ordinary index keeps that query from scanning the table.
            for (number, properties) in entity.uniquenessConstraintProperties.enumerated() {
                let columns = properties.compactMap { mapping.columnsBySlot[$0.slot] }
                if columns.count == properties.count {
                    statements.append("CREATE INDEX IF NOT EXISTS Z_\(entity.name ?? "")_UNIQUENESS_\(number + 1) ON \(mapping.tableName) (\(columns.joined(separator: ", ")))")
                }
            }
        }
        for join in allJoinTables {
            var columns = "\(join.sourceColumn) \(dialect.integerType), \(join.destinationColumn) \(dialect.integerType)"
            if let order = join.orderColumn { columns += ", \(order) \(dialect.integerType)" }
            statements.append("CREATE TABLE \(join.name) ( \(columns), PRIMARY KEY (\(join.sourceColumn), \(join.destinationColumn)) )")
            statements.append("CREATE INDEX IF NOT EXISTS \(join.name)_\(join.destinationColumn)_INDEX ON \(join.name) (\(join.destinationColumn), \(join.sourceColumn))")
        }
        let (integer, text, bytes) = (dialect.integerType, dialect.textType, dialect.bytesType)
        statements.append("CREATE TABLE Z_PRIMARYKEY (Z_ENT \(integer) PRIMARY KEY, Z_NAME \(text), Z_SUPER \(integer), Z_MAX \(integer))")
        statements.append("CREATE TABLE Z_METADATA (Z_VERSION \(integer) PRIMARY KEY, Z_UUID \(dialect == .sqlite ? "VARCHAR(255)" : text), Z_PLIST \(bytes))")
        statements.append("CREATE TABLE Z_MODELCACHE (Z_CONTENT \(bytes))")
        return statements
    }

    /// The columns this mapping expects in each table, for checking a foreign store.
    package func expectedColumns() -> [String: Set<String>] {
        var expected: [String: Set<String>] = [:]
        for entity in entities {
            let mapping = mapping(for: entity)!
            expected[mapping.tableName, default: ["Z_PK", "Z_ENT", "Z_OPT"]].formUnion(mapping.columnsBySlot.values)
        }
        for join in allJoinTables { expected[join.name] = [join.sourceColumn, join.destinationColumn] }
        return expected
    }
}
