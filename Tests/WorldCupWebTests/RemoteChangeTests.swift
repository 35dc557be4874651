import Foundation
import OpenCoreDataTestKit
import Testing
import WorldCupKit
import WorldCupWebKit

/// Writes by another process on the same store file reach the live table: the terminal `worldcup`
/// program, run as a child process, adds a win, a team in a new zone and deletes a team.
@Suite("Live table and other processes")
struct RemoteChangeTests {
    @Test("The terminal worldcup's saves arrive as batches that rebuild the server's table")
    func terminalWritesReachThePages() async throws {
        try #require(TerminalWorldCup.isBuilt, "build the worldcup program (swift build) first: \(TerminalWorldCup.url.path)")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let storeURL = directory.url.appendingPathComponent("WorldCup.sqlite")
        let app = try WorldCupApp(storeURL: storeURL, observesRemoteChanges: true)
        try app.context.performAndWait { [app] in _ = try app.importSeedIfNeeded() }
        let table = try LiveTeamTable(container: app.container)
        let collector = MessageCollector(await table.subscribe())

        #expect(try await TerminalWorldCup.run(store: storeURL, commands: ["win Korea", "add Atlantis \"Atlantic Ocean\"", "delete Ghana"]) == 0)

        // One batch per save of the other process (several saves may share a notification, but
        // each transaction is merged on its own).
        var page = PageTableModel()
        var applied = 0
        _ = try await eventually(every: .milliseconds(20)) {
            let messages = await collector.messages
            for message in messages.dropFirst(applied) { try page.apply(message) }
            applied = messages.count
            return page.sections.contains { $0.name == "Atlantic Ocean" }
                && page.sections.first?.rows.contains { $0.name == "Ghana" } == false
                && page.sections.first { $0.name == "Asia" }?.rows.first?.name == "Korea"
        }
        await collector.stop()
        let server = await table.currentSections()
        #expect(page.sections.map(\.summary) == server.map(\.summary))
        #expect(server.first { $0.name == "Asia" }?.rows.first.map { "\($0.name) \($0.wins)" } == "Korea 1")
        #expect(server.first { $0.name == "Atlantic Ocean" }?.rows.map(\.name) == ["Atlantis"])
        #expect(server.first { $0.name == "Africa" }?.rows.map(\.name) == ["Algeria", "Cameroon", "Ivory Coast", "Nigeria"])
        #expect(page.version >= 3, "the page got the three saves as batches, not a new table")
    }
}
