import Foundation
import OpenCoreDataTestKit
import Testing
import WorldCupKit
import WorldCupWebKit

/// A temporary directory, removed by `remove()`.
struct TemporaryDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("worldcup-web-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func remove() {
        try? FileManager.default.removeItem(at: url)
    }
}

/// Collects a table's messages as they arrive, so a test can wait for them with a deadline.
actor MessageCollector {
    private(set) var messages: [TableMessage] = []
    private var task: Task<Void, Never>?

    init(_ stream: AsyncStream<TableMessage>) {
        task = nil
        Task { await self.start(stream) }
    }

    private func start(_ stream: AsyncStream<TableMessage>) {
        task = Task {
            for await message in stream { self.append(message) }
        }
    }

    private func append(_ message: TableMessage) {
        messages.append(message)
    }

    /// Waits until at least `count` messages arrived (at most `seconds`), then returns them all.
    func waitFor(_ count: Int, seconds: Double = patience) async throws -> [TableMessage] {
        if try await !eventually(within: seconds, { messages.count >= count }) {
            Issue.record("waited \(seconds) s for \(count) messages; got \(messages.count)")
        }
        return messages
    }

    func stop() {
        task?.cancel()
    }
}

extension TableSection {
    /// "Zone: A (1), B (0)" for failure messages and comparisons.
    var summary: String { "\(name): " + rows.map { "\($0.name) (\($0.wins))" }.joined(separator: ", ") }
}

extension LiveTeamTable {
    /// The ID of a team by name, from the current table.
    func id(of name: String) async throws -> String {
        try #require(await currentSections().flatMap(\.rows).first { $0.name == name }?.id, "no team named \(name)")
    }
}

/// The terminal `worldcup` program, run as another process on a store.
enum TerminalWorldCup {
    /// The executable built next to the test bundle.
    static let url = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent("worldcup")

    static var isBuilt: Bool { FileManager.default.isExecutableFile(atPath: url.path) }

    /// Runs the program on a store with these command lines (then `quit`); returns its exit status.
    static func run(store: URL, commands: [String]) async throws -> Int32 {
        let terminal = Process()
        terminal.executableURL = url
        terminal.arguments = ["--store", store.path]
        let input = Pipe()
        terminal.standardInput = input
        terminal.standardOutput = FileHandle.nullDevice
        try terminal.run()
        input.fileHandleForWriting.write(Data((commands + ["quit"]).map { $0 + "\n" }.joined().utf8))
        try input.fileHandleForWriting.close()
        await terminal.exited()
        return terminal.terminationStatus
    }
}
