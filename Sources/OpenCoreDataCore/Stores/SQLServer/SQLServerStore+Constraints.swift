import Foundation

/// Uniqueness constraints on a server: checked in each save's transaction (`UniquenessChecking`,
/// as in SQLite), and held by a unique index per constraint, so that two servers inserting the
/// same values at the same moment can't both succeed.
extension SQLServerStore {
    /// The SQLSTATE of a unique index violation.
    static let uniqueViolation = "23505"

    /// Creates the unique index of every uniqueness constraint the database lacks: on the
    /// constrained columns of the declaring entity's rows and its subentities' (a partial index,
    /// since the table also holds other entities). An index that can't be made because stored
    /// rows already share values is left out, and the save-time check still applies.
    func createUniqueIndexes(_ connection: any SQLServerConnection) throws {
        for entity in entities {
            guard let mapping = schema.mapping(for: entity) else { continue }
            for (index, properties) in entity.uniquenessConstraintProperties.enumerated() {
                let columns = properties.compactMap { mapping.columnsBySlot[$0.slot] }
                guard !columns.isEmpty, columns.count == properties.count else { continue }
                let name = "Z_\(mapping.number)_UNIQUE_\(index)"
                let sql = "CREATE UNIQUE INDEX IF NOT EXISTS \(name) ON \(mapping.tableName) (\(columns.joined(separator: ", "))) WHERE \(entityCondition(entity, subentities: true))"
                try connection.run("SAVEPOINT unique_index", [])
                do {
                    try connection.run(sql, [])
                    try connection.run("RELEASE SAVEPOINT unique_index", [])
                } catch where connection.serverCode(of: error) == Self.uniqueViolation {
                    try connection.run("ROLLBACK TO SAVEPOINT unique_index", [])
                    CoreDataLog.logger.warning("The store \(locationDescription) has rows of \(entity.name ?? "?") sharing values of a uniqueness constraint (\(properties.map(\.name).joined(separator: ", "))): no unique index was made for it.")
                }
            }
        }
    }

    /// Runs a save's transaction, again when a unique index refused it: another server committed
    /// the same values after this save's check, and the check, run again, now sees them (a
    /// constraint conflict for the merge policy). A violation the check can't see (an update to
    /// values another object holds) is a constraint error (133021).
    func retryingUniqueViolations(_ body: () throws -> Void) throws {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try body()
            } catch where (try? withConnection { $0.serverCode(of: error) }) == Self.uniqueViolation {
                if attempt < 3 { continue }
                throw CoreDataError.make(.constraintConflict,
                    "The save would give two objects the same values of a uniqueness constraint in the store \(locationDescription).",
                    userInfo: [NSUnderlyingErrorKey: error])
            }
        }
    }
}
