import Foundation

/// Where a PostgreSQL store is and how to reach it, read from its URL:
/// `postgres://user:password@host:port/database?schema=NAME&pool=N&tls=disable|prefer|require`.
///
/// The port defaults to 5432, the schema to `public`, the pool to 4 connections and TLS to
/// `disable`. User and password are percent-decoded. A URL that isn't one of these throws
/// `NSPersistentStoreOpenError` (134080), naming what is wrong and never the password.
package struct PostgreSQLLocation: Sendable, Equatable {
    /// Whether connections use TLS.
    package enum TLSMode: String, Sendable {
        /// Plain connections.
        case disable
        /// TLS when the server offers it.
        case prefer
        /// TLS or no connection.
        case require
    }

    package var host: String
    package var port: Int
    package var username: String
    package var password: String?
    package var database: String
    /// The schema the store's tables are in.
    package var schema: String
    /// How many connections the store keeps at most.
    package var poolSize: Int
    package var tls: TLSMode

    /// Reads a `postgres://` (or `postgresql://`) URL.
    package init(url: URL) throws {
        func refuse(_ problem: String) -> NSError {
            NSError(domain: NSCocoaErrorDomain, code: 134080, userInfo: [
                NSLocalizedDescriptionKey: "The PostgreSQL store URL \(Self.redacted(url)) \(problem).",
            ])
        }
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false),
              let scheme = components.scheme?.lowercased(), scheme == "postgres" || scheme == "postgresql" else {
            throw refuse("is not a postgres:// URL")
        }
        guard let host = components.host, !host.isEmpty else { throw refuse("names no host") }
        guard let username = components.user, !username.isEmpty else { throw refuse("names no user") }
        let database = String(components.path.drop { $0 == "/" })
        guard !database.isEmpty, !database.contains("/") else { throw refuse("names no database (postgres://user@host/database)") }
        self.host = host
        self.port = components.port ?? 5432
        guard (1...65535).contains(port) else { throw refuse("has port \(port), outside 1–65535") }
        self.username = username
        self.password = components.password
        self.database = database
        self.schema = "public"
        self.poolSize = 4
        self.tls = .disable
        for item in components.queryItems ?? [] {
            let value = item.value ?? ""
            switch item.name {
            case "schema":
                guard !value.isEmpty, value.utf8.count <= 63 else { throw refuse("has schema '\(value)': 1 to 63 bytes") }
                schema = value
            case "pool":
                guard let size = Int(value), (1...100).contains(size) else { throw refuse("has pool '\(value)': a number from 1 to 100") }
                poolSize = size
            case "tls", "sslmode":
                guard let mode = TLSMode(rawValue: value) else { throw refuse("has tls '\(value)': disable, prefer or require") }
                tls = mode
            default:
                throw refuse("has the unknown option '\(item.name)' (schema, pool, tls)")
            }
        }
    }

    /// The URL with its password replaced, for messages and logs.
    package static func redacted(_ url: URL) -> String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false), components.password != nil else { return url.absoluteString }
        components.password = "***"
        return components.string ?? "postgres://…"
    }

    /// `host:port/database`, for messages.
    package var summary: String { "\(username)@\(host):\(port)/\(database)" }
}
