import Foundation
import OpenCoreData
import Testing
import WorldCupKit

/// The `worldcup` demo's commands, on a store of its own, across two "runs".
@MainActor
@Suite struct WorldCupDemoTests {
    @Test func importsOnceListsInZonesAndPersistsChanges() throws {
        let url = TestSupport.temporaryDirectory().appendingPathComponent("WorldCup.sqlite")
        do {
            let app = try WorldCupApp(storeURL: url)
            #expect(try app.importSeedIfNeeded() == 32)
            #expect(try app.importSeedIfNeeded() == 0, "imported once")
            let sections = try app.sections()
            #expect(sections.map(\.zone) == sections.map(\.zone).sorted())
            #expect(sections.reduce(0) { $0 + $1.teams.count } == 32)
            #expect(try app.execute("win brazil").output == "Brazil now has 1 wins.")
            #expect(try app.execute("win Brazil").output == "Brazil now has 2 wins.")
            #expect(try app.execute("add New Team North America").output == "Added New Team in North America.")
            #expect(try app.execute("add \"Atlantis\" \"Lost Zone\"").output == "Added Atlantis in Lost Zone.")
            #expect(try app.execute("delete Ghana").output == "Deleted Ghana.")
            #expect(try app.execute("win Nowhere").output == "No team named Nowhere.")
            #expect(try app.execute("quit").quit)
        }
        // A second run over the same file sees every change.
        let again = try WorldCupApp(storeURL: url)
        #expect(try again.importSeedIfNeeded() == 0)
        let sections = try again.sections()
        let southAmerica = try #require(sections.first { $0.zone == "South America" })
        #expect(southAmerica.teams.first?.teamName == "Brazil", "wins descending within the zone")
        #expect(southAmerica.teams.dropFirst().map { $0.teamName ?? "" } == southAmerica.teams.dropFirst().map { $0.teamName ?? "" }.sorted(), "then by name")
        let northAmerica = try #require(sections.first { $0.zone == "North America" })
        #expect(northAmerica.teams.map(\.teamName) == ["New Team"], "a new zone is a new section")
        #expect(sections.contains { $0.zone == "Lost Zone" })
        #expect(try again.team(named: "Ghana") == nil)
        #expect(sections.reduce(0) { $0 + $1.teams.count } == 33)
        let listing = try again.listing()
        #expect(listing.contains("Brazil") && listing.contains("wins: 2"))
    }
}
