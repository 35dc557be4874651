import Foundation
import PostgresNIO

/// PostgreSQL's failures as Core Data's errors: the domain is `NSCocoaErrorDomain`, the code Core
/// Data's for the operation, the message says what failed in words, `NSUnderlyingErrorKey` holds
/// postgres-nio's error and `PostgreSQLSQLState` the server's SQLSTATE when it sent one. No raw
/// postgres-nio error reaches the user.
package enum PostgreSQLErrors {
    /// The userInfo key of the server's five-character SQLSTATE.
    package static let sqlStateKey = "PostgreSQLSQLState"

    /// Connecting failed: `NSPersistentStoreOpenError` (134080).
    static func opening(_ error: any Error, _ location: PostgreSQLLocation) -> NSError {
        let state = sqlState(of: error)
        let reason: String
        switch state {
        case "28P01", "28000": reason = "the server refused user \(location.username)'s password"
        case "3D000": reason = "the server has no database \(location.database)"
        case .some(let state): reason = "the server refused the connection (SQLSTATE \(state): \(serverMessage(of: error) ?? "no message"))"
        case nil: reason = "the server can't be reached (\(describe(error)))"
        }
        return make(134080, "Can't open the PostgreSQL store \(location.summary): \(reason).", error, state)
    }

    /// A statement failed: 134060 (Core Data's general error) with the server's reason.
    static func query(_ error: any Error, sql: String, location: PostgreSQLLocation) -> NSError {
        let state = sqlState(of: error)
        let reason = serverMessage(of: error) ?? describe(error)
        return make(134060, "The PostgreSQL store \(location.summary) failed: \(reason)\(state.map { " (SQLSTATE \($0))" } ?? "").", error, state)
    }

    private static func make(_ code: Int, _ message: String, _ underlying: any Error, _ state: String?) -> NSError {
        var userInfo: [String: Any] = [NSLocalizedDescriptionKey: message, NSUnderlyingErrorKey: underlying as NSError]
        if let state { userInfo[sqlStateKey] = state }
        return NSError(domain: NSCocoaErrorDomain, code: code, userInfo: userInfo)
    }

    /// The server's SQLSTATE, when the error came from the server.
    package static func sqlState(of error: any Error) -> String? {
        (error as? PSQLError)?.serverInfo?[.sqlState]
    }

    private static func serverMessage(of error: any Error) -> String? {
        (error as? PSQLError)?.serverInfo?[.message]
    }

    /// A short description of a client-side failure (refused connection, timeout, TLS).
    private static func describe(_ error: any Error) -> String {
        guard let psql = error as? PSQLError else { return "\(error)" }
        if let underlying = psql.underlying { return "\(underlying)" }
        return psql.code.description
    }
}
