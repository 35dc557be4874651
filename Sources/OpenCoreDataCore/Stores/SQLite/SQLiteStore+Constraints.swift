import Foundation
import GRDB

/// Uniqueness constraints, checked in the save's transaction (`UniquenessChecking`) with a query
/// of the constraint's columns.
extension SQLiteStore {
    /// The inserted records that violate a uniqueness constraint, grouped by constraint and values.
    func uniquenessViolations(_ inserted: [SaveRecord], _ db: Database,
                              _ primaryKey: (NSManagedObjectID) -> Int64?) throws -> [StoreConstraintConflicts.Violation] {
        try UniquenessChecking.violations(inserted, entities: entities, value: { record, property in
            SQLiteValueCoding.databaseValue(record.values[property.slot], for: property, primaryKeyOf: primaryKey)
        }, stored: { constraint, values in try storedObjectID(matching: constraint, values: values, db) })
    }

    /// The stored object of the constraint's entity (or a subentity) whose constrained columns hold the values.
    private func storedObjectID(matching constraint: UniquenessChecking.Constraint, values: [DatabaseValue], _ db: Database) throws -> NSManagedObjectID? {
        guard let mapping = schema.mapping(for: constraint.entity) else { return nil }
        let columns = constraint.properties.compactMap { mapping.columnsBySlot[$0.slot] }
        guard columns.count == constraint.properties.count else { return nil }
        let conditions = columns.map { "\($0) IS ?" }.joined(separator: " AND ")
        let sql = "SELECT Z_PK, Z_ENT FROM \(mapping.tableName) WHERE Z_ENT IN (\(mapping.numbersWithSubentities.map(String.init).joined(separator: ", "))) AND \(conditions) LIMIT 1"
        guard let row = try Row.fetchOne(db.cachedStatementKeepingWholeText(sql: sql, arguments: values)),
              let pk: Int64 = row["Z_PK"], let number: Int = row["Z_ENT"], let entity = schema.entity(number: number) else { return nil }
        return objectID(for: entity, primaryKey: pk)
    }
}
