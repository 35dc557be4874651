import Foundation
import OpenCoreData
import Testing

/// History requests narrowed by a fetch request on the history's own entities
/// (`NSPersistentHistoryTransaction.fetchRequest`, `NSPersistentHistoryChange.fetchRequest`), as
/// apps that merge other processes' changes write them.
@Suite struct HistoryFetchRequestTests {
    /// A history-tracking store with two contexts: "app" edits, "importer" imports.
    private struct Stack {
        let directory: URL
        let coordinator: NSPersistentStoreCoordinator
        let app: NSManagedObjectContext
        let importer: NSManagedObjectContext

        init() throws {
            directory = TestSupport.temporaryDirectory()
            coordinator = NSPersistentStoreCoordinator(managedObjectModel: PersistentHistoryTests.makeModel())
            try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil,
                                               at: directory.appendingPathComponent("History.sqlite"),
                                               options: PersistentHistoryTests.historyOptions)
            app = TestSupport.context(coordinator)
            app.transactionAuthor = "app"
            app.name = "viewContext"
            importer = TestSupport.context(coordinator)
            importer.transactionAuthor = "importer"
        }

        func run(_ request: NSPersistentHistoryChangeRequest) throws -> Any? {
            (try app.execute(request) as? NSPersistentHistoryResult)?.result
        }

        func folder(_ name: String, in context: NSManagedObjectContext) -> NSManagedObject {
            let folder = NSEntityDescription.insertNewObject(forEntityName: "Folder", into: context)
            folder.setValue(name, forKey: "name")
            return folder
        }
    }

    @Test func aTransactionFetchRequestKeepsOtherAuthorsTransactions() throws {
        let stack = try Stack()
        defer { try? FileManager.default.removeItem(at: stack.directory) }
        _ = PersistentHistoryTests.insertNote(stack.app, "mine")
        try stack.app.save()
        _ = PersistentHistoryTests.insertNote(stack.importer, "imported 1")
        _ = PersistentHistoryTests.insertNote(stack.importer, "imported 2")
        try stack.importer.save()
        _ = PersistentHistoryTests.insertNote(stack.app, "mine again")
        try stack.app.save()

        // The merge step of Apple's sample code, as written there.
        let historyFetchRequest = NSPersistentHistoryTransaction.fetchRequest!
        historyFetchRequest.predicate = NSPredicate(format: "author != %@", "app")
        let request = NSPersistentHistoryChangeRequest.fetchHistory(after: nil as NSPersistentHistoryToken?)
        request.fetchRequest = historyFetchRequest
        let transactions = try #require(try stack.run(request) as? [NSPersistentHistoryTransaction])
        #expect(transactions.map(\.author) == ["importer"])
        #expect(transactions.first?.changes?.count == 2, "a transaction kept whole, with every change")

        request.resultType = .count
        #expect(try stack.run(request) as? Int == 2, "the changes of the matching transactions")
        request.resultType = .transactionsOnly
        let bare = try #require(try stack.run(request) as? [NSPersistentHistoryTransaction])
        #expect(bare.count == 1 && bare[0].changes == nil)

        // Without the filter, the same bounds return all three.
        let all = try #require(try stack.run(NSPersistentHistoryChangeRequest.fetchHistory(after: nil as NSPersistentHistoryToken?)) as? [NSPersistentHistoryTransaction])
        #expect(all.map(\.author) == ["app", "importer", "app"])
        let byContext = NSPersistentHistoryTransaction.fetchRequest!
        byContext.predicate = NSPredicate(format: "contextName == %@ AND transactionNumber > %lld", "viewContext", all[0].transactionNumber)
        request.fetchRequest = byContext
        request.resultType = .transactionsAndChanges
        #expect((try stack.run(request) as? [NSPersistentHistoryTransaction])?.map(\.transactionNumber) == [all[2].transactionNumber])
    }

    @Test func aChangeFetchRequestKeepsTheChangesItMatches() throws {
        let stack = try Stack()
        defer { try? FileManager.default.removeItem(at: stack.directory) }
        let folder = stack.folder("inbox", in: stack.app)
        let doomed = PersistentHistoryTests.insertNote(stack.app, "doomed")
        let kept = PersistentHistoryTests.insertNote(stack.app, "kept")
        try stack.app.save()
        stack.app.delete(doomed)
        kept.setValue(Int64(3), forKey: "rank")
        try stack.app.save()

        let deletions = NSPersistentHistoryChange.fetchRequest!
        deletions.predicate = NSPredicate(format: "changeType == %d", NSPersistentHistoryChangeType.delete.rawValue)
        let request = NSPersistentHistoryChangeRequest.fetchHistory(after: nil as NSPersistentHistoryToken?)
        request.fetchRequest = deletions
        request.resultType = .changesOnly
        let changes = try #require(try stack.run(request) as? [NSPersistentHistoryChange])
        #expect(changes.map(\.changedObjectID) == [doomed.objectID])
        #expect(changes.first?.tombstone?["title"] as? String == "doomed")
        #expect(changes.first?.transaction?.author == "app", "a change handed out alone keeps its transaction")

        // By entity: the folder's insert only; transactions left without a match are dropped.
        let folders = NSPersistentHistoryChange.fetchRequest!
        folders.predicate = NSPredicate(format: "changedEntity == %@", folder.entity)
        request.fetchRequest = folders
        request.resultType = .transactionsAndChanges
        let transactions = try #require(try stack.run(request) as? [NSPersistentHistoryTransaction])
        #expect(transactions.count == 1)
        #expect(transactions.first?.changes?.map(\.changedObjectID) == [folder.objectID])
        folders.predicate = NSPredicate(format: "changedEntityName == 'Note' AND transaction.author == 'app'")
        request.resultType = .objectIDs
        #expect(Set(try stack.run(request) as? [NSManagedObjectID] ?? []) == [doomed.objectID, kept.objectID])
        request.resultType = .count
        #expect(try stack.run(request) as? Int == 4, "two inserts, then an update and a delete")
    }

    @Test func fetchHistoryWithFetchCoversTheWholeHistoryWithOrderAndLimit() throws {
        let stack = try Stack()
        defer { try? FileManager.default.removeItem(at: stack.directory) }
        for index in 0..<4 {
            _ = PersistentHistoryTests.insertNote(index.isMultiple(of: 2) ? stack.app : stack.importer, "note \(index)")
            try (index.isMultiple(of: 2) ? stack.app : stack.importer).save()
        }
        let newestFirst = NSPersistentHistoryTransaction.fetchRequest!
        newestFirst.sortDescriptors = [NSSortDescriptor(key: "transactionNumber", ascending: false)]
        newestFirst.fetchLimit = 2
        let request = NSPersistentHistoryChangeRequest.fetchHistory(withFetch: newestFirst)
        #expect(request.fetchRequest === newestFirst)
        let newest = try #require(try stack.run(request) as? [NSPersistentHistoryTransaction])
        #expect(newest.map(\.author) == ["importer", "app"])
        #expect(newest[0].transactionNumber > newest[1].transactionNumber)

        newestFirst.fetchOffset = 3
        #expect((try stack.run(request) as? [NSPersistentHistoryTransaction])?.map(\.author) == ["app"], "the oldest, after skipping three")

        let since = NSPersistentHistoryTransaction.fetchRequest!
        since.predicate = NSPredicate(format: "timestamp > %@", Date.distantPast as NSDate)
        let recent = try #require(try stack.run(NSPersistentHistoryChangeRequest.fetchHistory(withFetch: since)) as? [NSPersistentHistoryTransaction])
        #expect(recent.count == 4)

        // A request with no entity narrows nothing.
        let everything = NSPersistentHistoryChangeRequest.fetchHistory(withFetch: NSFetchRequest<NSFetchRequestResult>())
        everything.resultType = .count
        #expect(try stack.run(everything) as? Int == 4)
    }

    @Test func theEntitiesDescribeWhatAPredicateCanName() throws {
        let transaction = try #require(NSPersistentHistoryTransaction.entityDescription)
        let change = try #require(NSPersistentHistoryChange.entityDescription)
        #expect(Set(transaction.propertiesByName.keys).isSuperset(of: ["author", "bundleID", "contextName", "processID", "storeID", "timestamp", "transactionNumber", "changes"]))
        #expect(Set(change.propertiesByName.keys).isSuperset(of: ["changeID", "changeType", "changedObjectID", "changedEntity", "tombstone", "transaction"]))
        let stack = try Stack()
        defer { try? FileManager.default.removeItem(at: stack.directory) }
        #expect(NSPersistentHistoryTransaction.entityDescription(with: stack.app) === transaction)
        #expect(NSPersistentHistoryChange.entityDescription(with: stack.app) === change)
        let first = try #require(NSPersistentHistoryTransaction.fetchRequest), second = try #require(NSPersistentHistoryTransaction.fetchRequest)
        #expect(first !== second, "each call gives a request of its own to configure")
        #expect(first.entity === transaction && NSPersistentHistoryChange.fetchRequest?.entity === change)
    }

    @Test func aFetchRequestOnAnotherEntityIsRefused() throws {
        let stack = try Stack()
        defer { try? FileManager.default.removeItem(at: stack.directory) }
        _ = PersistentHistoryTests.insertNote(stack.app, "one")
        try stack.app.save()
        let request = NSPersistentHistoryChangeRequest.fetchHistory(after: nil as NSPersistentHistoryToken?)
        request.fetchRequest = NSFetchRequest<NSFetchRequestResult>(entityName: "Note")
        #expect { try stack.run(request) } throws: { error in
            let error = error as NSError
            return error.domain == NSCocoaErrorDomain && error.code == 134091
        }
        // Nothing was lost: without it the same request returns the history.
        request.fetchRequest = nil
        #expect((try stack.run(request) as? [NSPersistentHistoryTransaction])?.count == 1)
    }
}
