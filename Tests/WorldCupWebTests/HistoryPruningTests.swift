import Foundation
import OpenCoreData
import Testing
import WorldCupKit
import WorldCupWebKit

/// The live table prunes the store's persistent history after its saves, keeping what is newer
/// than its retention, so that the history doesn't grow with every click.
@Suite("History pruning")
struct HistoryPruningTests {
    /// The number of history transactions in the app's store.
    static func transactionCount(_ app: WorldCupApp) throws -> Int {
        try app.context.performAndWait { [app] in
            let result = try app.context.execute(NSPersistentHistoryChangeRequest.fetchHistory(after: nil as NSPersistentHistoryToken?))
            return ((result as? NSPersistentHistoryResult)?.result as? [NSPersistentHistoryTransaction])?.count ?? -1
        }
    }

    /// Twenty wins, through a table that keeps `retention` seconds of history and prunes at every save.
    static func twentyWins(retention: TimeInterval) async throws -> (before: Int, after: Int) {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let app = try WorldCupApp(storeURL: directory.url.appendingPathComponent("WorldCup.sqlite"))
        try app.context.performAndWait { [app] in _ = try app.importSeedIfNeeded() }
        let before = try transactionCount(app)
        let table = try LiveTeamTable(container: app.container, historyRetention: retention, historyPruneInterval: 0)
        let nigeria = try await table.id(of: "Nigeria")
        for _ in 0..<20 { try await table.addWin(teamID: nigeria) }
        return (before, try transactionCount(app))
    }

    @Test("history older than the retention goes; newer history stays")
    func pruning() async throws {
        // A day: a loaded machine can take minutes over the test, which must not prune the import.
        let kept = try await Self.twentyWins(retention: 86_400)
        #expect(kept.before >= 1, "the seed import is in the history")
        #expect(kept.after == kept.before + 20)
        let pruned = try await Self.twentyWins(retention: 0)
        #expect(pruned.after <= 1, "each save prunes what came before it: \(pruned.after) transactions left")
    }
}
