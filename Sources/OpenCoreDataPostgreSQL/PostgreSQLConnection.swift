import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO
import Synchronization

/// One connection to a PostgreSQL server, used synchronously: Core Data's API runs on the
/// calling context's queue, so each call waits for postgres-nio's future there.
///
/// The work itself runs on the shared NIO event loops (`MultiThreadedEventLoopGroup.singleton`):
/// no thread per connection or request. Waiting on an event-loop thread would deadlock it, so a
/// call made on one is refused with an error instead. Errors come back as Core Data's
/// (`PostgreSQLErrors`).
/// Unchecked Sendable: postgres-nio's connection is thread-safe; the closed flag is atomic.
package final class PostgreSQLConnection: @unchecked Sendable {
    private let connection: PostgresConnection
    private let logger: Logger
    private let closed = Atomic<Bool>(false)
    /// The location it is connected to.
    package let location: PostgreSQLLocation

    private static let nextID = Atomic<Int>(1)

    private init(connection: PostgresConnection, location: PostgreSQLLocation, logger: Logger) {
        self.connection = connection
        self.location = location
        self.logger = logger
    }

    /// Connects and signs in; throws 134080 (with the server's reason) when the server can't be
    /// reached, refuses the password or has no such database.
    package static func open(_ location: PostgreSQLLocation, connectTimeout: TimeAmount = .seconds(10)) throws -> PostgreSQLConnection {
        try refuseOnEventLoop("connecting to \(location.summary)")
        let tls: PostgresConnection.Configuration.TLS
        do {
            switch location.tls {
            case .disable: tls = .disable
            case .prefer: tls = .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
            case .require: tls = .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
            }
        } catch {
            throw PostgreSQLErrors.opening(error, location)
        }
        var configuration = PostgresConnection.Configuration(host: location.host, port: location.port, username: location.username,
                                                             password: location.password, database: location.database, tls: tls)
        configuration.options.connectTimeout = connectTimeout
        let logger = Logger(label: "OpenCoreData.PostgreSQL")
        let id = nextID.add(1, ordering: .relaxed).oldValue
        do {
            let connection = try PostgresConnection.connect(on: MultiThreadedEventLoopGroup.singleton.any(), configuration: configuration,
                                                            id: id, logger: logger).wait()
            return PostgreSQLConnection(connection: connection, location: location, logger: logger)
        } catch {
            throw PostgreSQLErrors.opening(error, location)
        }
    }

    /// Runs one statement and returns all its rows.
    @discardableResult
    package func query(_ sql: String, _ binds: PostgresBindings = PostgresBindings()) throws -> [PostgresRow] {
        try Self.refuseOnEventLoop("running a query")
        do {
            return try connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger).wait().rows
        } catch {
            throw PostgreSQLErrors.query(error, sql: sql, location: location)
        }
    }

    /// Listens on a channel (`LISTEN`, sent before this returns): each notification's payload
    /// goes to `onNotification`, on an event-loop thread; `onClose` is called once the
    /// connection ends, however it ends.
    package func listen(channel: String, onNotification: @escaping @Sendable (String) -> Void, onClose: @escaping @Sendable () -> Void) throws {
        connection.addListener(channel: channel) { _, message in onNotification(message.payload) }
        connection.closeFuture.whenComplete { _ in onClose() }
        try query("LISTEN \(channel)")
    }

    /// Whether the connection was closed here or ended by the server or the network.
    package var isClosed: Bool { closed.load(ordering: .acquiring) || connection.isClosed }

    /// Closes the connection (again is harmless): waits until it is closed, except on an
    /// event-loop thread (a change listener freed by its own notification callback), where
    /// waiting would stop the loop; there the close completes after this returns.
    package func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        guard MultiThreadedEventLoopGroup.currentEventLoop == nil else { return closeWithoutWaiting() }
        // Ignored: a connection the server already dropped has nothing left to close.
        try? connection.close().wait()
    }

    /// A connection let go without `close()` (its store freed with its coordinator) is closed
    /// without waiting.
    deinit {
        guard !closed.load(ordering: .acquiring) else { return }
        closeWithoutWaiting()
    }

    /// Starts closing the connection; the callback keeps postgres-nio's connection alive until
    /// it is closed.
    private func closeWithoutWaiting() {
        let connection = self.connection
        connection.close().whenComplete { _ in withExtendedLifetime(connection) {} }
    }

    private static func refuseOnEventLoop(_ what: String) throws {
        guard MultiThreadedEventLoopGroup.currentEventLoop != nil else { return }
        throw NSError(domain: NSCocoaErrorDomain, code: 134060, userInfo: [
            NSLocalizedDescriptionKey: "A PostgreSQL store was used on a SwiftNIO event-loop thread (\(what)); waiting there would stop the loop. Use the store from a context's queue, e.g. in perform or performAndWait.",
        ])
    }
}
