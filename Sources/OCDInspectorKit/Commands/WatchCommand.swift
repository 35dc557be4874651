import ArgumentParser
import Dispatch
import Foundation
import GRDB
import OpenCoreData

/// `ocd watch <store> --model M [--entity E]`: prints each object another process inserts,
/// updates or deletes, as its save commits.
struct WatchCommand: InspectorCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print the objects other processes insert, update and delete, as they save.",
        discussion: """
            The store is read over a read-only connection; SQLite's data_version tells when \
            another connection committed. A store that records persistent history \
            (NSPersistentHistoryTrackingKey) gives every change, in the order it was committed. \
            Otherwise the rows (Z_PK, Z_OPT and attributes) are compared with the previous \
            reading, so changes that cancel out between two checks are not seen. Stop with Ctrl-C.
            """
    )

    @OptionGroup var options: StoreAndModelOptions

    @Option(help: "Watch only this entity (and its subentities).")
    var entity: String?

    @Option(help: "Seconds between checks.")
    var interval: Double = 0.2

    @Option(help: "Stop after printing this many changes.")
    var stopAfter: Int?

    @Option(help: "Stop after this many seconds.")
    var timeout: Double?

    @Flag(help: "Print one JSON object per line.")
    var json = false

    func validate() throws {
        if interval <= 0 { throw ValidationError("--interval must be more than 0") }
        if let stopAfter, stopAfter < 1 { throw ValidationError("--stop-after must be 1 or more") }
    }

    func execute(on console: Console) throws {
        let loaded = try options.loadModel()
        let watched = try entity.map { [try ModelFile.entity(named: $0, in: loaded)] } ?? loaded.entities.filter { $0.superentity == nil }
        let url = options.storeURL
        guard FileManager.default.fileExists(atPath: url.path) else { throw InspectorError.noSuchFile(url, what: "store") }
        // Reading the metadata checks that the file is a Core Data SQLite store (134000 otherwise).
        let metadata = try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: NSSQLiteStoreType, at: url)
        let stop = StopSignal.installed()
        defer { stop.uninstall() }

        try ReadOnlyDatabase.with(url, label: "ocd.watch") { database in
            let hasHistory = try database.read { db in try db.tableExists("ATRANSACTION") && db.tableExists("ACHANGE") }
            let stack = hasHistory ? try StoreStack.openReadOnly(url, model: loaded, readsHistory: true) : nil
            defer { stack?.close() }
            try watch(database, history: stack, url: url, entities: watched, storeUUID: metadata[NSStoreUUIDKey] as? String ?? "", stop: stop, console: console)
        }
    }

    /// Prints the changes of each commit of another connection until stopped: from the store's
    /// history when `history` is a stack reading it, else by comparing rows.
    private func watch(_ database: DatabaseQueue, history: StoreStack?, url: URL, entities watched: [NSEntityDescription], storeUUID: String,
                       stop: StopSignal, console: Console) throws {
        let reader = try database.read { db in try StoreSnapshotReader(db, entities: watched, storeUUID: storeUUID) }
        var (version, snapshot) = try database.read { db in (try Self.dataVersion(db), try reader.read(db)) }
        var historyChanges = history.map { HistoryChanges(stack: $0, watching: watched, snapshot: snapshot) }
        console.writeError("watching \(url.path) (\(watched.compactMap(\.name).joined(separator: ", ")): \(snapshot.rows.count) objects); Ctrl-C stops\n")
        if historyChanges == nil {
            console.writeError("the store records no persistent history: changes are found by comparing rows, so changes that cancel out between two checks are not seen\n")
        }

        let deadline = timeout.map { Date().addingTimeInterval($0) }
        var printed = 0
        while !stop.isSet, deadline.map({ Date() < $0 }) ?? true {
            Thread.sleep(forTimeInterval: interval)
            let newVersion = try database.read { db in try Self.dataVersion(db) }
            guard newVersion != version else { continue }
            // The history first, then the rows: every change fetched is in the rows read (or
            // superseded there), and one committed in between is fetched on the next round.
            let transactions = try historyChanges?.fetchNew()
            let newSnapshot = try database.read { db in try reader.read(db) }
            let changes: [StoreChange]
            if let transactions, let fromHistory = historyChanges?.changes(in: transactions, rows: newSnapshot) {
                changes = fromHistory
            } else {
                changes = newSnapshot.changes(since: snapshot)
            }
            for change in changes {
                console.line(json ? Self.compact(change.json) : change.text)
                printed += 1
                if let stopAfter, printed >= stopAfter { return }
            }
            (version, snapshot) = (newVersion, newSnapshot)
        }
    }

    /// SQLite's counter of commits made by other connections.
    private static func dataVersion(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db, sql: "PRAGMA data_version") ?? 0
    }

    private static func compact(_ value: JSONValue) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(value)) ?? Data(), as: UTF8.self)
    }
}

/// Turns Ctrl-C (SIGINT) and SIGTERM into a flag, so that `watch` can close the store and tidy
/// its side files before exiting.
/// Unchecked Sendable: `set` is guarded by `lock`; `sources` is written only in `installed()`.
final class StopSignal: @unchecked Sendable {
    private let lock = NSLock()
    private var set = false
    private var sources: [DispatchSourceSignal] = []

    /// Whether a stop signal arrived.
    var isSet: Bool { lock.withLock { set } }

    /// Starts catching SIGINT and SIGTERM.
    static func installed() -> StopSignal {
        let stop = StopSignal()
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [stop] in stop.lock.withLock { stop.set = true } }
            source.resume()
            stop.sources.append(source)
        }
        return stop
    }

    /// Restores the default handling.
    func uninstall() {
        for source in sources { source.cancel() }
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
    }
}
