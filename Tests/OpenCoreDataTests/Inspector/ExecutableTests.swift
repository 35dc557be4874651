import Foundation
import OpenCoreDataTestKit
import Testing

/// Runs the built `ocd` binary as a subprocess: exit statuses, standard error and signals.
@Suite("ocd executable")
struct ExecutableTests {
    /// The `ocd` binary beside the test bundle in the build folder.
    static let binary = TestSupport.builtExecutable("ocd")

    struct Result {
        let status: Int32
        let output: String
        let errors: String
    }

    /// Runs `ocd` (or another of the package's executables) to completion, with standard output
    /// and error in files under `directory`.
    static func run(_ arguments: [String], in directory: URL, binary: URL = binary) async throws -> Result {
        let process = try start(arguments, in: directory, binary: binary)
        await process.exited()
        let name = binary.lastPathComponent
        return Result(status: process.terminationStatus, output: read(directory, "out", of: name), errors: read(directory, "err", of: name))
    }

    static func start(_ arguments: [String], in directory: URL, binary: URL = binary) throws -> Process {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        for stream in ["out", "err"] {
            let url = directory.appendingPathComponent("\(binary.lastPathComponent).\(stream)")
            _ = FileManager.default.createFile(atPath: url.path, contents: nil)
            let handle = try FileHandle(forWritingTo: url)
            if stream == "out" { process.standardOutput = handle } else { process.standardError = handle }
        }
        try process.run()
        return process
    }

    static func read(_ directory: URL, _ stream: String, of name: String = "ocd") -> String {
        (try? String(contentsOf: directory.appendingPathComponent("\(name).\(stream)"), encoding: .utf8)) ?? ""
    }

    @Test("exit 0 and results on standard output; exit 1 and one line on standard error for a failure")
    func statuses() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.binary.path), "build the ocd product first")
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try Inspector.copyFailedBanksStore(into: directory)
        let before = try Data(contentsOf: store)

        let info = try await Self.run(["info", store.path, "--json"], in: directory)
        #expect(info.status == 0)
        #expect(info.errors.isEmpty)
        #expect(info.output.contains("\"FailedBankInfo\""))

        let missing = try await Self.run(["info", directory.appendingPathComponent("none.sqlite").path], in: directory)
        #expect(missing.status == 1)
        #expect(missing.output.isEmpty)
        #expect(missing.errors == "ocd: error: no store at \(directory.appendingPathComponent("none.sqlite").path) (Core Data error 260)\n")

        let notSQLite = try await Self.run(["fetch", Inspector.fixture("failedbanks/banklist.csv"), "--model", Inspector.worldCupModel, "--entity", "Team"], in: directory)
        #expect(notSQLite.status == 1)
        #expect(notSQLite.errors.hasSuffix("(Core Data error 134000)\n"))
        #expect(notSQLite.errors.filter { $0 == "\n" }.count == 1)

        let usage = try await Self.run(["frobnicate"], in: directory)
        #expect(usage.status == 64)
        #expect(usage.errors.hasPrefix("ocd: error: "))
        #expect(usage.errors.filter { $0 == "\n" }.count == 1)

        let help = try await Self.run(["--help"], in: directory)
        #expect(help.status == 0)
        #expect(help.output.contains("fetch"))

        #expect(try Data(contentsOf: store) == before)
        #expect(try Inspector.listing(directory) == ["FailedBanksCD.sqlite", "ocd.err", "ocd.out"])
    }

    @Test("ocd import without a terminal prints progress lines, not a bar")
    func importProgressLines() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.binary.path), "build the ocd product first")
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = directory.appendingPathComponent("WorldCup.sqlite")
        let result = try await Self.run(["import", store.path, "--model", Inspector.worldCupModel, "--entity", "Team", Inspector.fixture("worldcup/seed.json")], in: directory)
        #expect(result.status == 0)
        #expect(!result.errors.contains("\r"))
        #expect(result.errors.split(separator: "\n").last == "importing: 32/32")
        #expect(result.output == "Imported 32 Team objects into \(store.path)\n")
    }

    @Test("ocd watch in another process sees a save, and Ctrl-C ends it cleanly")
    func watchProcess() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.binary.path), "build the ocd product first")
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try Inspector.makeWorldCupStore(in: directory, teams: [("Brazil", "South America", 5)])
        // The test ends the watch with Ctrl-C; the timeout only bounds a process left behind. (At
        // 300 s, a loaded full run saw it end on its own before the save was read.)
        let process = try Self.start(["watch", store.path, "--model", Inspector.worldCupModel, "--json", "--interval", "0.05", "--timeout", "3600"], in: directory)
        defer { if process.isRunning { process.terminate() } }
        let seen = { "running: \(process.isRunning)\(process.isRunning ? "" : ", status \(process.terminationStatus)"), standard error: \(Self.read(directory, "err")), output: \(Self.read(directory, "out"))" }
        try await WatchWaiting.until({ Self.read(directory, "err").contains("watching") }, state: seen)

        let writer = try WorldCupWriter(store)
        try writer.setWins(of: "Brazil", to: 7)
        try await WatchWaiting.until({ Self.read(directory, "out").contains("\n") }, state: seen)
        process.interrupt()
        await process.exited()
        writer.close()

        #expect(process.terminationStatus == 0)
        let change = try #require(try Inspector.json(Self.read(directory, "out")) as? [String: Any])
        #expect(change["change"] as? String == "update")
        #expect(change["entity"] as? String == "Team")
        let wins = (change["changes"] as? [String: Any])?["wins"] as? [String: Any]
        #expect((wins?["old"] as? NSNumber)?.intValue == 5)
        #expect((wins?["new"] as? NSNumber)?.intValue == 7)
        #expect(try Inspector.listing(directory) == ["WorldCup.sqlite", "ocd.err", "ocd.out"])
    }
}
