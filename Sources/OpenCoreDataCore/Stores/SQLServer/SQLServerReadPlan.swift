import Foundation

/// How the rows of one table (an entity hierarchy) are read: the columns selected, and for each
/// entity of the table which column fills which property slot.
struct SQLServerReadPlan {
    /// One stored property's column: its position in the selected row.
    struct Column {
        let slot: Int
        let position: Int
        let property: NSPropertyDescription
        /// For a to-one whose destination has subentities: the position of the destination's
        /// entity number (`Z<n>_<NAME>`).
        let entityPosition: Int?
    }

    let table: String
    /// `Z_PK, Z_ENT, Z_OPT, …` in the order rows are decoded.
    let selectList: String
    /// The columns of each entity stored in the table, by entity.
    let columnsByEntity: [ObjectIdentifier: [Column]]

    /// A plan for every table of the entities' layout, by table name.
    static func plans(for entities: [NSEntityDescription], schema: SQLiteSchema) -> [String: SQLServerReadPlan] {
        var byTable: [String: [NSEntityDescription]] = [:]
        for entity in entities { if let mapping = schema.mapping(for: entity) { byTable[mapping.tableName, default: []].append(entity) } }
        var plans: [String: SQLServerReadPlan] = [:]
        for (table, members) in byTable {
            var names = ["Z_PK", "Z_ENT", "Z_OPT"]
            func position(of column: String) -> Int {
                if let index = names.firstIndex(of: column) { return index }
                names.append(column)
                return names.count - 1
            }
            var columnsByEntity: [ObjectIdentifier: [Column]] = [:]
            for entity in members {
                guard let mapping = schema.mapping(for: entity) else { continue }
                columnsByEntity[ObjectIdentifier(entity)] = mapping.columnsBySlot.keys.sorted().map { slot in
                    Column(slot: slot, position: position(of: mapping.columnsBySlot[slot]!), property: entity.frozenProperties[slot],
                           entityPosition: mapping.entityColumnsBySlot[slot].map(position))
                }
            }
            plans[table] = SQLServerReadPlan(table: table, selectList: names.joined(separator: ", "), columnsByEntity: columnsByEntity)
        }
        return plans
    }

    /// A selected row as an object ID and its stored row; nil for a row of an entity the store
    /// doesn't hold.
    func decode(_ row: [SQLServerValue], schema: SQLiteSchema, ids: ObjectIDFactory) -> (NSManagedObjectID, StoredRow)? {
        guard row.count >= 3, let key = SQLServerValueCoding.integer(row[0]), let number = SQLServerValueCoding.integer(row[1]),
              let entity = schema.entity(number: Int(number)), let columns = columnsByEntity[ObjectIdentifier(entity)] else { return nil }
        var values = SlotValues(layout: entity.slotLayout)
        for column in columns where column.position < row.count {
            let value = row[column.position]
            if let attribute = column.property as? NSAttributeDescription {
                if let decoded = SQLServerValueCoding.decode(value, for: attribute) { values[column.slot] = decoded }
            } else if let relationship = column.property as? NSRelationshipDescription, let destinationKey = SQLServerValueCoding.integer(value),
                      var destination = relationship.destinationEntity {
                if let entityPosition = column.entityPosition, let destinationNumber = SQLServerValueCoding.integer(row[entityPosition]),
                   let subentity = schema.entity(number: Int(destinationNumber)) {
                    destination = subentity
                }
                values[column.slot] = ids.objectID(for: destination, primaryKey: destinationKey)
            }
        }
        return (ids.objectID(for: entity, primaryKey: key), StoredRow(values: values, version: SQLServerValueCoding.integer(row[2]) ?? 1))
    }
}
