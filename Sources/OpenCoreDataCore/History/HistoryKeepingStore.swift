import Foundation

/// A store that can record persistent history (the SQLite store, a server store): what the
/// coordinator asks of it for tokens and history requests.
protocol HistoryKeepingStore: NSPersistentStore {
    /// The number of the store's newest history transaction (0 before the first), or nil when
    /// the store records no history.
    func newestHistoryTransactionNumber() throws -> Int64?
    /// Runs a history fetch or purge on this store: the transactions fetched, or how many were deleted.
    func executeHistory(_ request: NSPersistentHistoryChangeRequest) throws -> (transactions: [NSPersistentHistoryTransaction], deleted: Int)
}
