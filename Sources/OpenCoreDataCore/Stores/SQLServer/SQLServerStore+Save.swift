import Foundation

/// Saving: keys from the hierarchy's sequence, then one transaction that deletes, inserts,
/// updates (each only at the version it was read at) and writes join rows, all or nothing.
extension SQLServerStore {
    /// `count` new primary keys from the entity hierarchy's sequence.
    func nextKeys(for entity: NSEntityDescription, count: Int) throws -> [Int64] {
        guard count > 0 else { return [] }
        let sequence = Self.sequenceName(for: entity, schema)
        let rows = try withConnection { connection in
            try connection.run(connection.dialect.nextKeysQuery(sequence), [.integer(Int64(count))])
        }
        let keys = rows.compactMap { $0.first.flatMap(SQLServerValueCoding.integer) }
        guard keys.count == count else {
            throw CoreDataError.make(.coreData, "The \(type) store \(locationDescription) gave \(keys.count) primary keys for \(count) new objects.")
        }
        return keys
    }

    /// Writes a save in one transaction, all or nothing. Its change notice names `origin` (this
    /// store's `instanceID` by default: this coordinator's contexts merge the save already).
    func saveInOneTransaction(_ changes: SaveChanges, origin: String? = nil) throws -> PermanentIDs {
        var mapping: PermanentIDs = [:]
        // Sequences are not transactional: keys of a save that fails are not given out again.
        let ids = objectIDFactory
        for group in SQLiteStore.temporaryIDGroups(changes.inserted) {
            let keys = try nextKeys(for: group.entity, count: group.positions.count)
            for (position, key) in zip(group.positions, keys) {
                mapping.assign(primaryKey: key, of: group.entity, in: ids, to: changes.inserted[position].key)
            }
        }
        let primaryKey: (NSManagedObjectID) -> Int64? = { id in
            if let permanent = mapping[id.key] { return permanent.primaryKey }
            return id.isTemporaryID ? nil : id.primaryKey
        }
        let historyStrings = try history.map { history in try withConnection { try history.internStrings(changes.author, $0) } }
        try retryingUniqueViolations { try transaction { connection in
            try connection.run(connection.dialect.saveLockStatement, [.text(identifier ?? "")])
            for record in changes.deleted { try delete(record, connection) }
            let violations = try UniquenessChecking.violations(changes.inserted, entities: entities, value: { record, property in
                columnValue(record.values[property.slot], of: property, primaryKey)
            }, stored: { constraint, values in try storedObjectID(matching: constraint, values: values, connection) })
            if !violations.isEmpty { throw StoreConstraintConflicts(violations: violations) }
            for record in changes.inserted {
                let plan = writePlan(for: record.entity)
                guard let key = primaryKey(record.objectID) else { continue }
                try connection.run(plan.insertSQL, [.integer(key), .integer(plan.entityNumber), .integer(1)] + plan.values(of: record.values, primaryKey: primaryKey))
            }
            var conflicting: [NSManagedObjectID] = []
            for record in changes.updated {
                let plan = writePlan(for: record.entity)
                let written = try connection.run(plan.updateSQL, plan.values(of: record.values, primaryKey: primaryKey)
                                                 + [.integer(record.objectID.primaryKey), .integer(record.version)])
                if written.isEmpty { conflicting.append(record.objectID) }
            }
            for record in changes.checked {
                guard let table = schema.mapping(for: record.entity)?.tableName else { continue }
                let row = try connection.run("SELECT Z_OPT FROM \(table) WHERE Z_PK = $1 FOR UPDATE", [.integer(record.objectID.primaryKey)])
                if row.first?.first.flatMap(SQLServerValueCoding.integer) != record.version { conflicting.append(record.objectID) }
            }
            if !conflicting.isEmpty { throw StoreVersionConflicts(objectIDs: conflicting) }
            for records in [changes.inserted, changes.updated] {
                for record in records where !record.toMany.isEmpty { try writeToMany(record, connection, primaryKey) }
            }
            try derivedAttributes?.settle(connection)
            // Last: numbering the transaction locks the counter until the save commits.
            let transactionNumber = changes.isEmpty ? nil : try history.map { history in
                try history.recordSave(changes, strings: historyStrings ?? [], primaryKey: primaryKey, connection)
            }
            // Delivered to every listener when the transaction commits, never if it rolls back.
            if !changes.isEmpty, let identifier {
                func items(_ records: [SaveRecord]) -> [SQLServerChangeNotice.Item] {
                    records.compactMap { record in
                        guard let number = schema.mapping(for: record.entity)?.number, let key = primaryKey(record.objectID) else { return nil }
                        return (entity: number, key: key)
                    }
                }
                var notice = SQLServerChangeNotice(origin: origin ?? instanceID, inserted: items(changes.inserted), updated: items(changes.updated), deleted: items(changes.deleted))
                notice.transaction = transactionNumber
                try connection.run(connection.dialect.notifyStatement, [.text(SQLServerChangeNotice.channel(forStore: identifier)), .text(notice.payload)])
            }
        } }
        return mapping
    }

    /// A property's column value: an attribute's encoded value, a to-one's key.
    private func columnValue(_ value: Any?, of property: NSPropertyDescription, _ primaryKey: (NSManagedObjectID) -> Int64?) -> SQLServerValue {
        if let attribute = property as? NSAttributeDescription { return SQLServerValueCoding.encode(value, for: attribute) }
        return (value as? NSManagedObjectID).flatMap(primaryKey).map(SQLServerValue.integer) ?? .null
    }

    /// The stored object of a uniqueness constraint's entity (or a subentity) holding the values.
    private func storedObjectID(matching constraint: UniquenessChecking.Constraint, values: [SQLServerValue],
                                _ connection: any SQLServerConnection) throws -> NSManagedObjectID? {
        guard let mapping = schema.mapping(for: constraint.entity) else { return nil }
        let columns = constraint.properties.compactMap { mapping.columnsBySlot[$0.slot] }
        guard columns.count == constraint.properties.count else { return nil }
        let conditions = columns.enumerated().map { "\($1) IS NOT DISTINCT FROM $\($0 + 1)" }.joined(separator: " AND ")
        let sql = "SELECT Z_PK, Z_ENT FROM \(mapping.tableName) WHERE \(entityCondition(constraint.entity, subentities: true)) AND \(conditions) LIMIT 1"
        guard let row = try connection.run(sql, values).first, row.count == 2, let key = SQLServerValueCoding.integer(row[0]),
              let number = SQLServerValueCoding.integer(row[1]), let entity = schema.entity(number: Int(number)) else { return nil }
        return objectID(for: entity, primaryKey: key)
    }

    private func delete(_ record: SaveRecord, _ connection: any SQLServerConnection) throws {
        guard let mapping = schema.mapping(for: record.entity) else { return }
        try connection.run("DELETE FROM \(mapping.tableName) WHERE Z_PK = $1", [.integer(record.objectID.primaryKey)])
        for relationship in record.entity.frozenRelationships {
            guard let join = schema.joinTable(for: relationship) else { continue }
            try connection.run("DELETE FROM \(join.name) WHERE \(join.columns(from: relationship).mine) = $1", [.integer(record.objectID.primaryKey)])
        }
    }

    private func writeToMany(_ record: SaveRecord, _ connection: any SQLServerConnection, _ primaryKey: (NSManagedObjectID) -> Int64?) throws {
        guard let ownKey = primaryKey(record.objectID) else { return }
        let properties = record.entity.frozenProperties
        for (slot, members) in record.toMany.sorted(by: { $0.key < $1.key }) {
            guard let relationship = properties[slot] as? NSRelationshipDescription else { continue }
            if let join = schema.joinTable(for: relationship) {
                let (mine, theirs) = join.columns(from: relationship)
                try connection.run("DELETE FROM \(join.name) WHERE \(mine) = $1", [.integer(ownKey)])
                let orderColumn = join.owner === relationship ? join.orderColumn : nil
                let sql = "INSERT INTO \(join.name) (\(mine), \(theirs)\(orderColumn.map { ", \($0)" } ?? "")) VALUES ($1, $2\(orderColumn == nil ? "" : ", $3")) ON CONFLICT DO NOTHING"
                for (index, member) in members.enumerated() {
                    guard let memberKey = primaryKey(member) else { continue }
                    var values: [SQLServerValue] = [.integer(ownKey), .integer(memberKey)]
                    if orderColumn != nil { values.append(.integer(Int64(index + 1))) }
                    try connection.run(sql, values)
                }
            } else if let order = schema.orderColumn(for: relationship), let destination = relationship.destinationEntity,
                      let table = schema.mapping(for: destination)?.tableName {
                for (index, member) in members.enumerated() {
                    guard let memberKey = primaryKey(member) else { continue }
                    try connection.run("UPDATE \(table) SET \(order) = $1 WHERE Z_PK = $2", [.integer(Int64(index + 1)), .integer(memberKey)])
                }
            }
        }
    }
}

/// The statements and column order for writing one entity's rows to a server.
struct SQLServerWritePlan {
    let entityNumber: Int64
    /// `INSERT … (Z_PK, Z_ENT, Z_OPT, columns…) VALUES ($1, …)`.
    let insertSQL: String
    /// `UPDATE … SET Z_OPT = Z_OPT + 1, column = $n … WHERE Z_PK = $k AND Z_OPT = $k+1 RETURNING Z_PK`.
    let updateSQL: String
    private let slots: [Int]
    private let entitySlots: [Int]
    private let properties: [NSPropertyDescription]
    private let destinationNumbers: [ObjectIdentifier: Int64]

    init(entity: NSEntityDescription, schema: SQLiteSchema) {
        let mapping = schema.mapping(for: entity)!
        entityNumber = Int64(mapping.number)
        // Derived attributes are the store's to compute (its triggers): never written from objects.
        slots = mapping.columnsBySlot.keys.sorted().filter { !(entity.frozenProperties[$0] is NSDerivedAttributeDescription) }
        entitySlots = mapping.entityColumnsBySlot.keys.sorted()
        properties = slots.map { entity.frozenProperties[$0] }
        destinationNumbers = schema.destinationNumbers(ofEntityColumnsOf: entity)
        let written = slots.map { mapping.columnsBySlot[$0]! } + entitySlots.map { mapping.entityColumnsBySlot[$0]! }
        let columns = ["Z_PK", "Z_ENT", "Z_OPT"] + written
        insertSQL = "INSERT INTO \(mapping.tableName) (\(columns.joined(separator: ", "))) VALUES (\((1...columns.count).map { "$\($0)" }.joined(separator: ", ")))"
        let assignments = ["Z_OPT = Z_OPT + 1"] + written.enumerated().map { "\($1) = $\($0 + 1)" }
        updateSQL = "UPDATE \(mapping.tableName) SET \(assignments.joined(separator: ", ")) WHERE Z_PK = $\(written.count + 1) AND Z_OPT = $\(written.count + 2) RETURNING Z_PK"
    }

    /// A row's column values in the plan's order: its slots' values, then its destinations' entity numbers.
    func values(of row: SlotValues, primaryKey: (NSManagedObjectID) -> Int64?) -> [SQLServerValue] {
        var values: [SQLServerValue] = []
        values.reserveCapacity(slots.count + entitySlots.count)
        for (slot, property) in zip(slots, properties) {
            if let attribute = property as? NSAttributeDescription {
                values.append(SQLServerValueCoding.encode(row[slot], for: attribute))
            } else {
                values.append((row[slot] as? NSManagedObjectID).flatMap(primaryKey).map(SQLServerValue.integer) ?? .null)
            }
        }
        for slot in entitySlots {
            if let destination = row[slot] as? NSManagedObjectID, let number = destinationNumbers[ObjectIdentifier(destination.entity)] {
                values.append(.integer(number))
            } else {
                values.append(.null)
            }
        }
        return values
    }
}
