import Foundation
import OpenCoreDataTestKit
import PostgresNIO
import Testing
import WorldCupKit
import WorldCupWebKit
@testable import OpenCoreDataPostgreSQL

/// Two `worldcup-web` servers on two ports over one PostgreSQL database, a browser page on each:
/// a click on one page moves the team on the other (the save reaches the other server through
/// the store's notifications, then its controller, then its page).
@Suite("Live table across servers", .serialized)
struct PostgreSQLBrowserTests {
    static let databaseURL = ProcessInfo.processInfo.environment["OPENCOREDATA_POSTGRES_URL"].flatMap(URL.init(string:))
    static let enabled = databaseURL != nil && (Browser.executables != nil || Browser.isRequired)
    static let skipReason: Comment = "Skipped: needs chromium with chromedriver and a PostgreSQL server (scripts/with-postgres)."

    /// A store URL in a schema of the test's own, and the way to drop it.
    static func freshStore() -> (url: URL, drop: @Sendable () -> Void)? {
        guard let base = databaseURL else { return nil }
        let schema = "worldcup_\(UUID().uuidString.prefix(8).lowercased())"
        var components = URLComponents(url: base, resolvingAgainstBaseURL: false)!
        components.query = "schema=\(schema)"
        return (components.url!, {
            if let connection = try? PostgreSQLConnection.open(PostgreSQLLocation(url: base)) {
                _ = try? connection.query("DROP SCHEMA IF EXISTS \(schema) CASCADE")
                connection.close()
            }
        })
    }

    @Test("Two servers' live tables over one database: a win on one reaches the other's pages", .enabled(if: databaseURL != nil, "Skipped: no PostgreSQL server"))
    func aWinOnOneServerReachesTheOthersPages() async throws {
        let (storeURL, drop) = try #require(Self.freshStore())
        defer { drop() }
        let first = try WorldCupApp(storeURL: storeURL, observesRemoteChanges: true)
        try first.context.performAndWait { [first] in _ = try first.importSeedIfNeeded() }
        let second = try WorldCupApp(storeURL: storeURL, observesRemoteChanges: true)
        let tables = try [LiveTeamTable(container: first.container), LiveTeamTable(container: second.container)]
        let collector = MessageCollector(await tables[1].subscribe())
        try await tables[0].addWin(teamID: tables[0].id(of: "Nigeria"))
        try await tables[0].addTeam(name: "Atlantis", zone: "Atlantic Ocean")
        var page = PageTableModel()
        var applied = 0
        let caughtUp = try await eventually(every: .milliseconds(20)) {
            let messages = await collector.messages
            for message in messages.dropFirst(applied) { try page.apply(message) }
            applied = messages.count
            return page.sections.first?.rows.first?.name == "Nigeria" && page.sections.contains { $0.name == "Atlantic Ocean" }
        }
        await collector.stop()
        #expect(caughtUp, "the second server's page: \(page.sections.map(\.summary))")
        let firstTable = await tables[0].currentSections().map(\.summary)
        #expect(page.sections.map(\.summary) == firstTable)
        #expect(await tables[1].currentSections().map(\.summary) == firstTable)
        #expect(page.version >= 2, "the page got the saves as batches, not a new table")
    }

    @Test("A click on a page of one server moves the team on a page of the other", .enabled(if: enabled, skipReason), .timeLimit(.minutes(15)))
    func aClickOnOneServerMovesTheTeamOnTheOther() async throws {
        guard let (browser, driverPath) = Browser.executables, let (storeURL, drop) = Self.freshStore() else {
            throw WebDriverError("chromium and chromedriver are required (OPENCOREDATA_REQUIRE_BROWSER=1) but not installed")
        }
        defer { drop() }
        // The first server creates the tables and imports the teams; the second opens them.
        var servers: [WorldCupWebServer] = []
        var tasks: [Task<Void, Error>] = []
        var ports: [Int] = []
        let driver = try await ChromeDriver(driverPath: driverPath, browserPath: browser)
        defer {
            driver.stop()
            for task in tasks { task.cancel() }
        }
        for _ in 0..<2 {
            let server = try WorldCupWebServer(options: .init(port: 0, storeURL: storeURL, serverLogLevel: .critical))
            let (stream, continuation) = AsyncStream<Int>.makeStream()
            tasks.append(Task { try await server.run { port in continuation.yield(port) } })
            var iterator = stream.makeAsyncIterator()
            guard let port = await iterator.next(), port > 0 else { throw WebDriverError("a server did not start") }
            servers.append(server)
            ports.append(port)
        }
        var pages: [WebDriverSession] = []
        for port in ports {
            let page = try await driver.newSession()
            try await page.open(URL(string: "http://127.0.0.1:\(port)/")!)
            #expect(try await page.waitUntil("return document.querySelectorAll('li.team').length === 32"), "the page shows 32 teams, once")
            pages.append(page)
        }
        // Nigeria, last in Africa with no wins: a click on the first server's page adds a win, and
        // the second server's page moves Nigeria to the top of Africa.
        try await pages[0].click("li.team[data-name=\"Nigeria\"] .name")
        #expect(try await pages[1].waitUntil("return document.querySelector('section.zone li.team').dataset.name === 'Nigeria'"),
                "the other server's page moves Nigeria to the top of Africa")
        // And back: a team added on the second server appears on the first server's page.
        try await pages[1].type("Atlantis", into: "input[name=name]")
        try await pages[1].type("Atlantic Ocean", into: "input[name=zone]")
        try await pages[1].click("form#add-team button[type=submit]")
        #expect(try await pages[0].waitUntil("return !!document.querySelector('section.zone[data-zone=\"Atlantic Ocean\"] li.team[data-name=\"Atlantis\"]')"),
                "the first server's page shows the team added on the other")
        let first = await servers[0].table.currentSections().map(\.summary)
        let second = await servers[1].table.currentSections().map(\.summary)
        #expect(first == second, "both servers' controllers hold the same table")
        #expect(first.first == "Africa: Nigeria (1), Algeria (0), Cameroon (0), Ghana (0), Ivory Coast (0)")
        for page in pages { await page.close() }
    }
}
