import Foundation
import OpenCoreData
import OpenCoreDataTestKit
import Testing
@testable import OpenCoreDataCore
@testable import OpenCoreDataPostgreSQL

/// Contexts of one coordinator read a PostgreSQL store at once, each on a connection of the
/// store's pool (`pool` in the URL): a fetch waiting on the server doesn't hold up the others.
@Suite(.enabled(if: PostgreSQLTestServer.isAvailable, PostgreSQLTestServer.skipReason))
struct PostgreSQLConcurrencyTests {
    final class Moment: @unchecked Sendable {
        private let lock = NSLock()
        private var date: Date?
        func mark() { lock.withLock { date = Date() } }
        var value: Date? { lock.withLock { date } }
    }

    /// Ends another program's transaction once, whoever asks first (the test, or a safety valve
    /// that keeps a coordinator reading one request at a time from hanging the test).
    final class TableLock: @unchecked Sendable {
        private let lock = NSLock()
        private let connection: PostgreSQLConnection
        private var releasedAt: Date?
        init(_ connection: PostgreSQLConnection) { self.connection = connection }
        func release() {
            lock.withLock {
                guard releasedAt == nil else { return }
                _ = try? connection.query("COMMIT")
                releasedAt = Date()
            }
        }
        var released: Date? { lock.withLock { releasedAt } }
    }

    /// Fetches every object of an entity in a context of its own, off this thread; the moment
    /// marks when the fetch is done.
    private func fetchInBackground(_ entityName: String, _ coordinator: NSPersistentStoreCoordinator) -> Moment {
        let done = Moment()
        let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        context.persistentStoreCoordinator = coordinator
        DispatchQueue.global().async {
            context.performAndWait { _ = try? context.fetch(NSFetchRequest<NSManagedObject>(entityName: entityName)) }
            done.mark()
        }
        return done
    }

    /// With the default pool the second context reads while the first waits on the server; with
    /// `pool=1` it waits for the one read connection, which the waiting fetch holds.
    @Test(arguments: [nil, "1"])
    func aFetchWaitingOnTheServerDoesNotHoldUpAnotherContext(_ pool: String?) async throws {
        let database = PostgreSQLStoreTests.Database()
        var components = URLComponents(url: database.url, resolvingAgainstBaseURL: false)!
        if let pool { components.queryItems = (components.queryItems ?? []) + [URLQueryItem(name: "pool", value: pool)] }
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: PostgreSQLStoreTests.model)
        try coordinator.addPersistentStore(ofType: NSPostgreSQLStoreType, configurationName: nil, at: components.url!)
        let filler = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        filler.persistentStoreCoordinator = coordinator
        try PostgreSQLStoreTests.fill(filler)

        // Another program holds the employees' table; a fetch of employees waits for it.
        let other = try PostgreSQLConnection.open(PostgreSQLTestServer.location())
        defer { other.close() }
        try other.query("SET search_path TO \(database.schema)")
        try other.query("BEGIN")
        try other.query("LOCK TABLE ZEMPLOYEE IN ACCESS EXCLUSIVE MODE")
        let tableLock = TableLock(other)
        // Only against a hang: later than any wait below may last on a loaded machine (`eventually`
        // outlasts `patience` when the test gets no thread).
        DispatchQueue.global().asyncAfter(deadline: .now() + 4 * patience) { tableLock.release() }
        let employeesRead = fetchInBackground("Employee", coordinator)
        let admin = try PostgreSQLConnection.open(PostgreSQLTestServer.location())
        defer { admin.close() }
        let blocked = try await eventually {
            try admin.run("SELECT 1 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation JOIN pg_namespace n ON n.oid = c.relnamespace WHERE NOT l.granted AND c.relname = 'zemployee' AND n.nspname = $1",
                          [.text(database.schema)]).count > 0
        }
        #expect(blocked, "the employees' fetch waits on the server")

        let projectsRead = fetchInBackground("Project", coordinator)
        if pool == nil {
            #expect(try await eventually { projectsRead.value != nil })
            #expect(tableLock.released == nil, "the projects were read while the employees' fetch still waited")
            #expect(employeesRead.value == nil)
        } else {
            try await Task.sleep(for: .seconds(1))
            #expect(projectsRead.value == nil, "one read connection: the projects wait for the employees' fetch")
        }
        tableLock.release()
        #expect(try await eventually { employeesRead.value != nil && projectsRead.value != nil }, "both finish once the table is free")
    }

    @Test func thePoolOptionBoundsTheReadConnections() throws {
        for (pool, expected) in [("1", 1), ("3", 3)] {
            var components = URLComponents(url: PostgreSQLStoreTests.Database().url, resolvingAgainstBaseURL: false)!
            components.queryItems = (components.queryItems ?? []) + [URLQueryItem(name: "pool", value: pool)]
            let connector = try #require(SQLServerConnector.connector(forStoreType: NSPostgreSQLStoreType))
            #expect(connector.poolSize(components.url!) == expected)
        }
    }
}
