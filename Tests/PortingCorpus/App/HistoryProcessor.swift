//
//  HistoryProcessor.swift
//  Kennel
//
//  Persistent history processing as apps with an importer or an extension write it: fetch the
//  transactions other authors saved since the last token, merge them into the view context, keep
//  the newest token in a file with NSKeyedArchiver, as Apple's sample code does, so the next
//  launch resumes where this one stopped.
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
    let tokenFile: URL?

    private(set) var lastHistoryToken: NSPersistentHistoryToken? = nil {
        didSet {
            guard let token = lastHistoryToken, let tokenFile = tokenFile,
                let data = try? NSKeyedArchiver.archivedData(withRootObject: token, requiringSecureCoding: true) else { return }
            do {
                try data.write(to: tokenFile)
            } catch {
                print("Failed to write token data. Error = \(error)")
            }
        }
    }

    init(container: NSPersistentContainer, appTransactionAuthorName: String, tokenFile: URL? = nil) {
        self.container = container
        self.appTransactionAuthorName = appTransactionAuthorName
        self.tokenFile = tokenFile
        // Load the last token from the token file.
        if let tokenFile = tokenFile, let tokenData = try? Data(contentsOf: tokenFile) {
            do {
                lastHistoryToken = try NSKeyedUnarchiver.unarchivedObject(ofClass: NSPersistentHistoryToken.self, from: tokenData)
            } catch {
                print("Failed to unarchive NSPersistentHistoryToken. Error = \(error)")
            }
        }
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
