import Foundation
import GRDB

/// A read transaction held open on a connection of its own: the store file as it was when the
/// transaction began, whatever is committed since (what a context pinned to a query generation
/// reads; see `QueryGeneration`).
///
/// SQLite in WAL mode keeps the pages a reader needs until its transaction ends, so while a
/// snapshot lives the write-ahead log can't be checkpointed past it and grows with every save.
/// Unchecked Sendable: the connection is a GRDB queue, which serializes its use.
final class SQLiteReadSnapshot: @unchecked Sendable {
    private let connection: DatabaseQueue

    /// Opens a read-only connection to the file and begins its transaction with a first read.
    init(path: String, configuration: Configuration) throws {
        var configuration = configuration
        configuration.readonly = true
        // The transaction outlives each access: that is the point.
        configuration.allowsUnsafeTransactions = true
        configuration.label = "OpenCoreData.SQLiteReadSnapshot"
        connection = try DatabaseQueue(path: path, configuration: configuration)
        try connection.inDatabase { db in
            try db.execute(sql: "BEGIN DEFERRED TRANSACTION")
            // A deferred transaction takes its snapshot at its first read.
            _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master")
        }
    }

    /// Runs a read inside the held transaction.
    func read<T>(_ body: (Database) throws -> T) throws -> T {
        try connection.inDatabase(body)
    }

    deinit {
        try? connection.inDatabase { db in try db.execute(sql: "ROLLBACK") }
        try? connection.close()
    }
}

extension SQLiteStore: SnapshotReadingStore {
    /// A snapshot of the store file as it is now; nil for a store in memory, a read-only store and
    /// a file not in WAL mode (the journal modes in which a reader can't hold a past state).
    func makeReadSnapshot() throws -> AnyObject? {
        guard let url, !isReadOnly, !StoreFiles.isInMemorySQLite(url) else { return nil }
        let mode = try read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") }
        guard mode?.lowercased() == "wal" else { return nil }
        do {
            return try SQLiteReadSnapshot(path: url.path, configuration: connectionConfiguration(walUnlessAsked: false))
        } catch {
            throw Self.translate(error, url: url, during: .reading)
        }
    }
}
