import Foundation

/// Persistent history requests and the stores' history and remote-change options.
extension NSPersistentStoreCoordinator {
    /// Whether any store records persistent history (saves then collect which properties changed).
    var tracksPersistentHistory: Bool {
        persistentStores.contains { $0.tracksHistory }
    }

    /// A token marking the newest history transaction of each of `stores` (nil or empty: every
    /// store of the coordinator) that records persistent history. Fetching history after it
    /// returns only what later saves and batch requests record. Nil when none of the stores
    /// records history, or when one of them can't be read.
    public func currentPersistentHistoryToken(fromStores stores: [Any]?) -> NSPersistentHistoryToken? {
        withLock {
            let chosen = stores.flatMap { $0.isEmpty ? nil : $0.compactMap { $0 as? NSPersistentStore } } ?? persistentStores
            var numbers: [String: Int64] = [:]
            for case let store as any HistoryKeepingStore in chosen {
                guard let identifier = store.identifier else { continue }
                do {
                    if let number = try store.newestHistoryTransactionNumber() { numbers[identifier] = number }
                } catch {
                    return nil
                }
            }
            return numbers.isEmpty ? nil : NSPersistentHistoryToken(transactionNumbers: numbers)
        }
    }

    /// Runs a history fetch or purge on the affected stores that track history.
    func executeHistory(_ request: NSPersistentHistoryChangeRequest) throws -> NSPersistentHistoryResult {
        try withLock {
            let stores = (request.affectedStores ?? persistentStores).compactMap { $0 as? any HistoryKeepingStore }
            guard !stores.isEmpty else {
                throw CoreDataError.make(.unsupportedRequest, "Persistent history needs a SQLite or PostgreSQL store added with NSPersistentHistoryTrackingKey set to true.")
            }
            let filter = request.boundary.isDelete ? nil : try HistoryFetchFilter(request)
            var transactions: [NSPersistentHistoryTransaction] = []
            var deleted = 0
            for store in stores {
                let outcome = try store.executeHistory(request)
                transactions += outcome.transactions
                deleted += outcome.deleted
            }
            if stores.count > 1 {
                transactions.sort { ($0.timestamp, $0.transactionNumber) < ($1.timestamp, $1.transactionNumber) }
            }
            if request.boundary.isDelete {
                return NSPersistentHistoryResult(result: request.resultType == .count ? deleted : true, resultType: request.resultType)
            }
            if let filter { transactions = filter.apply(to: transactions) }
            let result: Any
            switch request.resultType {
            case .statusOnly: result = true
            case .count: result = transactions.reduce(0) { $0 + ($1.changes?.count ?? 0) }
            case .transactionsOnly:
                // The stores read the changes when a fetch request may look at them.
                for transaction in transactions { transaction.changes = nil }
                result = transactions
            case .transactionsAndChanges: result = transactions
            case .objectIDs: result = transactions.flatMap { $0.changes ?? [] }.map(\.changedObjectID)
            case .changesOnly:
                // Each change keeps its transaction; the transaction stops listing the changes.
                var changes: [NSPersistentHistoryChange] = []
                for transaction in transactions {
                    for change in transaction.changes ?? [] { change.ownedTransaction = transaction }
                    changes += transaction.changes ?? []
                    transaction.changes = nil
                }
                result = changes
            }
            return NSPersistentHistoryResult(result: result, resultType: request.resultType)
        }
    }
}
