import Foundation

/// Runs an inferred mapping model on a store in place, with SQL statements only, in one
/// transaction (a SQLite file's immediate transaction, or a server's): if any step fails the store
/// is left exactly as it was. The statements are written in the database's dialect and run
/// through an `InPlaceMigrationDatabase`.
///
/// Every table the destination model needs is built beside the old ones (`OCDMIG_<name>`) and
/// filled by `INSERT … SELECT` from them; then the old tables are dropped, the new ones renamed,
/// their indexes created, and `Z_PRIMARYKEY` and the metadata rewritten.
///
/// - Rows keep their primary keys, so foreign keys stay valid. An entity keeps its entity number;
///   a new entity gets a number above every number the store has used.
/// - A renamed attribute or relationship is read from its old column; a new one takes its default
///   value; a changed type is converted by `CAST`.
/// - A relationship's pairs are read from wherever the source stored them (a foreign key on
///   either side, or a join table) and written wherever the destination stores them, so changes
///   between to-one, to-many and many-to-many keep the links.
/// - Afterwards, a non-optional attribute left without a value fails the migration
///   (`NSMigrationError` with a 1570 error underneath), as does a new uniqueness constraint that
///   the rows violate (`NSMigrationConstraintViolationError`).
///
/// A migration that would put rows of two source tables into one table (merging two inheritance
/// hierarchies) can't keep primary keys unique; `init` returns nil and the caller migrates object
/// by object instead.
struct InPlaceMigration {
    private let source: SQLiteSchema
    private let destination: SQLiteSchema
    private let mappingsByDestination: [ObjectIdentifier: (mapping: NSEntityMapping, source: NSEntityDescription)]
    private let storedMaximums: [Int: Int64]
    private static let prefix = "OCDMIG_"

    /// Plans the migration; nil when it can't run in place.
    init?(sourceEntities: [NSEntityDescription], destinationEntities: [NSEntityDescription], mapping: NSMappingModel,
          storedNumbers: [String: Int], storedMaximums: [Int: Int64]) {
        source = SQLiteSchema(entities: sourceEntities, storedNumbers: storedNumbers)
        let sourceByName = Dictionary(sourceEntities.compactMap { e in e.name.map { ($0, e) } }, uniquingKeysWith: { first, _ in first })
        var pairs: [ObjectIdentifier: (NSEntityMapping, NSEntityDescription)] = [:]
        var numbers: [String: Int] = [:]
        let destinationNames = Set(destinationEntities.compactMap(\.name))
        for entity in destinationEntities {
            guard let name = entity.name else { continue }
            guard let entityMapping = (mapping.entityMappings ?? []).first(where: { $0.destinationEntityName == name }) else { return nil }
            guard let sourceName = entityMapping.sourceEntityName, entityMapping.mappingType != .addEntityMappingType else { continue }
            guard let sourceEntity = sourceByName[sourceName], let number = source.mapping(for: sourceEntity)?.number else { return nil }
            pairs[ObjectIdentifier(entity)] = (entityMapping, sourceEntity)
            numbers[name] = number
        }
        // Numbers of entities that are going away stay reserved, so a new entity never reuses one
        // (the persistent history names entities by number).
        for (name, number) in storedNumbers where !destinationNames.contains(name) && !numbers.values.contains(number) {
            numbers[name] = number
        }
        // An empty table would make the schema number entities as a new store does; a placeholder
        // keeps it in "existing store" mode (new entities numbered above the stored ones).
        destination = SQLiteSchema(entities: destinationEntities, storedNumbers: numbers.isEmpty ? ["": 0] : numbers)
        var feeders: [String: Set<String>] = [:]
        for entity in destinationEntities {
            guard let pair = pairs[ObjectIdentifier(entity)], let table = destination.mapping(for: entity)?.tableName,
                  let from = source.mapping(for: pair.1)?.tableName else { continue }
            feeders[table, default: []].insert(from)
        }
        guard feeders.values.allSatisfy({ $0.count <= 1 }) else { return nil }
        mappingsByDestination = pairs.mapValues { (mapping: $0.0, source: $0.1) }
        self.storedMaximums = storedMaximums
    }

    /// Runs the migration inside the caller's transaction, reporting a unit of `progress` per table.
    func run(_ db: any InPlaceMigrationDatabase, metadata: [String: Any], destinationModel: NSManagedObjectModel, progress: Progress) throws {
        let statements = destination.createStatements(dialect: db.dialect)
        let bookkeeping = ["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"]
        let tables = statements.filter { statement in
            statement.hasPrefix("CREATE TABLE ") && !bookkeeping.contains { statement.hasPrefix("CREATE TABLE \($0) ") }
        }
        progress.totalUnitCount = Int64(destination.entities.count + destination.allJoinTables.count + 2)
        try db.willRebuildTables()
        for statement in tables {
            try db.execute(statement.replacingOccurrences(of: "CREATE TABLE ", with: "CREATE TABLE \(Self.prefix)"), [])
        }
        for entity in destination.entities.sorted(by: { destination.mapping(for: $0)!.number < destination.mapping(for: $1)!.number }) {
            try copyRows(of: entity, db)
            progress.completedUnitCount += 1
        }
        for join in destination.allJoinTables {
            try copyPairs(into: join, db)
            progress.completedUnitCount += 1
        }
        try validate(db)
        var oldTables = Set(source.entities.compactMap { source.mapping(for: $0)?.tableName })
        oldTables.formUnion(source.allJoinTables.map(\.name))
        for table in oldTables.sorted() { try db.execute("DROP TABLE IF EXISTS \(table)", []) }
        for statement in tables {
            let name = statement.dropFirst("CREATE TABLE ".count).prefix { $0 != " " }
            try db.execute("ALTER TABLE \(Self.prefix)\(name) RENAME TO \(name)", [])
        }
        for statement in statements where statement.hasPrefix("CREATE INDEX") { try db.execute(statement, []) }
        for statement in destination.entityColumnFillStatements() { try db.execute(statement, []) }
        let maximums = try rewritePrimaryKeys(db)
        try db.didRebuildTables(destination, maximumKeys: maximums)
        var updated = metadata
        updated.merge(StoreModelMatching.modelKeys(for: destination.entities, versionIdentifiers: destinationModel.versionIdentifiers)) { _, new in new }
        try db.writeMetadata(updated, model: destinationModel)
        progress.completedUnitCount += 2
    }

    // MARK: Rows

    private func copyRows(of entity: NSEntityDescription, _ db: any InPlaceMigrationDatabase) throws {
        guard let pair = mappingsByDestination[ObjectIdentifier(entity)],
              let to = destination.mapping(for: entity), let from = source.mapping(for: pair.source) else { return }
        var columns = ["Z_PK", "Z_ENT", "Z_OPT"]
        var values = ["t.Z_PK", "\(to.number)", "t.Z_OPT"]
        var arguments: [MigrationArgument] = []
        for property in entity.frozenProperties where !property.isTransient {
            guard let column = to.columnsBySlot[property.slot] else { continue }
            let sourceName = pair.mapping.propertyMapping(named: property.name)?.copiedSourcePropertyName
            if let attribute = property as? NSAttributeDescription {
                var value = "NULL"
                if let sourceName, let sourceAttribute = pair.source.attributesByName[sourceName], let sourceColumn = from.columnsBySlot[sourceAttribute.slot] {
                    value = Self.converted("t.\(sourceColumn)", from: sourceAttribute, to: attribute, db.dialect)
                }
                if let defaultValue = attribute.defaultValue {
                    value = value == "NULL" ? "?" : "COALESCE(\(value), ?)"
                    arguments.append(.value(defaultValue, attribute))
                }
                columns.append(column)
                values.append(value)
            } else if let relationship = property as? NSRelationshipDescription {
                columns.append(column)
                values.append(toOneValue(relationship, sourceName: sourceName, sourceEntity: pair.source, from: from) ?? "NULL")
                if let inverse = relationship.inverseRelationship, let order = destination.orderColumn(for: inverse) {
                    columns.append(order)
                    values.append(orderValue(sourceName: sourceName, sourceEntity: pair.source) ?? "t.Z_PK")
                }
            }
        }
        try db.execute("INSERT INTO \(Self.prefix)\(to.tableName) (\(columns.joined(separator: ", "))) SELECT \(values.joined(separator: ", ")) FROM \(from.tableName) t WHERE t.Z_ENT = \(from.number)",
                       arguments)
    }

    /// SQL converting a stored value between attribute types lightweight migration converts.
    private static func converted(_ value: String, from: NSAttributeDescription, to: NSAttributeDescription, _ dialect: SQLDialect) -> String {
        if from.attributeType == to.attributeType { return value }
        switch (dialect, to.attributeType) {
        case (.sqlite, .integer16AttributeType), (.sqlite, .integer32AttributeType), (.sqlite, .integer64AttributeType), (.sqlite, .booleanAttributeType):
            return "CAST(\(value) AS INTEGER)"
        case (.sqlite, .doubleAttributeType), (.sqlite, .floatAttributeType): return "CAST(\(value) AS REAL)"
        case (.sqlite, _): return "CAST(\(value) AS TEXT)"
        case (.postgreSQL, .booleanAttributeType) where from.attributeType != .stringAttributeType:
            return "(\(value) <> 0)"
        case (.postgreSQL, _): return "CAST(\(value) AS \(dialect.columnType(for: to)))"
        }
    }

    /// The value of a destination to-one relationship: the source's own foreign key when it was
    /// to-one too, or else the first pair its source relationship (or its inverse's) held.
    private func toOneValue(_ relationship: NSRelationshipDescription, sourceName: String?, sourceEntity: NSEntityDescription, from: SQLiteSchema.EntityMapping) -> String? {
        if let sourceName, let sourceRelationship = sourceEntity.relationshipsByName[sourceName] {
            if !sourceRelationship.isToMany, let column = from.columnsBySlot[sourceRelationship.slot] { return "t.\(column)" }
            guard let pairs = pairs(of: sourceRelationship) else { return nil }
            return "(SELECT p.d FROM (\(pairs)) p WHERE p.s = t.Z_PK ORDER BY p.o LIMIT 1)"
        }
        guard let inverse = relationship.inverseRelationship, let owner = inverse.entity,
              let sourceInverse = sourceRelationship(for: inverse, in: owner), let pairs = pairs(of: sourceInverse) else { return nil }
        return "(SELECT p.s FROM (\(pairs)) p WHERE p.d = t.Z_PK ORDER BY p.o LIMIT 1)"
    }

    /// The order of a row in an ordered to-many relationship whose inverse is this row's to-one.
    private func orderValue(sourceName: String?, sourceEntity: NSEntityDescription) -> String? {
        guard let sourceName, let sourceRelationship = sourceEntity.relationshipsByName[sourceName],
              let sourceInverse = sourceRelationship.inverseRelationship, let column = source.orderColumn(for: sourceInverse) else { return nil }
        return "t.\(column)"
    }

    /// The source relationship a destination relationship of an entity copies, if any.
    private func sourceRelationship(for relationship: NSRelationshipDescription, in entity: NSEntityDescription) -> NSRelationshipDescription? {
        guard let pair = mappingsByDestination[ObjectIdentifier(entity)],
              let name = pair.mapping.propertyMapping(named: relationship.name)?.copiedSourcePropertyName else { return nil }
        return pair.source.relationshipsByName[name]
    }

    /// A query of the (s, d, o) pairs a source relationship holds: the `Z_PK` of the object that has
    /// the relationship, the `Z_PK` of the object it points to, and an order.
    private func pairs(of relationship: NSRelationshipDescription) -> String? {
        guard let owner = relationship.entity, let ownerMapping = source.mapping(for: owner),
              let target = relationship.destinationEntity, let targetMapping = source.mapping(for: target) else { return nil }
        if !relationship.isToMany, let column = ownerMapping.columnsBySlot[relationship.slot] {
            return "SELECT Z_PK AS s, \(column) AS d, Z_PK AS o FROM \(ownerMapping.tableName) WHERE Z_ENT IN (\(Self.list(ownerMapping))) AND \(column) IS NOT NULL"
        }
        if let inverse = relationship.inverseRelationship, !inverse.isToMany, let column = targetMapping.columnsBySlot[inverse.slot] {
            let order = source.orderColumn(for: relationship) ?? "Z_PK"
            return "SELECT \(column) AS s, Z_PK AS d, \(order) AS o FROM \(targetMapping.tableName) WHERE Z_ENT IN (\(Self.list(targetMapping))) AND \(column) IS NOT NULL"
        }
        guard let join = source.joinTable(for: relationship) else { return nil }
        let (s, d) = join.columns(from: relationship)
        return "SELECT \(s) AS s, \(d) AS d, \(join.orderColumn ?? d) AS o FROM \(join.name)"
    }

    private static func list(_ mapping: SQLiteSchema.EntityMapping) -> String {
        mapping.numbersWithSubentities.map(String.init).joined(separator: ", ")
    }

    private func copyPairs(into join: SQLiteSchema.JoinTable, _ db: any InPlaceMigrationDatabase) throws {
        let owner = join.owner
        var found: (pairs: String, ownerSide: Bool)?
        if let ownerEntity = owner.entity, let sourceOwner = sourceRelationship(for: owner, in: ownerEntity), let pairs = pairs(of: sourceOwner) {
            found = (pairs, true)
        } else if let inverse = owner.inverseRelationship, let inverseEntity = inverse.entity,
                  let sourceInverse = sourceRelationship(for: inverse, in: inverseEntity), let pairs = pairs(of: sourceInverse) {
            found = (pairs, false)
        }
        guard let found else { return }
        var columns = [join.sourceColumn, join.destinationColumn]
        var selected = found.ownerSide ? ["p.s", "p.d"] : ["p.d", "p.s"]
        if let order = join.orderColumn {
            columns.append(order)
            selected.append("p.o")
        }
        let sql = "INSERT INTO \(Self.prefix)\(join.name) (\(columns.joined(separator: ", "))) SELECT \(selected.joined(separator: ", ")) FROM (\(found.pairs)) p"
        try db.execute(db.dialect == .sqlite ? sql.replacingOccurrences(of: "INSERT INTO", with: "INSERT OR IGNORE INTO") : sql + " ON CONFLICT DO NOTHING", [])
    }

    // MARK: Checks and bookkeeping

    private func validate(_ db: any InPlaceMigrationDatabase) throws {
        for entity in destination.entities where !entity.isAbstract {
            guard let mapping = destination.mapping(for: entity) else { continue }
            for attribute in entity.attributesByName.values.sorted(by: { $0.name < $1.name }) where !attribute.isOptional && !attribute.isTransient {
                guard let column = mapping.columnsBySlot[attribute.slot] else { continue }
                let missing = try db.firstInteger("SELECT COUNT(*) FROM \(Self.prefix)\(mapping.tableName) WHERE Z_ENT = \(mapping.number) AND \(column) IS NULL") ?? 0
                guard missing > 0 else { continue }
                let underlying = CoreDataError.make(.missingMandatoryProperty, "\(entity.name ?? "?").\(attribute.name) is a required value.",
                                                    userInfo: [NSValidationKeyErrorKey: attribute.name])
                throw CoreDataError.make(.migration,
                    "The migration can't make \(entity.name ?? "?").\(attribute.name) required: \(missing) stored object(s) have no value and the attribute has no default value.",
                    userInfo: [NSUnderlyingErrorKey: underlying])
            }
            for properties in entity.uniquenessConstraintProperties {
                let columns = properties.compactMap { mapping.columnsBySlot[$0.slot] }
                guard !columns.isEmpty, columns.count == properties.count else { continue }
                let list = columns.joined(separator: ", ")
                let duplicated = try db.firstInteger("SELECT COUNT(*) FROM \(Self.prefix)\(mapping.tableName) WHERE Z_ENT IN (\(Self.list(mapping))) GROUP BY \(list) HAVING COUNT(*) > 1 LIMIT 1")
                if duplicated != nil {
                    throw CoreDataError.make(.migrationConstraintViolation,
                        "The migration can't add the uniqueness constraint on \(entity.name ?? "?") (\(properties.map(\.name).joined(separator: ", "))): stored objects share the same values.")
                }
            }
        }
    }

    /// Rewrites the entities' rows of `Z_PRIMARYKEY` (history's, from 16000 on, stay); returns
    /// the highest key of each table.
    private func rewritePrimaryKeys(_ db: any InPlaceMigrationDatabase) throws -> [String: Int64] {
        try db.execute("DELETE FROM Z_PRIMARYKEY WHERE Z_ENT < 16000", [])
        var maximumByTable: [String: Int64] = [:]
        for entity in destination.entities {
            guard let mapping = destination.mapping(for: entity) else { continue }
            var maximum = try db.firstInteger("SELECT MAX(Z_PK) FROM \(mapping.tableName)") ?? 0
            if let pair = mappingsByDestination[ObjectIdentifier(entity)], let number = source.mapping(for: pair.source.rootEntity)?.number {
                maximum = max(maximum, storedMaximums[number] ?? 0)
            }
            maximumByTable[mapping.tableName] = max(maximumByTable[mapping.tableName] ?? 0, maximum)
        }
        for entity in destination.entities {
            guard let mapping = destination.mapping(for: entity) else { continue }
            let superNumber = entity.superentity.flatMap { destination.mapping(for: $0)?.number } ?? 0
            try db.execute("INSERT INTO Z_PRIMARYKEY (Z_ENT, Z_NAME, Z_SUPER, Z_MAX) VALUES (?, ?, ?, ?)",
                           [.integer(Int64(mapping.number)), .text(entity.name ?? ""), .integer(Int64(superNumber)), .integer(maximumByTable[mapping.tableName] ?? 0)])
        }
        return maximumByTable
    }
}

/// Where an in-place migration runs, inside the caller's transaction: a SQLite file through GRDB
/// (`SQLiteStore+Migration`), or a server store's connection (`SQLServerStore+Migration`).
protocol InPlaceMigrationDatabase {
    /// The SQL the statements are written in.
    var dialect: SQLDialect { get }
    /// Runs one statement; its `?` placeholders take `arguments` in order.
    func execute(_ sql: String, _ arguments: [MigrationArgument]) throws
    /// The first column of a query's first row (nil: no row, or NULL).
    func firstInteger(_ sql: String) throws -> Int64?
    /// Called before the old tables are rebuilt.
    func willRebuildTables() throws
    /// Called once the destination's tables, rows and `Z_PRIMARYKEY` are in place, with the highest
    /// key of each table.
    func didRebuildTables(_ destination: SQLiteSchema, maximumKeys: [String: Int64]) throws
    /// Writes the migrated store's metadata.
    func writeMetadata(_ metadata: [String: Any], model: NSManagedObjectModel) throws
}

/// A value bound to a migration statement.
enum MigrationArgument {
    case integer(Int64)
    case text(String)
    /// An attribute's value, stored as the database stores that attribute.
    case value(Any, NSAttributeDescription)
}
