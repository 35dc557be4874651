import Foundation

/// The changes one save or one batch request committed to a store, as persistent history keeps them.
/// Unchecked Sendable: `changes` is filled in while the result is built, then never changed.
open class NSPersistentHistoryTransaction: NSObject, @unchecked Sendable {
    /// When the transaction was committed.
    public let timestamp: Date
    /// The objects it inserted, updated and deleted (nil when the request asked for transactions only).
    public internal(set) var changes: [NSPersistentHistoryChange]?
    /// The transaction's number, increasing with time within its store.
    public let transactionNumber: Int64
    /// The identifier (`NSStoreUUID`) of the store the transaction was committed to.
    public let storeID: String
    /// The bundle identifier of the process that committed it (its executable's name when it has none).
    public let bundleID: String
    /// The process that committed it, as its process identifier in decimal.
    public let processID: String
    /// The `name` of the context that saved, if it had one.
    public let contextName: String?
    /// The `transactionAuthor` of the context that saved or ran the batch request, if set.
    public let author: String?
    /// The bookmark just after this transaction, for `fetchHistory(after:)`.
    public let token: NSPersistentHistoryToken

    init(transactionNumber: Int64, storeID: String, timestamp: Date, bundleID: String, processID: String,
         contextName: String?, author: String?) {
        self.transactionNumber = transactionNumber
        self.storeID = storeID
        self.timestamp = timestamp
        self.bundleID = bundleID
        self.processID = processID
        self.contextName = contextName
        self.author = author
        self.token = NSPersistentHistoryToken(transactionNumbers: [storeID: transactionNumber])
    }

    /// A `NSManagedObjectContextDidSaveObjectIDsNotification` carrying the transaction's inserted,
    /// updated and deleted object IDs; pass it to `mergeChanges(fromContextDidSave:)`.
    public func objectIDNotification() -> Notification {
        var inserted = Set<NSManagedObjectID>()
        var updated = Set<NSManagedObjectID>()
        var deleted = Set<NSManagedObjectID>()
        for change in changes ?? [] {
            switch change.changeType {
            case .insert: inserted.insert(change.changedObjectID)
            case .update: updated.insert(change.changedObjectID)
            case .delete: deleted.insert(change.changedObjectID)
            }
        }
        // An object inserted and changed again in the same transaction is only an insert.
        updated.subtract(inserted)
        updated.subtract(deleted)
        return Notification(name: NSManagedObjectContext.didSaveObjectIDsNotification, object: nil, userInfo: [
            NSInsertedObjectIDsKey: inserted,
            NSUpdatedObjectIDsKey: updated,
            NSDeletedObjectIDsKey: deleted,
        ])
    }

    /// The transaction, for logs.
    open override var description: String {
        "<NSPersistentHistoryTransaction \(transactionNumber) store \(storeID) author \(author ?? "nil") context \(contextName ?? "nil"), \(changes?.count ?? 0) changes>"
    }
}
