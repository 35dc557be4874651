import Foundation

/// One value sent to or read from a database server: the types Core Data's columns hold.
package enum SQLServerValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case boolean(Bool)
    case decimal(Decimal)
    case text(String)
    case bytes(Data)
    case uuid(UUID)
}

/// A connection to a database server that a server store (`SQLServerStore`) runs its statements
/// on, synchronously, from the calling context's queue. A driver module (OpenCoreDataPostgreSQL)
/// implements it over its wire protocol; the store writes the SQL in the connection's dialect.
package protocol SQLServerConnection: AnyObject, Sendable {
    /// The SQL the server speaks.
    var dialect: SQLDialect { get }
    /// Runs one statement with `$1`, `$2`, … bound to `values` and returns its rows. Throws Core
    /// Data's errors (`NSCocoaErrorDomain`), never the driver's.
    @discardableResult
    func run(_ sql: String, _ values: [SQLServerValue]) throws -> [[SQLServerValue]]
    /// The server's SQLSTATE (or equivalent) of an error this connection threw, if it had one.
    func serverCode(of error: any Error) -> String?
    /// Listens on a notification channel: `onNotification` gets each payload and `onClose` is
    /// called once when the connection ends (closed, or dropped by the server or the network).
    /// Both may be called on any thread (the driver's own), never on the caller's.
    func listen(channel: String, onNotification: @escaping @Sendable (String) -> Void, onClose: @escaping @Sendable () -> Void) throws
    /// Closes the connection; using it afterwards throws.
    func close()
    /// Whether the connection has ended (closed, or dropped by the server or the network).
    var isClosed: Bool { get }
}

/// Opens connections for a store type whose stores live on a server: registered by the driver
/// module, used by the coordinator to add a store of that type.
package struct SQLServerConnector: Sendable {
    /// Opens a connection to the store at a URL.
    package let open: @Sendable (URL) throws -> any SQLServerConnection
    /// The URL with any password hidden, for messages.
    package let describe: @Sendable (URL) -> String
    /// How many connections a store at the URL reads through at most (its `pool` option).
    package let poolSize: @Sendable (URL) -> Int

    package init(open: @escaping @Sendable (URL) throws -> any SQLServerConnection, describe: @escaping @Sendable (URL) -> String,
                 poolSize: @escaping @Sendable (URL) -> Int = { _ in 1 }) {
        self.open = open
        self.describe = describe
        self.poolSize = poolSize
    }

    private static let registered = LockedValue<[String: SQLServerConnector]>([:])

    /// Makes stores of `storeType` server stores that connect with `connector`.
    package static func register(_ connector: SQLServerConnector, forStoreType storeType: String) {
        registered.withLock { $0[storeType] = connector }
    }

    /// The connector registered for a store type.
    static func connector(forStoreType storeType: String) -> SQLServerConnector? {
        registered.withLock { $0[storeType] }
    }
}
