import Foundation

/// What a persistent history request returns.
public enum NSPersistentHistoryResultType: Int, Sendable {
    /// `true` when the request succeeded.
    case statusOnly = 0
    /// The changed objects' IDs, `[NSManagedObjectID]` (for deletes: nothing, `true`).
    case objectIDs = 1
    /// The number of changes fetched, `Int` (for a delete request: the transactions deleted).
    case count = 2
    /// The transactions, `[NSPersistentHistoryTransaction]`, without their changes.
    case transactionsOnly = 3
    /// The changes, `[NSPersistentHistoryChange]`, each linked to its transaction.
    case changesOnly = 4
    /// The transactions, `[NSPersistentHistoryTransaction]`, with their changes.
    case transactionsAndChanges = 5
}

/// The result of executing an `NSPersistentHistoryChangeRequest`.
/// Unchecked Sendable: immutable; `result` holds a `Bool`, an `Int`, object IDs, transactions or changes.
open class NSPersistentHistoryResult: NSPersistentStoreResult, @unchecked Sendable {
    /// The result, as the request's `resultType` says.
    public let result: Any?
    /// The kind of result.
    public let resultType: NSPersistentHistoryResultType

    init(result: Any?, resultType: NSPersistentHistoryResultType) {
        self.result = result
        self.resultType = resultType
    }
}
