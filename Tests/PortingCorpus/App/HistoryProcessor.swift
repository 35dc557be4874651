//
//  HistoryProcessor.swift
//  Kennel
//
//  Persistent history processing as apps with an importer or an extension write it: fetch the
//  transactions other authors saved since the last token, merge them into the view context, keep
//  the newest token.
//

import Foundation
#if canImport(CoreData)
import CoreData
#else
import OpenCoreData
#endif

class HistoryProcessor {

    let container: NSPersistentContainer
    let appTransactionAuthorName: String
    private(set) var lastHistoryToken: NSPersistentHistoryToken?

    init(container: NSPersistentContainer, appTransactionAuthorName: String) {
        self.container = container
        self.appTransactionAuthorName = appTransactionAuthorName
    }

    /// Merges what other authors saved since the last call into the view context, and returns
    /// their transactions.
    @discardableResult
    func processPersistentHistory() -> [NSPersistentHistoryTransaction] {
        let taskContext = container.newBackgroundContext()
        var transactions: [NSPersistentHistoryTransaction] = []
        taskContext.performAndWait {
            // Leave out our own saves: the view context has them already.
            let historyFetchRequest = NSPersistentHistoryTransaction.fetchRequest!
            historyFetchRequest.predicate = NSPredicate(format: "author != %@", appTransactionAuthorName)
            let request = NSPersistentHistoryChangeRequest.fetchHistory(after: lastHistoryToken)
            request.fetchRequest = historyFetchRequest

            let result = (try? taskContext.execute(request)) as? NSPersistentHistoryResult
            guard let history = result?.result as? [NSPersistentHistoryTransaction], !history.isEmpty else {
                return
            }
            transactions = history
        }
        guard let lastToken = transactions.last?.token else { return [] }

        let viewContext = container.viewContext
        viewContext.performAndWait {
            for transaction in transactions {
                viewContext.mergeChanges(fromContextDidSave: transaction.objectIDNotification())
            }
        }
        lastHistoryToken = lastToken
        return transactions
    }
}
