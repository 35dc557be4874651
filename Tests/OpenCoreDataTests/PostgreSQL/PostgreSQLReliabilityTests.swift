import Foundation
import OpenCoreDataTestKit
import Testing
@testable import OpenCoreDataPostgreSQL

/// Nothing lost on PostgreSQL: an app process saving in a loop killed with SIGKILL at random
/// moments, and four processes of four contexts each saving to one database at once under each
/// merge policy (the `ReliabilityWorker` process, as for SQLite).
@Suite(.serialized, .enabled(if: PostgreSQLTestServer.isAvailable, PostgreSQLTestServer.skipReason))
struct PostgreSQLReliabilityTests {
    /// What the database holds, read with plain SQL.
    struct StoreState {
        var numbers: Set<Int64> = []
        var incompleteBatches = -1
        var orphanItems = -1
        var tags: [String: Int] = [:]
        var sharedTag: String?
    }

    static func inspect(_ database: PostgreSQLStoreTests.Database) throws -> StoreState {
        let connection = try PostgreSQLConnection.open(PostgreSQLTestServer.location())
        defer { connection.close() }
        try connection.query("SET search_path TO \(database.schema)")
        var state = StoreState()
        for row in try connection.query("SELECT znumber, ztag FROM zbatch") {
            let (number, tag) = try row.decode((Int64, String?).self)
            state.numbers.insert(number)
            if number == -1 { state.sharedTag = tag } else if let tag { state.tags[tag, default: 0] += 1 }
        }
        state.incompleteBatches = try connection.query("SELECT count(*) FROM zbatch b WHERE (SELECT count(*) FROM zitem i WHERE i.zbatch = b.z_pk) != 3")[0].decode(Int.self)
        state.orphanItems = try connection.query("SELECT count(*) FROM zitem WHERE zbatch IS NULL OR zbatch NOT IN (SELECT z_pk FROM zbatch)")[0].decode(Int.self)
        return state
    }

    @Test func savesSurviveKillsOfTheSavingProcessAtRandomMoments() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: ReliabilityTests.worker.path), "build the ReliabilityWorker helper (swift build) first")
        let database = PostgreSQLStoreTests.Database()
        let kills = Int(ProcessInfo.processInfo.environment["OPENCOREDATA_KILLS"] ?? "").map { max(1, $0 / 10) } ?? 20
        var generator = DifferentialTests.Generator(state: 2027)
        var reported: Set<Int64> = []
        var next: Int64 = 1
        for round in 0..<kills {
            let run = try ReliabilityTests.Run(["save-loop", database.url.absoluteString, String(next)])
            if round == 0 { try await run.firstSave() }
            try await Task.sleep(for: .microseconds(generator.int(0..<80_000)))
            await run.kill()
            #expect(run.process.terminationReason == .uncaughtSignal, "round \(round): the worker stopped on its own: \(run.errors)")
            reported.formUnion(run.savedNumbers)
            let state = try Self.inspect(database)
            #expect(reported.isSubset(of: state.numbers), "round \(round): saves that returned are missing: \(reported.subtracting(state.numbers).sorted().prefix(5))")
            #expect(state.incompleteBatches == 0 && state.orphanItems == 0, "round \(round): a save is half present")
            if !reported.isSubset(of: state.numbers) { break }
            next = (state.numbers.max() ?? 0) + 1
        }
        #expect(!reported.isEmpty)
        print("Reliability (PostgreSQL): \(kills) kills survived, \(reported.count) returned saves verified present")
    }

    @Test(arguments: ["objectTrump", "storeTrump", "overwrite", "rollback"])
    func fourProcessesOfFourContextsLoseNothing(_ policy: String) async throws {
        try #require(FileManager.default.isExecutableFile(atPath: ReliabilityTests.worker.path), "build the ReliabilityWorker helper (swift build) first")
        let database = PostgreSQLStoreTests.Database()
        // The store and the shared batch exist before the writers start.
        let creator = try ReliabilityTests.Run(["save-loop", database.url.absoluteString, "-1"])
        try await creator.firstSave()
        await creator.kill()
        let seconds = ProcessInfo.processInfo.environment["OPENCOREDATA_CONCURRENT_SECONDS"] ?? "2"
        let tags = ["a", "b", "c", "d"]
        let runs = try tags.map { try ReliabilityTests.Run(["concurrent", database.url.absoluteString, seconds, "4", $0, policy]) }
        var outputs: [[String]] = []
        for run in runs { outputs.append(await run.finish()) }
        var reported: [String: Int] = [:]
        var conflicts = 0
        for ((run, lines), tag) in zip(zip(runs, outputs), tags) {
            #expect(run.process.terminationStatus == 0, "\(run.errors)")
            let summary = try #require(lines.last { $0.hasPrefix("saved ") }, "\(run.errors)")
            let fields = summary.split(separator: " ")
            #expect(fields.count == 6 && fields[3] == "0", "no error reaches the user: \(summary) \(run.errors)")
            reported[tag] = Int(fields[1]) ?? 0
            conflicts += fields.count == 6 ? Int(fields[5]) ?? 0 : 0
        }
        let state = try Self.inspect(database)
        #expect(state.incompleteBatches == 0 && state.orphanItems == 0)
        // The creator may save a few "loop" batches before it is killed; the writers' tags are a–d.
        #expect(state.tags.filter { tags.contains($0.key) } == reported.filter { $0.value > 0 }, "every save reported is stored, once")
        #expect(reported.values.allSatisfy { $0 > 0 })
        #expect(conflicts > 0, "the shared batch's renames conflict, and the policy resolves them")
        if policy != "rollback" && policy != "storeTrump" {
            #expect(tags.contains { state.sharedTag?.hasPrefix("\($0)-") == true }, "the shared batch holds a writer's rename: \(state.sharedTag ?? "nil")")
        }
        print("Reliability (PostgreSQL, \(policy)): 4 processes × 4 contexts saved \(reported.values.reduce(0, +)) batches, all present, no errors, \(conflicts) conflicts resolved")
    }
}
