import Foundation
import PostgresNIO
import Synchronization
import Testing
@testable import OpenCoreDataPostgreSQL

/// The PostgreSQL store's URL and its connections: synchronous calls over postgres-nio's event
/// loops, and Core Data's errors for every way of not getting in.
@Suite struct PostgreSQLConnectionTests {
    @Test func theURLGivesEveryPartWithDefaults() throws {
        let plain = try PostgreSQLLocation(url: URL(string: "postgres://ocd:s%40cret@db.example:6543/shop")!)
        #expect(plain.host == "db.example")
        #expect(plain.port == 6543)
        #expect(plain.username == "ocd")
        #expect(plain.password == "s@cret")
        #expect(plain.database == "shop")
        #expect(plain.schema == "public" && plain.poolSize == 4 && plain.tls == .disable)
        let options = try PostgreSQLLocation(url: URL(string: "postgresql://ocd@localhost/shop?schema=tenant_7&pool=12&tls=require")!)
        #expect(options.port == 5432 && options.password == nil)
        #expect(options.schema == "tenant_7" && options.poolSize == 12 && options.tls == .require)
    }

    @Test(arguments: ["sqlite:///tmp/x", "postgres:///shop", "postgres://host/shop", "postgres://ocd@host", "postgres://ocd@host:70000/shop",
                      "postgres://ocd@host/shop?pool=0", "postgres://ocd@host/shop?tls=maybe", "postgres://ocd@host/shop?colour=red"])
    func aBadURLIsRefusedWithCoreDataError(_ text: String) throws {
        let error = try #require(throws: NSError.self) { try PostgreSQLLocation(url: URL(string: text)!) }
        #expect(error.domain == NSCocoaErrorDomain && error.code == 134080)
    }

    @Test func thePasswordNeverAppearsInAnError() throws {
        let error = try #require(throws: NSError.self) { try PostgreSQLLocation(url: URL(string: "postgres://ocd:hunter2@host/shop?pool=x")!) }
        #expect(!error.localizedDescription.contains("hunter2"))
    }

    @Test func anUnreachableServerIsAnOpenError() throws {
        // Nothing listens on port 1; the refusal comes at once.
        let location = try PostgreSQLLocation(url: URL(string: "postgres://ocd:pw@127.0.0.1:1/ocd")!)
        let error = try #require(throws: NSError.self) { try PostgreSQLConnection.open(location, connectTimeout: .seconds(5)) }
        #expect(error.domain == NSCocoaErrorDomain && error.code == 134080)
        #expect(error.localizedDescription.contains("can't be reached"))
        #expect(error.userInfo[NSUnderlyingErrorKey] != nil)
    }

    @Test func aServerIsThereWhenTheRunRequiresOne() {
        if PostgreSQLTestServer.isRequired {
            #expect(PostgreSQLTestServer.isAvailable, "OPENCOREDATA_REQUIRE_POSTGRES=1 but OPENCOREDATA_POSTGRES_URL is not set")
        }
    }

    /// A change listener freed by its own notification callback closes its connection on the
    /// event loop: there `close()` can't wait (NIO traps a wait on a loop thread).
    @Test(.enabled(if: PostgreSQLTestServer.isAvailable, PostgreSQLTestServer.skipReason))
    func aConnectionClosedOnAnEventLoopThreadClosesWithoutWaiting() throws {
        let connection = try PostgreSQLConnection.open(PostgreSQLTestServer.location())
        let closedThere = try MultiThreadedEventLoopGroup.singleton.any().submit {
            connection.close()
            return true
        }.wait()
        #expect(closedThere && connection.isClosed)
    }

    @Test(.enabled(if: PostgreSQLTestServer.isAvailable, PostgreSQLTestServer.skipReason))
    func queriesRunAndReturnRowsWithBoundValues() throws {
        let connection = try PostgreSQLConnection.open(PostgreSQLTestServer.location())
        defer { connection.close() }
        var binds = PostgresBindings()
        binds.append("Ünïcödé ✓")
        binds.append(Int64(41))
        let rows = try connection.query("SELECT $1::text, $2::int8 + 1", binds)
        let (text, number) = try rows[0].decode((String, Int64).self)
        #expect(text == "Ünïcödé ✓" && number == 42)
    }

    @Test(.enabled(if: PostgreSQLTestServer.isAvailable, PostgreSQLTestServer.skipReason))
    func aWrongPasswordAndAMissingDatabaseAreOpenErrors() throws {
        var wrongPassword = try PostgreSQLTestServer.location()
        wrongPassword.password = "not-the-password"
        let refused = try #require(throws: NSError.self) { try PostgreSQLConnection.open(wrongPassword) }
        #expect(refused.code == 134080 && refused.localizedDescription.contains("password"))
        #expect(refused.userInfo[PostgreSQLErrors.sqlStateKey] as? String == "28P01")

        var missing = try PostgreSQLTestServer.location()
        missing.database = "no_such_database"
        let absent = try #require(throws: NSError.self) { try PostgreSQLConnection.open(missing) }
        #expect(absent.code == 134080 && absent.localizedDescription.contains("no_such_database"))
    }

    @Test(.enabled(if: PostgreSQLTestServer.isAvailable, PostgreSQLTestServer.skipReason))
    func aFailedStatementIsACoreDataErrorAndTheConnectionGoesOn() throws {
        let connection = try PostgreSQLConnection.open(PostgreSQLTestServer.location())
        defer { connection.close() }
        let error = try #require(throws: NSError.self) { try connection.query("SELECT * FROM no_such_table") }
        #expect(error.domain == NSCocoaErrorDomain && error.code == 134060)
        #expect(error.userInfo[PostgreSQLErrors.sqlStateKey] as? String == "42P01")
        #expect(try connection.query("SELECT 1").count == 1)
    }

    @Test(.enabled(if: PostgreSQLTestServer.isAvailable, PostgreSQLTestServer.skipReason))
    func manyQueuesUseConnectionsAtOnceOverTheSharedEventLoops() throws {
        // 32 connections used at once from as many queues, as contexts would.
        let location = try PostgreSQLTestServer.location()
        let results = Mutex<[Int64]>([])
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 32) { index in
            do {
                let connection = try PostgreSQLConnection.open(location)
                defer { connection.close() }
                var binds = PostgresBindings()
                binds.append(Int64(index))
                let value = try connection.query("SELECT $1::int8 * 2", binds)[0].decode(Int64.self)
                results.withLock { $0.append(value) }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        #expect(failures.withLock { $0 } == [])
        #expect(results.withLock { $0.sorted() } == (0..<32).map { Int64($0) * 2 })
    }
}
