import Foundation
import OpenCoreData
import Testing
import WorldCupKit
import WorldCupWebKit

/// The messages the live table sends its pages, checked without a browser: a page that applies
/// them with UITableView's batch rules ends with the server's table, and every batch keeps those rules.
@Suite("Live table messages")
struct TableMessageStreamTests {
    /// A World Cup store with the 32 seed teams and a live table over it.
    struct Fixture {
        let directory: TemporaryDirectory
        let app: WorldCupApp
        let table: LiveTeamTable

        init() throws {
            directory = try TemporaryDirectory()
            app = try WorldCupApp(storeURL: directory.url.appendingPathComponent("WorldCup.sqlite"))
            try app.context.performAndWait { [app] in _ = try app.importSeedIfNeeded() }
            table = try LiveTeamTable(container: app.container)
        }
    }

    @Test("A page first gets the whole table: five zones, 32 teams, zone then wins then name")
    func initialState() async throws {
        let fixture = try Fixture()
        defer { fixture.directory.remove() }
        let collector = MessageCollector(await fixture.table.subscribe())
        guard case .state(let version, let sections) = try await collector.waitFor(1).first else {
            Issue.record("the first message is not the table")
            return
        }
        #expect(version == 0)
        #expect(sections.map(\.name) == ["Africa", "Asia", "Europe", "North, Central America & Caribbean", "South America"])
        #expect(sections.map(\.rows.count) == [5, 4, 13, 4, 6])
        #expect(sections[0].rows.map(\.name) == ["Algeria", "Cameroon", "Ghana", "Ivory Coast", "Nigeria"])
        #expect(sections[0].rows[0].flag == "algeria-flag")
        await collector.stop()
    }

    @Test("Batches keep UITableView's rules and rebuild the server's table on two pages")
    func batchesRebuildTheTable() async throws {
        let fixture = try Fixture()
        defer { fixture.directory.remove() }
        let table = fixture.table
        let first = MessageCollector(await table.subscribe())
        let second = MessageCollector(await table.subscribe())
        #expect(table.subscriberCount == 2)

        try await table.addWin(teamID: try await table.id(of: "Nigeria"))            // moves to the top of Africa
        try await table.addWin(teamID: try await table.id(of: "Nigeria"))            // stays first: a reload
        try await table.addTeam(name: "Atlantis", zone: "Atlantic Ocean")             // new section
        try await table.addTeam(name: "Zanzibar", zone: "Africa")                     // a row at the end of Africa
        try await table.deleteTeam(teamID: try await table.id(of: "Atlantis"))        // the zone's last team: section gone
        try fixture.app.context.performAndWait { [app = fixture.app] in              // another context of the same stack
            _ = try app.execute("win Japan")
        }
        let expectedCount = 1 + 6
        var pages = [PageTableModel(), PageTableModel()]
        for (index, collector) in [first, second].enumerated() {
            for message in try await collector.waitFor(expectedCount) {
                try pages[index].apply(message)
            }
            await collector.stop()
        }
        let server = await table.currentSections()
        #expect(pages[0].version == 6)
        #expect(pages[0].sections.map(\.summary) == server.map(\.summary))
        #expect(pages[1].sections == pages[0].sections)
        #expect(server.first { $0.name == "Africa" }?.rows.map(\.name) == ["Nigeria", "Algeria", "Cameroon", "Ghana", "Ivory Coast", "Zanzibar"])
        #expect(server.first { $0.name == "Asia" }?.rows.first?.name == "Japan")
        #expect(!server.contains { $0.name == "Atlantic Ocean" })

        let batches = await first.messages.compactMap { message -> [TableChange]? in
            if case .batch(_, let changes) = message { return changes }
            return nil
        }
        #expect(batches.count == 6)
        #expect(batches[0].contains { if case .moveRow(let from, let to, _) = $0 { from == RowPath(section: 0, row: 4) && to == RowPath(section: 0, row: 0) } else { false } })
        #expect(batches[1].contains { if case .reloadRow(let at, let row) = $0 { at == RowPath(section: 0, row: 0) && row.wins == 2 } else { false } })
        #expect(batches[2].first == .insertSection(section: 2, name: "Atlantic Ocean"))
        #expect(batches[4].first == .deleteSection(section: 2, name: "Atlantic Ocean"))
        // Section changes come before row changes in every batch.
        for batch in batches {
            #expect(batch.drop { $0.isSectionChange }.allSatisfy { !$0.isSectionChange })
        }
    }

    @Test("Bad writes are refused with a clear error and change nothing")
    func badWrites() async throws {
        let fixture = try Fixture()
        defer { fixture.directory.remove() }
        let table = fixture.table
        await #expect(throws: WebRequestError.badRequest("A team needs a name and a zone.")) {
            try await table.addTeam(name: "  ", zone: "Europe")
        }
        await #expect(throws: WebRequestError.badRequest("Brazil already exists.")) {
            try await table.addTeam(name: "Brazil", zone: "Europe")
        }
        await #expect(throws: WebRequestError.notFound("No team with ID x-coredata://nowhere/Team/p1.")) {
            try await table.addWin(teamID: "x-coredata://nowhere/Team/p1")
        }
        #expect(await table.currentSections().flatMap(\.rows).count == 32)
    }

    @Test("A message is JSON the page reads: one key naming its kind")
    func messageJSON() throws {
        let row = TeamRow(id: "x-coredata://S/Team/p1", name: "Brazil", zone: "South America", flag: "brazil-flag", wins: 1)
        let json = TableMessage.batch(version: 3, changes: [.moveRow(from: RowPath(section: 4, row: 2), to: RowPath(section: 4, row: 0), row: row)]).json()
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let batch = try #require(object["batch"] as? [String: Any])
        #expect(batch["version"] as? Int == 3)
        let change = try #require((batch["changes"] as? [[String: Any]])?.first?["moveRow"] as? [String: Any])
        #expect((change["from"] as? [String: Int]) == ["section": 4, "row": 2])
        #expect((change["row"] as? [String: Any])?["name"] as? String == "Brazil")
    }
}
