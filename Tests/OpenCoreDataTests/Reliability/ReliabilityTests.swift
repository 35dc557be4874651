import Foundation
import GRDB
import Testing

/// Proof that nothing is lost: a process saving in a loop is killed with SIGKILL at random
/// moments, and processes with several contexts each save to one store at once. The work is done
/// by `ReliabilityWorker` (Tests/ReliabilityWorker), a separate executable built with the tests.
@Suite(.serialized) struct ReliabilityTests {
    static var worker: URL {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent("ReliabilityWorker")
    }

    /// Runs the worker; its standard output lines are collected as they come.
    final class Run: @unchecked Sendable {
        let process = Process()
        private let output = Pipe()
        private let lock = NSLock()
        private var text = ""

        init(_ arguments: [String]) throws {
            process.executableURL = ReliabilityTests.worker
            process.arguments = arguments
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            output.fileHandleForReading.readabilityHandler = { [weak self] handle in
                let data = handle.availableData
                guard let self, !data.isEmpty else { return }
                self.lock.withLock { self.text += String(decoding: data, as: UTF8.self) }
            }
            try process.run()
        }

        var lines: [String] { lock.withLock { text.split(separator: "\n").map(String.init) } }

        /// Waits for the worker to exit and returns every line it wrote (the output handler may
        /// not have read the last of it yet when the process exits).
        func finish() -> [String] {
            process.waitUntilExit()
            output.fileHandleForReading.readabilityHandler = nil
            let rest = output.fileHandleForReading.readDataToEndOfFile()
            if !rest.isEmpty { lock.withLock { text += String(decoding: rest, as: UTF8.self) } }
            return lines
        }

        /// The numbers the worker reported saved (complete lines only).
        var savedNumbers: [Int64] {
            lock.withLock {
                let complete = text.hasSuffix("\n") ? Substring(text) : text[..<(text.lastIndex(of: "\n") ?? text.startIndex)]
                return complete.split(separator: "\n").compactMap { $0.hasPrefix("saved ") ? Int64($0.dropFirst(6)) : nil }
            }
        }

        func kill() {
            _ = Foundation.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// What the store holds, read with plain SQL after a crash.
    struct StoreState {
        var integrity = ""
        var numbers: Set<Int64> = []
        var incompleteBatches = 0
        var orphanItems = 0
    }

    static func inspect(_ url: URL) throws -> StoreState {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: url.path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read { db in
            var state = StoreState()
            state.integrity = try String.fetchOne(db, sql: "PRAGMA integrity_check") ?? ""
            state.numbers = Set(try Int64.fetchAll(db, sql: "SELECT ZNUMBER FROM ZBATCH"))
            state.incompleteBatches = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM ZBATCH b WHERE (SELECT COUNT(*) FROM ZITEM i WHERE i.ZBATCH = b.Z_PK) != 3") ?? -1
            state.orphanItems = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM ZITEM WHERE ZBATCH IS NULL OR ZBATCH NOT IN (SELECT Z_PK FROM ZBATCH)") ?? -1
            return state
        }
    }

    @Test func savesSurviveKillsAtRandomMoments() throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.worker.path), "build the ReliabilityWorker helper (swift build) first: \(Self.worker.path)")
        let url = TestSupport.temporaryDirectory().appendingPathComponent("Crash.sqlite")
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let kills = Int(ProcessInfo.processInfo.environment["OPENCOREDATA_KILLS"] ?? "") ?? 200
        var generator = DifferentialTests.Generator(state: 2026)
        var reported: Set<Int64> = []
        var next: Int64 = 1
        var verifiedSaves = 0
        for round in 0..<kills {
            let run = try Run(["save-loop", url.path, String(next)])
            if round == 0 {
                // The first run creates the store; it is killed only once that is done.
                let deadline = Date().addingTimeInterval(20)
                while run.savedNumbers.isEmpty && Date() < deadline { usleep(2_000) }
            }
            usleep(UInt32(generator.int(0..<60_000)))
            run.kill()
            #expect(run.process.terminationReason == .uncaughtSignal, "round \(round): the worker stopped on its own: \(run.lines.suffix(2))")
            reported.formUnion(run.savedNumbers)
            let state = try Self.inspect(url)
            #expect(state.integrity == "ok", "round \(round): \(state.integrity)")
            #expect(reported.isSubset(of: state.numbers), "round \(round): saves that returned are missing: \(reported.subtracting(state.numbers).sorted().prefix(5))")
            #expect(state.incompleteBatches == 0 && state.orphanItems == 0, "round \(round): a save is half present")
            if state.integrity != "ok" || !reported.isSubset(of: state.numbers) { break }
            verifiedSaves = reported.count
            next = (state.numbers.max() ?? 0) + 1
        }
        print("Reliability: \(kills) kills survived, \(verifiedSaves) returned saves verified present, \(reported.count == verifiedSaves ? 0 : reported.count - verifiedSaves) lost")
    }

    @Test func processesAndContextsSavingAtOnceLoseNothing() throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.worker.path), "build the ReliabilityWorker helper (swift build) first: \(Self.worker.path)")
        let url = TestSupport.temporaryDirectory().appendingPathComponent("Concurrent.sqlite")
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        // Create the store first, so both processes open an existing one.
        let creator = try Run(["save-loop", url.path, "-1"])
        let deadline = Date().addingTimeInterval(20)
        while creator.savedNumbers.isEmpty && Date() < deadline { usleep(2_000) }
        creator.kill()
        let seconds = ProcessInfo.processInfo.environment["OPENCOREDATA_CONCURRENT_SECONDS"] ?? "2"
        let runs = try ["a", "b"].map { try Run(["concurrent", url.path, seconds, "3", $0]) }
        let outputs = runs.map { $0.finish() }
        var reported = 0
        var conflicts = 0
        for (run, lines) in zip(runs, outputs) {
            #expect(run.process.terminationStatus == 0)
            let summary = try #require(lines.last { $0.hasPrefix("saved ") })
            let fields = summary.split(separator: " ")
            #expect(fields.count == 6 && fields[3] == "0", "no error reaches the user (no SQLITE_BUSY, conflicts resolved by the policy): \(summary)")
            reported += Int(fields[1]) ?? 0
            conflicts += fields.count == 6 ? Int(fields[5]) ?? 0 : 0
        }
        let state = try Self.inspect(url)
        #expect(state.integrity == "ok")
        #expect(state.incompleteBatches == 0 && state.orphanItems == 0)
        let stored = try DatabaseQueue(path: url.path).read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM ZBATCH WHERE ZTAG IN ('a', 'b')") ?? -1 }
        let shared = try DatabaseQueue(path: url.path).read { db in try String.fetchOne(db, sql: "SELECT ZTAG FROM ZBATCH WHERE ZNUMBER = -1") }
        #expect(shared?.hasPrefix("a-") == true || shared?.hasPrefix("b-") == true, "the shared batch holds one writer's last rename: \(shared ?? "nil")")
        #expect(stored == reported)
        #expect(reported > 0)
        #expect(conflicts > 0, "the shared batch's renames conflict, and the policy resolves them")
        print("Reliability: 2 processes × 3 contexts saved \(reported) batches concurrently, all present, no errors, \(conflicts) conflicts resolved by the merge policy")
    }
}
