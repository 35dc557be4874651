import Foundation
import GRDB
import OpenCoreData
import OpenCoreDataTestKit
import Testing

/// Stores in places that fight back: a directory the process may not write, and a disk that fills
/// up during a save. Each case runs in the worker process (Tests/ReliabilityWorker), which can
/// give up root (root ignores permission bits) and lower its file size limit without affecting
/// the test process; it reports each step's outcome as a line ("open error 513").
@Suite(.serialized) struct HostileEnvironmentTests {
    static let storeTypes = ["sqlite", "binary"]

    /// A store of `BatchModel` with three batches, closed, alone in a new directory.
    static func makeStore(_ type: String, in directory: URL) throws -> URL {
        let url = directory.appendingPathComponent(type == "binary" ? "Batches.store" : "Batches.sqlite")
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: BatchModel.make())
        let store = try coordinator.addPersistentStore(ofType: Self.storeType(type), configurationName: nil, at: url, options: nil)
        let context = TestSupport.context(coordinator)
        for number in 1...3 { BatchModel.insertBatch(Int64(number), tag: "before", into: context) }
        try context.save()
        try coordinator.remove(store)
        return url
    }

    static func storeType(_ name: String) -> String { name == "binary" ? NSBinaryStoreType : NSSQLiteStoreType }

    /// Every file in a directory with its bytes.
    static func contents(of directory: URL) throws -> [String: Data] {
        var files: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
            files[name] = try Data(contentsOf: directory.appendingPathComponent(name))
        }
        return files
    }

    /// The worker's output lines for one case.
    static func runWorker(_ arguments: [String]) async throws -> [String] {
        try #require(FileManager.default.isExecutableFile(atPath: ReliabilityTests.worker.path), "build the ReliabilityWorker helper (swift build) first")
        let run = try ReliabilityTests.Run(arguments)
        let lines = await run.finish()
        #expect(run.process.terminationStatus == 0, "the worker failed: \(lines) \(run.errors)")
        return lines
    }

    /// The batch numbers a store holds, read through the library with a fresh coordinator.
    static func batchNumbers(_ url: URL, _ type: String) throws -> [Int64] {
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: BatchModel.make())
        let store = try coordinator.addPersistentStore(ofType: storeType(type), configurationName: nil, at: url, options: [NSReadOnlyPersistentStoreOption: true])
        defer { try? coordinator.remove(store) }
        let request = NSFetchRequest<NSManagedObject>(entityName: "Batch")
        request.sortDescriptors = [NSSortDescriptor(key: "number", ascending: true)]
        return try TestSupport.context(coordinator).fetch(request).compactMap { $0.value(forKey: "number") as? Int64 }
    }

    @Test(arguments: storeTypes)
    func aDirectoryThatCannotBeWrittenGivesCoreDataErrorsAndKeepsTheFiles(_ type: String) async throws {
        let directory = TestSupport.temporaryDirectory()
        let url = try Self.makeStore(type, in: directory)
        let before = try Self.contents(of: directory)
        // Readable and searchable by everyone (the worker may run as nobody), writable by no one.
        try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: url.path)
        try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: directory.path)
        defer {
            try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory.path)
            try? FileManager.default.removeItem(at: directory)
        }
        let lines = try await Self.runWorker(["read-only-directory", url.path, type])
        #expect(lines.first != "user 0", "the worker gave up root")
        #expect(lines.contains("open error 513"), "opening for writing: NSFileWriteNoPermissionError: \(lines)")
        #expect(lines.contains("read-only-open ok 3"), "NSReadOnlyPersistentStoreOption reads the store: \(lines)")
        #expect(lines.contains("read-only-save error 134030"), "a save to a read-only store: NSPersistentStoreSaveError: \(lines)")
        #expect(lines.contains("pending 4"), "the context keeps its unsaved batch: \(lines)")
        #expect(try Self.contents(of: directory) == before, "every file is left as it was and none is added")
    }

    @Test(arguments: storeTypes)
    func aDiskThatFillsUpFailsTheSaveAndLeavesTheStoreAsItWas(_ type: String) async throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = try Self.makeStore(type, in: directory)
        let before = try Self.contents(of: directory)

        let failed = try await Self.runWorker(["full-disk", url.path, type, "once"])
        // SQLite reports a write stopped by the file size limit (EFBIG) as an I/O error; only
        // ENOSPC is SQLITE_FULL (see aSmallDiskFillsUp…). The binary store sees EFBIG itself.
        let expected = type == "sqlite" ? "save error 134180 sqlite 10" : "save error 640"
        #expect(failed.contains(expected), "\(failed)")
        #expect(failed.contains("pending 4 temporary yes"), "the context keeps its changes, with temporary IDs: \(failed)")
        #expect(try Self.batchNumbers(url, type) == [1, 2, 3], "all or nothing: the store holds what it held before")
        if type == "sqlite" {
            let integrity = try await DatabaseQueue(path: url.path).read { try String.fetchOne($0, sql: "PRAGMA integrity_check") }
            #expect(integrity == "ok")
        } else {
            #expect(try Self.contents(of: directory) == before, "the old file is kept and no temporary file is left")
        }

        let retried = try await Self.runWorker(["full-disk", url.path, type, "retry"])
        #expect(retried.contains("retry ok"), "once there is room, the same context saves: \(retried)")
        #expect(try Self.batchNumbers(url, type) == [1, 2, 3, 1000])
    }

    /// A real full disk (ENOSPC), on a 1 MB tmpfs; needs the right to mount (root here and on CI).
    @Test(arguments: storeTypes)
    func aSmallDiskFillsUpWithCoreDataErrors(_ type: String) async throws {
        let mountPoint = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: mountPoint) }
        guard geteuid() == 0, Self.run("/bin/mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", mountPoint.path]) else {
            print("HostileEnvironmentTests: can't mount a tmpfs here; the full disk is simulated with a file size limit only")
            return
        }
        defer { _ = Self.run("/bin/umount", [mountPoint.path]) }
        let url = try Self.makeStore(type, in: mountPoint)
        let lines = try await Self.runWorker(["full-disk", url.path, type, "once", "small-disk"])
        let expected = type == "sqlite" ? "save error 640 sqlite 13" : "save error 640"
        #expect(lines.contains(expected), "NSFileWriteOutOfSpaceError: \(lines)")
        #expect(lines.contains("pending 4 temporary yes"), "\(lines)")
        #expect(try Self.batchNumbers(url, type) == [1, 2, 3])
    }

    /// Runs a command; whether it succeeded.
    static func run(_ path: String, _ arguments: [String]) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }

    @Test func aStoreAddedReadOnlyRefusesSavesAndBatchRequests() throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = try Self.makeStore("sqlite", in: directory)
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: BatchModel.make())
        let store = try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url, options: [NSReadOnlyPersistentStoreOption: true])
        #expect(store.isReadOnly)
        let context = TestSupport.context(coordinator)
        BatchModel.insertBatch(4, tag: "refused", into: context)
        let saveError = try #require(throws: NSError.self) { try context.save() }
        #expect(saveError.code == NSPersistentStoreSaveError)
        #expect(context.insertedObjects.count == 4)
        let update = NSBatchUpdateRequest(entityName: "Batch")
        update.propertiesToUpdate = ["tag": "changed"]
        let batchError = try #require(throws: NSError.self) { try context.execute(update) }
        #expect(batchError.code == NSPersistentStoreSaveError)
        try coordinator.remove(store)
        #expect(try Self.batchNumbers(url, "sqlite") == [1, 2, 3])
    }
}
