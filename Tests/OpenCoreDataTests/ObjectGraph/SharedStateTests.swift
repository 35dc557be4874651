import Foundation
import OpenCoreData
import Synchronization
import Testing

/// Mutable state that contexts on several queues share (the model, the store, requests, results)
/// gives each of them the right answer when they use it at the same time.
@Suite struct SharedStateTests {
    /// A fresh model (its class not yet resolved) and a history-tracking SQLite store.
    private func trackedCompanyStore() throws -> NSPersistentStoreCoordinator {
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: TestSupport.makeCompanyModel())
        let url = TestSupport.temporaryDirectory().appendingPathComponent("Shared.sqlite")
        try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url,
                                           options: [NSPersistentHistoryTrackingKey: true as NSNumber])
        return coordinator
    }

    /// Private contexts on one coordinator insert, save and fetch at once, from the first object
    /// on: the entity's class and the store's number are first worked out by several threads.
    @Test func contextsOnSeveralQueuesStartTogether() throws {
        let coordinator = try trackedCompanyStore()
        let workers = 4, companiesEach = 50
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: workers) { worker in
            let context = TestSupport.context(coordinator, concurrencyType: .privateQueueConcurrencyType)
            context.performAndWait {
                do {
                    for index in 0..<companiesEach {
                        let company = NSEntityDescription.insertNewObject(forEntityName: "Company", into: context)
                        company.setValue("Company \(worker)-\(index)", forKey: "name")
                    }
                    try context.save()
                    let fetched = try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Company"))
                    if fetched.contains(where: { $0.objectID.persistentStore !== coordinator.persistentStores[0] }) {
                        failures.withLock { $0.append("worker \(worker): an ID names another store") }
                    }
                } catch {
                    failures.withLock { $0.append("worker \(worker): \(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 } == [])
        let check = TestSupport.context(coordinator)
        #expect(try check.count(for: NSFetchRequest<NSManagedObject>(entityName: "Company")) == workers * companiesEach)
    }

    /// One batch request object, executed by two contexts at once, records each context's author
    /// in the history of its own transaction.
    @Test func oneBatchRequestInTwoContextsKeepsEachAuthor() throws {
        let coordinator = try trackedCompanyStore()
        let setup = TestSupport.context(coordinator)
        let company = NSEntityDescription.insertNewObject(forEntityName: "Company", into: setup)
        company.setValue("Acme", forKey: "name")
        try setup.save()

        let update = NSBatchUpdateRequest(entityName: "Company")
        update.propertiesToUpdate = ["founded": Date(timeIntervalSinceReferenceDate: 0)]
        let rounds = 100
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 2) { worker in
            let context = TestSupport.context(coordinator, concurrencyType: .privateQueueConcurrencyType)
            context.transactionAuthor = "author \(worker)"
            context.name = "context \(worker)"
            context.performAndWait {
                for _ in 0..<rounds {
                    do { _ = try context.execute(update) } catch { failures.withLock { $0.append("\(error)") } }
                }
            }
        }
        #expect(failures.withLock { $0 } == [])
        let history = try #require(try setup.execute(NSPersistentHistoryChangeRequest.fetchHistory(after: nil as NSPersistentHistoryToken?)) as? NSPersistentHistoryResult)
        let transactions = try #require(history.result as? [NSPersistentHistoryTransaction]).filter { $0.author != nil }
        #expect(transactions.count == 2 * rounds)
        let mismatched = transactions.filter { transaction in
            transaction.author?.replacingOccurrences(of: "author", with: "context") != transaction.contextName
        }
        #expect(mismatched.isEmpty, "\(mismatched.count) transactions name one context's author and another's name")
        #expect(transactions.filter { $0.author == "author 0" }.count == rounds)
    }

    /// An asynchronous fetch's result can be read from the thread that started it while the
    /// context's queue fills it: nil, then every object.
    @Test func anAsynchronousResultIsReadableWhileItIsFilled() throws {
        let coordinator = try trackedCompanyStore()
        let setup = TestSupport.context(coordinator)
        for index in 0..<500 {
            NSEntityDescription.insertNewObject(forEntityName: "Company", into: setup).setValue("C\(index)", forKey: "name")
        }
        try setup.save()
        let context = TestSupport.context(coordinator, concurrencyType: .privateQueueConcurrencyType)
        let done = DispatchSemaphore(value: 0)
        let request = NSAsynchronousFetchRequest(fetchRequest: NSFetchRequest<NSManagedObject>(entityName: "Company")) { _ in done.signal() }
        let result = try #require(try context.performAndWait { try context.execute(request) } as? NSAsynchronousFetchResult<NSManagedObject>)
        var sawNilOrAll = true
        while done.wait(timeout: .now()) == .timedOut {
            let count = result.finalResult?.count
            if count != nil && count != 500 { sawNilOrAll = false }
        }
        #expect(sawNilOrAll)
        #expect(result.finalResult?.count == 500)
        #expect(result.operationError == nil)
    }
}
