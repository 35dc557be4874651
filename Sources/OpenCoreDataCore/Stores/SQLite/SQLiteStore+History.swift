import Foundation
import GRDB

/// Persistent history in the SQLite store: recording inside save and batch transactions, and the
/// history change requests.
extension SQLiteStore: HistoryKeepingStore {
    /// Whether the store was added with `NSPersistentHistoryTrackingKey` set to true.
    static func wantsHistory(_ options: [AnyHashable: Any]?) -> Bool {
        StoreOptions.flag(options?[NSPersistentHistoryTrackingKey])
    }

    /// Records a context save in the history, in the save's own transaction.
    func recordSave(_ changes: SaveChanges, permanentIDs: PermanentIDs, history: SQLiteHistory, _ db: Database) throws {
        let transaction = try history.beginTransaction(db, changes.author)
        for record in changes.inserted {
            let key = (permanentIDs[record.key] ?? record.key).primaryKey
            try history.recordChange(db, transaction: transaction, type: .insert, entity: record.entity, primaryKey: key)
        }
        for record in changes.updated {
            try history.recordChange(db, transaction: transaction, type: .update, entity: record.entity,
                                     primaryKey: record.objectID.primaryKey, updatedSlots: changes.changedSlots[record.objectID.key] ?? [])
        }
        for record in changes.deleted {
            try history.recordChange(db, transaction: transaction, type: .delete, entity: record.entity,
                                     primaryKey: record.objectID.primaryKey, values: record.values)
        }
    }

    /// Starts the history record of a batch request (nil when the store keeps no history).
    func beginBatchTransaction(_ author: TransactionAuthor, _ db: Database) throws -> Int64? {
        guard let history else { return nil }
        return try history.beginTransaction(db, author)
    }

    /// The number of this store's newest history transaction (0 before the first), or nil when
    /// the store does not record history.
    func newestHistoryTransactionNumber() throws -> Int64? {
        guard history != nil else { return nil }
        return try read { db in try SQLiteHistory.newestTransactionNumber(db) }
    }

    /// Runs a history fetch or purge on this store.
    func executeHistory(_ request: NSPersistentHistoryChangeRequest) throws -> (transactions: [NSPersistentHistoryTransaction], deleted: Int) {
        guard let history else {
            throw CoreDataError.make(.unsupportedRequest,
                "The store at \(url?.path ?? "?") does not track persistent history: add it with NSPersistentHistoryTrackingKey set to true.")
        }
        let storeID = identifier ?? ""
        if request.boundary.isDelete {
            guard !isReadOnly else { throw CoreDataError.make(.saveFailed, "The store at \(url?.path ?? "?") is read-only.") }
            var deleted = 0
            try write { db in deleted = try history.delete(request.boundary, storeID: storeID, db) }
            return ([], deleted)
        }
        let withChanges = request.needsChanges
        let transactions = try read { db in
            try history.fetch(request.boundary, storeID: storeID, withChanges: withChanges, db) { entity, key in
                self.objectID(for: entity, primaryKey: key)
            }
        }
        return (transactions, 0)
    }
}
