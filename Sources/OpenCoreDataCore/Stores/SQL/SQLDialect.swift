import Foundation

/// The SQL engine a schema is written for: Core Data's layout is the same in each, only the
/// column types differ.
package enum SQLDialect: Sendable {
    /// SQLite, with Core Data's declared types (`INTEGER`, `VARCHAR`, `BLOB`, …), as Apple writes them.
    case sqlite
    /// PostgreSQL: `bigint`, `double precision`, `numeric`, `text`, `bytea`. Dates are seconds
    /// since 2001 in `double precision`, as Core Data stores them; identifiers are unquoted, so
    /// PostgreSQL keeps them in lower case (`zteam.zname`).
    case postgreSQL

    /// The type of an attribute's column.
    func columnType(for attribute: NSAttributeDescription) -> String {
        switch (self, attribute.attributeType) {
        case (.sqlite, .integer16AttributeType), (.sqlite, .integer32AttributeType), (.sqlite, .integer64AttributeType), (.sqlite, .booleanAttributeType): "INTEGER"
        case (.sqlite, .doubleAttributeType), (.sqlite, .floatAttributeType): "FLOAT"
        case (.sqlite, .decimalAttributeType): "DECIMAL"
        case (.sqlite, .dateAttributeType): "TIMESTAMP"
        case (.sqlite, .stringAttributeType), (.sqlite, .URIAttributeType): "VARCHAR"
        case (.sqlite, _): "BLOB"
        case (.postgreSQL, .integer16AttributeType): "smallint"
        case (.postgreSQL, .integer32AttributeType): "integer"
        case (.postgreSQL, .integer64AttributeType): "bigint"
        case (.postgreSQL, .booleanAttributeType): "boolean"
        case (.postgreSQL, .doubleAttributeType), (.postgreSQL, .dateAttributeType): "double precision"
        case (.postgreSQL, .floatAttributeType): "real"
        case (.postgreSQL, .decimalAttributeType): "numeric"
        case (.postgreSQL, .stringAttributeType), (.postgreSQL, .URIAttributeType): "text"
        case (.postgreSQL, .UUIDAttributeType): "uuid"
        case (.postgreSQL, _): "bytea"
        }
    }

    /// The type of a key, entity number or order column.
    var integerType: String { self == .sqlite ? "INTEGER" : "bigint" }
    /// The type of `Z_PK`.
    var primaryKeyType: String { self == .sqlite ? "INTEGER PRIMARY KEY" : "bigint PRIMARY KEY" }
    /// The type of short text (`Z_NAME`, `Z_UUID`).
    var textType: String { self == .sqlite ? "VARCHAR" : "text" }
    /// The type of bytes (`Z_PLIST`, `Z_CONTENT`).
    var bytesType: String { self == .sqlite ? "BLOB" : "bytea" }

    // MARK: Statements of a server store (PostgreSQL only)

    /// Serializes the opening of a store: whoever holds it creates or checks the tables alone,
    /// until its transaction ends.
    var setupLockStatement: String { "SELECT 1 FROM pg_advisory_xact_lock(5467432011)" }

    /// Every table of the current schema with each of its columns: rows of (table, column).
    var tableColumnsQuery: String {
        "SELECT table_name::text, column_name::text FROM information_schema.columns WHERE table_schema = current_schema()"
    }

    /// Creates the sequence that numbers an entity hierarchy's rows.
    func createSequenceStatement(_ name: String) -> String { "CREATE SEQUENCE IF NOT EXISTS \(name)" }

    /// `$1` new keys from a sequence, one row each.
    func nextKeysQuery(_ sequence: String) -> String { "SELECT nextval('\(sequence.lowercased())') FROM generate_series(1, $1)" }

    /// Sends `$2` on channel `$1` when the transaction commits.
    var notifyStatement: String { "SELECT 1 FROM pg_notify($1, $2)" }

    /// Taken by every save transaction of the store `$1` (shared: saves don't wait on each other),
    /// so that `holdWritesStatement` keeps them all out.
    var saveLockStatement: String { "SELECT 1 FROM pg_advisory_xact_lock_shared(hashtext('ocd-writes-' || $1))" }
    /// Holds every save of the store `$1`, in any process, until `releaseWritesStatement`.
    var holdWritesStatement: String { "SELECT 1 FROM pg_advisory_lock(hashtext('ocd-writes-' || $1))" }
    /// Ends `holdWritesStatement`.
    var releaseWritesStatement: String { "SELECT 1 FROM pg_advisory_unlock(hashtext('ocd-writes-' || $1))" }
}
