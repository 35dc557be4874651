import Foundation
import OpenCoreDataCore

/// The type of a store kept by a PostgreSQL server, in Core Data's layout: add one with a
/// `postgres://user:password@host:port/database` URL (options `schema`, `pool`, `tls`; see the
/// README). Several coordinators, on several servers, can share one database.
///
/// Using the constant registers the store type, so `addPersistentStore(ofType:…)` and
/// `NSPersistentStoreDescription` know it.
public var NSPostgreSQLStoreType: String { PostgreSQLStoreRegistration.storeType }

extension NSPersistentStore.StoreType {
    /// A store kept by a PostgreSQL server (`NSPostgreSQLStoreType`).
    public static var postgreSQL: NSPersistentStore.StoreType { NSPersistentStore.StoreType(rawValue: NSPostgreSQLStoreType) }
}

/// Registers the PostgreSQL store type once, on first use of its name.
enum PostgreSQLStoreRegistration {
    static let storeType: String = {
        let type = "PostgreSQL"
        SQLServerConnector.register(SQLServerConnector(open: openConnection, describe: PostgreSQLLocation.redacted,
                                                       poolSize: { (try? PostgreSQLLocation(url: $0).poolSize) ?? 4 }), forStoreType: type)
        return type
    }()

    /// Opens a connection for a store at `url`, working in the URL's schema (created if absent).
    @Sendable static func openConnection(_ url: URL) throws -> any SQLServerConnection {
        let location = try PostgreSQLLocation(url: url)
        let connection = try PostgreSQLConnection.open(location)
        do {
            let schema = "\"" + location.schema.replacingOccurrences(of: "\"", with: "\"\"") + "\""
            if location.schema != "public" { try connection.query("CREATE SCHEMA IF NOT EXISTS \(schema)") }
            try connection.query("SET search_path TO \(schema)")
        } catch {
            connection.close()
            throw error
        }
        return connection
    }
}
