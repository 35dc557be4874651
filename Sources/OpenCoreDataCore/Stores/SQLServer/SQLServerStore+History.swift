import Foundation

/// Persistent history of a server store: tokens and history requests.
extension SQLServerStore: HistoryKeepingStore {
    func newestHistoryTransactionNumber() throws -> Int64? {
        guard history != nil else { return nil }
        return try withReadConnection { try SQLServerHistory.newestTransactionNumber($0) }
    }

    func executeHistory(_ request: NSPersistentHistoryChangeRequest) throws -> (transactions: [NSPersistentHistoryTransaction], deleted: Int) {
        guard let history else {
            throw CoreDataError.make(.unsupportedRequest,
                "The store \(locationDescription) does not track persistent history: add it with NSPersistentHistoryTrackingKey set to true.")
        }
        let storeID = identifier ?? ""
        if request.boundary.isDelete {
            return ([], try transaction { try history.delete(request.boundary, storeID: storeID, $0) })
        }
        let withChanges = request.needsChanges
        return (try transactions(after: request.boundary, withChanges: withChanges, history: history), 0)
    }

    /// The history transactions after a boundary, read in one transaction (a consistent view).
    func transactions(after boundary: NSPersistentHistoryChangeRequest.Boundary, withChanges: Bool = true,
                      history: SQLServerHistory) throws -> [NSPersistentHistoryTransaction] {
        let storeID = identifier ?? ""
        let ids = objectIDFactory
        return try transaction { connection in
            try history.fetch(boundary, storeID: storeID, withChanges: withChanges, connection) { entity, key in
                ids.objectID(for: entity, primaryKey: key)
            }
        }
    }
}
