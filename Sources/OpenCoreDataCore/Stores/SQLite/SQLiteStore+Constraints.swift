import Foundation
import GRDB

/// Uniqueness constraints (`NSEntityDescription.uniquenessConstraints`), checked in the save's
/// transaction: an inserted object may not share a constraint's values with another inserted
/// object or with a stored row of the entity that declares the constraint (or its subentities).
extension SQLiteStore {
    /// One constraint as the store checks it: the declaring entity and the constrained properties.
    private struct Constraint {
        let entity: NSEntityDescription
        let properties: [NSPropertyDescription]
    }

    /// The inserted records that violate a uniqueness constraint, grouped by constraint and values.
    func uniquenessViolations(_ inserted: [SaveRecord], _ db: Database,
                              _ primaryKey: (NSManagedObjectID) -> Int64?) throws -> [StoreConstraintConflicts.Violation] {
        guard entities.contains(where: { !$0.uniquenessConstraints.isEmpty }) else { return [] }
        var groups: [[AnyHashable]: (Constraint, [SaveRecord])] = [:]
        var order: [[AnyHashable]] = []
        for record in inserted {
            for (index, constraint) in constraints(of: record.entity).enumerated() {
                let values = constraint.properties.map { SQLiteValueCoding.databaseValue(record.values[$0.slot], for: $0, primaryKeyOf: primaryKey) }
                let key = [AnyHashable(ObjectIdentifier(constraint.entity)), AnyHashable(index)] + values.map { AnyHashable($0) }
                if groups[key] == nil { order.append(key); groups[key] = (constraint, []) }
                groups[key]?.1.append(record)
            }
        }
        var violations: [StoreConstraintConflicts.Violation] = []
        for key in order {
            guard let (constraint, records) = groups[key] else { continue }
            let stored = try storedObjectID(matching: constraint, values: Array(key.dropFirst(2)), db)
            guard stored != nil || records.count > 1 else { continue }
            violations.append(.init(constraint: constraint.properties.map(\.name), objectIDs: records.map(\.objectID), storedObjectID: stored))
        }
        return violations
    }

    /// The constraints that apply to an entity's objects: its own and its superentities'.
    private func constraints(of entity: NSEntityDescription) -> [Constraint] {
        var result: [Constraint] = []
        var current: NSEntityDescription? = entity
        while let declaring = current {
            result += declaring.uniquenessConstraintProperties.map { Constraint(entity: declaring, properties: $0) }
            current = declaring.superentity
        }
        return result
    }

    /// The stored object of the constraint's entity (or a subentity) whose constrained columns hold the values.
    private func storedObjectID(matching constraint: Constraint, values: [AnyHashable], _ db: Database) throws -> NSManagedObjectID? {
        guard let mapping = schema.mapping(for: constraint.entity) else { return nil }
        let columns = constraint.properties.compactMap { mapping.columnsBySlot[$0.slot] }
        guard columns.count == constraint.properties.count else { return nil }
        let conditions = columns.map { "\($0) IS ?" }.joined(separator: " AND ")
        let sql = "SELECT Z_PK, Z_ENT FROM \(mapping.tableName) WHERE Z_ENT IN (\(mapping.numbersWithSubentities.map(String.init).joined(separator: ", "))) AND \(conditions) LIMIT 1"
        let arguments = values.compactMap { $0 as? DatabaseValue }
        guard let row = try Row.fetchOne(db.cachedStatementKeepingWholeText(sql: sql, arguments: arguments)),
              let pk: Int64 = row["Z_PK"], let number: Int = row["Z_ENT"], let entity = schema.entity(number: number) else { return nil }
        return objectID(for: entity, primaryKey: pk)
    }
}
