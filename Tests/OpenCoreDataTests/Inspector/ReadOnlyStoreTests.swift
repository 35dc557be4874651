import Foundation
import OpenCoreData
import OpenCoreDataTestKit
import Testing

/// `ocd` reads stores copied off devices as people copy them: in directories it can't write, with
/// their `-wal` log but without the `-shm` index. Every committed row is seen, and nothing is
/// written beside the store. The binary runs as `nobody` when the tests run as root, since root
/// ignores permission bits.
@Suite("ocd on stores it can't write")
struct ReadOnlyStoreTests {
    /// A World Cup store with two saves, the second still only in its `-wal` log, copied into
    /// `directory` with the log and, when `withIndex`, the `-shm` index.
    static func copyBeforeCheckpoint(into directory: URL, withIndex: Bool) throws -> URL {
        let source = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: source) }
        let url = source.appendingPathComponent("WorldCup.sqlite")
        let model = try NSManagedObjectModel.load(contentsOf: URL(fileURLWithPath: Inspector.worldCupModel))
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        let store = try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url)
        let context = TestSupport.context(coordinator)
        for batch in [["Brazil", "Peru"], ["Chile", "Japan", "Ghana"]] {
            for name in batch {
                NSEntityDescription.insertNewObject(forEntityName: "Team", into: context).setValue(name, forKey: "teamName")
            }
            try context.save()
        }
        let copy = directory.appendingPathComponent("WorldCup.sqlite")
        for suffix in ["", "-wal"] + (withIndex ? ["-shm"] : []) {
            try FileManager.default.copyItem(atPath: url.path + suffix, toPath: copy.path + suffix)
        }
        try coordinator.remove(store)
        return copy
    }

    /// Makes `directory` and its files readable and searchable by everyone, writable by no one.
    static func makeReadOnly(_ directory: URL) throws {
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
            try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: directory.appendingPathComponent(name).path)
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: directory.path)
    }

    /// Runs `ocd` to completion as a user who can't write `directory` (nobody, when root).
    static func runAsReader(_ arguments: [String], output: URL) async throws -> ExecutableTests.Result {
        guard geteuid() == 0 else { return try await ExecutableTests.run(arguments, in: output) }
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: output.path)
        let setpriv = URL(fileURLWithPath: "/usr/bin/setpriv")
        let process = try ExecutableTests.start(["--reuid=65534", "--regid=65534", "--clear-groups", ExecutableTests.binary.path] + arguments,
                                                in: output, binary: setpriv)
        await process.exited()
        return ExecutableTests.Result(status: process.terminationStatus, output: ExecutableTests.read(output, "out", of: "setpriv"),
                                      errors: ExecutableTests.read(output, "err", of: "setpriv"))
    }

    /// `ocd watch` on the World Cup store's teams for a moment, as the reader.
    static func watchTeams(_ store: URL, output: URL) async throws -> ExecutableTests.Result {
        try await runAsReader(["watch", store.path, "--model", Inspector.worldCupModel, "--entity", "Team", "--timeout", "0.3"], output: output)
    }

    /// A fresh directory for a store and one for `ocd`'s output; the store's is made writable
    /// again and both are removed by the returned closure.
    static func directories() throws -> (store: URL, output: URL, cleanUp: () -> Void) {
        let parent = TestSupport.temporaryDirectory()
        let store = parent.appendingPathComponent("store"), output = parent.appendingPathComponent("output")
        for directory in [store, output] { try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true) }
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: parent.path)
        return (store, output, {
            try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: store.path)
            try? FileManager.default.removeItem(at: parent)
        })
    }

    @Test("a -wal without its -shm, in a read-only directory: info and fetch see every row and add no file",
          arguments: [false, true])
    func logWithoutIndex(readOnlyDirectory: Bool) async throws {
        try #require(FileManager.default.isExecutableFile(atPath: ExecutableTests.binary.path), "build the ocd product first")
        let (directory, output, cleanUp) = try Self.directories()
        defer { cleanUp() }
        let store = try Self.copyBeforeCheckpoint(into: directory, withIndex: false)
        if readOnlyDirectory { try Self.makeReadOnly(directory) }
        let before = try Inspector.listing(directory)
        #expect(before == ["WorldCup.sqlite", "WorldCup.sqlite-wal"])

        let info = try await Self.runAsReader(["info", store.path, "--json"], output: output)
        #expect(info.status == 0, "\(info.errors)")
        let entities = try #require(try Inspector.json(info.output) as? [String: Any])["entities"] as? [[String: Any]]
        #expect(entities?.first { $0["name"] as? String == "Team" }?["rows"] as? Int == 5, "\(info.output)")

        let fetch = try await Self.runAsReader(["fetch", store.path, "--model", Inspector.worldCupModel, "--entity", "Team",
                                                "--sort", "teamName"], output: output)
        #expect(fetch.status == 0, "\(fetch.errors)")
        #expect(["Brazil", "Chile", "Ghana", "Japan", "Peru"].allSatisfy(fetch.output.contains), "\(fetch.output)")
        #expect(try Inspector.listing(directory) == before)
    }

    @Test("a -wal with its -shm, in a read-only directory: info and watch read the store")
    func logWithIndex() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: ExecutableTests.binary.path), "build the ocd product first")
        let (directory, output, cleanUp) = try Self.directories()
        defer { cleanUp() }
        let store = try Self.copyBeforeCheckpoint(into: directory, withIndex: true)
        try Self.makeReadOnly(directory)
        let before = try Inspector.listing(directory)

        let info = try await Self.runAsReader(["info", store.path], output: output)
        #expect(info.status == 0, "\(info.errors)")
        let watch = try await Self.watchTeams(store, output: output)
        #expect(watch.status == 0, "\(watch.errors)")
        #expect(watch.errors.contains("(Team: 5 objects)"), "\(watch.errors)")
        #expect(try Inspector.listing(directory) == before)
    }

    @Test("a WAL-mode store without side files, in a read-only directory: info without a model and watch read it")
    func walModeWithoutSideFiles() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: ExecutableTests.binary.path), "build the ocd product first")
        let (directory, output, cleanUp) = try Self.directories()
        defer { cleanUp() }
        let store = try Inspector.makeWorldCupStore(in: directory, teams: [("Brazil", "South America", 5), ("Peru", "South America", 2)])
        try Self.makeReadOnly(directory)
        let before = try Inspector.listing(directory)
        #expect(before == ["WorldCup.sqlite"])

        let info = try await Self.runAsReader(["info", store.path], output: output)
        #expect(info.status == 0, "\(info.errors)")
        #expect(info.output.contains("Team"), "\(info.output)")
        let watch = try await Self.watchTeams(store, output: output)
        #expect(watch.status == 0, "\(watch.errors)")
        #expect(watch.errors.contains("(Team: 2 objects)"), "\(watch.errors)")
        #expect(try Inspector.listing(directory) == before)
    }
}
