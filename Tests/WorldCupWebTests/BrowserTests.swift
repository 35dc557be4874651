import Foundation
import OpenCoreDataTestKit
import Testing
import WorldCupWebKit

/// The pages in a real browser: headless Chromium through chromedriver, two windows on one
/// in-process server over a temporary store.
@Suite("Live table in a browser", .serialized)
struct BrowserTests {
    static let skipReason: Comment = """
        Skipped: chromium and chromedriver are not installed (apt-get install chromium chromium-driver). \
        With OPENCOREDATA_REQUIRE_BROWSER=1 this is a failure.
        """

    /// The page's table as text, one "Zone: Team (wins), …" line per section, without rows and
    /// sections that are animating out.
    static let pageSummary = """
        return [...document.querySelectorAll('section.zone:not(.leaving)')].map(s => s.dataset.zone + ': ' +
          [...s.querySelectorAll('li.team:not(.leaving)')].map(li => `${li.dataset.name} (${li.dataset.wins})`).join(', '));
        """

    /// A running server with two browser windows on its page.
    struct Session {
        let directory: TemporaryDirectory
        let server: WorldCupWebServer
        let serverTask: Task<Void, Error>
        let port: Int
        let driver: ChromeDriver
        let pages: [WebDriverSession]

        static func start(pages count: Int) async throws -> Session {
            guard let (browser, driverPath) = Browser.executables else {
                throw WebDriverError("chromium and chromedriver are required (OPENCOREDATA_REQUIRE_BROWSER=1) but not installed")
            }
            let directory = try TemporaryDirectory()
            let server = try WorldCupWebServer(options: .init(port: 0, storeURL: directory.url.appendingPathComponent("WorldCup.sqlite"), serverLogLevel: .critical))
            let (ports, continuation) = AsyncStream<Int>.makeStream()
            let serverTask = Task { try await server.run { port in continuation.yield(port) } }
            var driver: ChromeDriver?
            do {
                var iterator = ports.makeAsyncIterator()
                guard let port = await iterator.next(), port > 0 else { throw WebDriverError("the server did not start") }
                driver = try await ChromeDriver(driverPath: driverPath, browserPath: browser)
                var pages: [WebDriverSession] = []
                for _ in 0..<count { pages.append(try await driver!.newSession()) }
                return Session(directory: directory, server: server, serverTask: serverTask, port: port, driver: driver!, pages: pages)
            } catch {
                driver?.stop()
                serverTask.cancel()
                _ = try? await serverTask.value
                directory.remove()
                throw error
            }
        }

        var url: URL { URL(string: "http://127.0.0.1:\(port)/")! }

        /// The server's table in the form of `pageSummary`.
        func serverSummary() async -> [String] {
            await server.table.currentSections().map(\.summary)
        }

        /// Waits until every page shows the server's table.
        func expectPagesMatchServer(_ step: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
            let expected = await serverSummary()
            for (index, page) in pages.enumerated() {
                var shown: [String] = []
                _ = try await eventually(every: .milliseconds(25)) {
                    shown = try await page.execute(BrowserTests.pageSummary) as? [String] ?? []
                    return shown == expected
                }
                #expect(shown == expected, "\(step): page \(index + 1)", sourceLocation: sourceLocation)
            }
        }

        func stop() async {
            for page in pages { await page.close() }
            driver.stop()
            serverTask.cancel()
            _ = try? await serverTask.value
            directory.remove()
        }
    }

    @Test("Two pages: initial sections, a win moves a row, adding and deleting insert and remove rows and sections",
          .enabled(if: Browser.executables != nil || Browser.isRequired, skipReason), .timeLimit(.minutes(15)))
    func liveTableInTwoPages() async throws {
        let session = try await Session.start(pages: 2)
        do {
            try await run(session)
        } catch {
            Issue.record(error)
        }
        await session.stop()
    }

    private func run(_ session: Session) async throws {
        // Both pages load and show the 32 teams by zone.
        for page in session.pages {
            try await page.open(session.url)
            #expect(try await page.waitUntil("return document.querySelectorAll('li.team').length === 32"), "the page shows 32 teams")
            // Markers that a reload or a rebuilt list would lose.
            _ = try await page.execute("window.loadMarker = 'kept'; document.querySelector('li.team[data-name=\"Brazil\"]').dataset.marker = 'same';")
        }
        let zones = try await session.pages[0].execute("return [...document.querySelectorAll('section.zone h2')].map(h => h.textContent)") as? [String]
        #expect(zones == ["Africa", "Asia", "Europe", "North, Central America & Caribbean", "South America"])
        try await session.expectPagesMatchServer("initial table")

        // A click on Nigeria, last in Africa with no wins, adds a win: it moves to the top of Africa in both pages.
        try await session.pages[0].click("li.team[data-name=\"Nigeria\"] .name")
        #expect(try await session.pages[1].waitUntil("return document.querySelector('section.zone li.team').dataset.name === 'Nigeria'"),
                "the other page moves Nigeria to the top of Africa")
        #expect(await session.serverSummary().first == "Africa: Nigeria (1), Algeria (0), Cameroon (0), Ghana (0), Ivory Coast (0)")
        try await session.expectPagesMatchServer("after a win")
        // A second win keeps Nigeria in place: the row is reloaded with 2 wins.
        try await session.pages[1].click("li.team[data-name=\"Nigeria\"] .name")
        #expect(try await session.pages[0].waitUntil("return document.querySelector('li.team[data-name=\"Nigeria\"]').dataset.wins === '2'"),
                "the first page shows Nigeria's second win")
        try await session.expectPagesMatchServer("after a second win")

        // The form adds a team in a new zone: a new section with one row, in both pages.
        try await session.pages[0].type("Atlantis", into: "input[name=name]")
        try await session.pages[0].type("Atlantic Ocean", into: "input[name=zone]")
        try await session.pages[0].click("form#add-team button[type=submit]")
        #expect(try await session.pages[1].waitUntil("return !!document.querySelector('section.zone[data-zone=\"Atlantic Ocean\"] li.team[data-name=\"Atlantis\"]')"),
                "the other page inserts the Atlantic Ocean section")
        try await session.expectPagesMatchServer("after adding Atlantis")
        try await Task.sleep(for: .milliseconds(500)) // let the insert animation finish
        // Flags: a seed team's from the page's sprite; a team added on the page, its initial.
        let flags = try await session.pages[0].execute("""
            const brazil = document.querySelector('li.team[data-name="Brazil"] .flag use');
            const atlantis = document.querySelector('li.team[data-name="Atlantis"] .flag.plain text');
            return [brazil ? brazil.getAttribute('href') : 'none', String(document.getElementById('brazil-flag') instanceof SVGSymbolElement),
                    atlantis ? atlantis.textContent : 'none']
            """) as? [String]
        #expect(flags == ["#brazil-flag", "true", "A"], "\(flags ?? [])")
        // The zones use the window's width: more than one column at 1,000 pixels.
        let columns = try await session.pages[0].execute(
            "return new Set([...document.querySelectorAll('section.zone')].map(s => Math.round(s.getBoundingClientRect().left))).size") as? Int
        #expect((columns ?? 0) >= 2, "\(columns ?? 0) columns")
        let screenshot = FileManager.default.temporaryDirectory.appendingPathComponent("worldcup-web-screenshot.png")
        try await session.pages[0].screenshot().write(to: screenshot)
        print("worldcup-web screenshot: \(screenshot.path)")

        // The other page deletes the zone's only team: row and section go in both pages.
        try await session.pages[1].click("li.team[data-name=\"Atlantis\"] .delete")
        #expect(try await session.pages[0].waitUntil("return !document.querySelector('section.zone[data-zone=\"Atlantic Ocean\"]')"),
                "the first page removes the Atlantic Ocean section")
        try await session.expectPagesMatchServer("after deleting Atlantis")

        // The terminal program, another process on the same store file, adds a win: both pages follow.
        if TerminalWorldCup.isBuilt, let store = session.server.storeURL {
            #expect(try await TerminalWorldCup.run(store: store, commands: ["win Korea"]) == 0)
            for page in session.pages {
                #expect(try await page.waitUntil("return document.querySelector('section.zone[data-zone=\"Asia\"] li.team').dataset.name === 'Korea'"),
                        "the terminal's win moves Korea to the top of Asia")
            }
            try await session.expectPagesMatchServer("after the terminal's win")
        } else {
            Issue.record("build the worldcup program (swift build) first: \(TerminalWorldCup.url.path)")
        }

        // No page was reloaded and no list rebuilt: the markers are still there, and the changes came as batches.
        for page in session.pages {
            let kept = try await page.execute("""
                return window.loadMarker === 'kept' && document.querySelector('li.team[data-name="Brazil"]').dataset.marker === 'same' &&
                  window.worldCupTable.batchesApplied === 5
                """) as? Bool
            #expect(kept == true, "the page kept its state and applied five batches")
        }
        #expect(session.server.table.subscriberCount == 2)

        // A refused add shows the server's error, which clears once it stops being true: when the
        // form changes, and when the team whose name was taken is deleted.
        let page = session.pages[0]
        func submit(_ name: String, _ zone: String) async throws {
            _ = try await page.execute("document.querySelector('input[name=name]').value = ''; document.querySelector('input[name=zone]').value = '';")
            try await page.type(name, into: "input[name=name]")
            try await page.type(zone, into: "input[name=zone]")
            try await page.click("form#add-team button[type=submit]")
        }
        let errorShown = "return document.getElementById('error').textContent.includes('already exists')"
        let errorCleared = "return document.getElementById('error').textContent === ''"
        try await submit("Brazil", "South America")
        #expect(try await page.waitUntil(errorShown), "the page shows that Brazil exists")
        try await page.type("ia", into: "input[name=name]")
        #expect(try await page.waitUntil(errorCleared), "editing the form clears the error")
        try await submit("Brazil", "South America")
        #expect(try await page.waitUntil(errorShown), "the page shows that Brazil exists again")
        try await session.pages[1].click("li.team[data-name=\"Brazil\"] .delete")
        #expect(try await page.waitUntil(errorCleared), "deleting Brazil on the other page clears the error")
    }

    @Test("Two processes: worldcup writes a store, then the worldcup-web program, started on it in a process of its own, shows every team",
          .enabled(if: Browser.executables != nil || Browser.isRequired, skipReason), .timeLimit(.minutes(15)))
    func serverProcessOnAnExistingStore() async throws {
        guard let (browser, driverPath) = Browser.executables else {
            throw WebDriverError("chromium and chromedriver are required (OPENCOREDATA_REQUIRE_BROWSER=1) but not installed")
        }
        let server = TerminalWorldCup.url.deletingLastPathComponent().appendingPathComponent("worldcup-web")
        try #require(TerminalWorldCup.isBuilt && FileManager.default.isExecutableFile(atPath: server.path), "build the worldcup and worldcup-web programs first")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = directory.url.appendingPathComponent("WorldCup.sqlite")
        #expect(try await TerminalWorldCup.run(store: store, commands: ["win Japan"]) == 0)

        // A fresh process whose first use of the store is the controller over Team.
        let process = Process()
        process.executableURL = server
        process.arguments = ["--store", store.path, "--port", "0"]
        let output = directory.url.appendingPathComponent("server.out")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: output)
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer {
            if process.isRunning { process.interrupt() }
            process.waitUntilExit()
        }
        var port: Int?
        _ = try await eventually {
            let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
            port = text.firstRange(of: "http://127.0.0.1:").flatMap { range in Int(text[range.upperBound...].prefix { $0.isNumber }) }
            return port != nil || !process.isRunning
        }
        let url = try #require(port.map { URL(string: "http://127.0.0.1:\($0)/")! }, "the server printed no address")
        let driver = try await ChromeDriver(driverPath: driverPath, browserPath: browser)
        defer { driver.stop() }
        let page = try await driver.newSession()
        try await page.open(url)
        #expect(try await page.waitUntil("return document.querySelectorAll('li.team').length === 32"), "the page shows the store's 32 teams")
        #expect(try await page.waitUntil("return document.querySelector('li.team[data-name=\"Japan\"]').dataset.wins === '1'"),
                "the page shows the other process's win")
        await page.close()
    }

    @Test("Failed Banks: the first screen, then rows loaded as the page scrolls to the end",
          .enabled(if: Browser.executables != nil || Browser.isRequired, skipReason), .timeLimit(.minutes(15)))
    func failedBanksScroll() async throws {
        let session = try await Session.start(pages: 1)
        do {
            let page = session.pages[0]
            try await page.open(session.url.appendingPathComponent("banks"))
            #expect(try await page.waitUntil("return !!document.body.dataset.firstScreenMs"), "the first screen appears")
            let expectedFirst = try await session.server.banks.rows(in: 0..<3).map(\.name)
            let shownFirst = try await page.execute("return [...document.querySelectorAll('.bank .name')].slice(0, 3).map(e => e.textContent)") as? [String]
            #expect(shownFirst == expectedFirst)
            _ = try await page.execute("const v = document.getElementById('viewport'); v.scrollTop = v.scrollHeight;")
            let last = try await session.server.banks.rows(in: 232..<233).first?.name ?? "?"
            #expect(try await page.waitUntil("return [...document.querySelectorAll('.bank')].some(e => e.querySelector('.index').textContent === '233' && e.querySelector('.name').textContent === \(String(reflecting: last)))"),
                    "the last bank appears after scrolling")
            let requests = try await page.execute("return window.failedBanks.requests") as? Int ?? 0
            #expect((2...8).contains(requests), "rows come in chunks of 20 as needed (\(requests) requests)")
            let screenshot = FileManager.default.temporaryDirectory.appendingPathComponent("worldcup-web-banks.png")
            try await page.screenshot().write(to: screenshot)
            print("Failed Banks screenshot: \(screenshot.path)")
        } catch {
            Issue.record(error)
        }
        await session.stop()
    }
}
