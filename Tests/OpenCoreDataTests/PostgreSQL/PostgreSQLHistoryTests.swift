import Foundation
import OpenCoreData
import OpenCoreDataTestKit
import Testing
@testable import OpenCoreDataCore
@testable import OpenCoreDataPostgreSQL

/// Persistent history in the PostgreSQL store, and remote change notifications that catch up
/// from it: numbers in commit order across coordinators, a huge save listed, saves made while the
/// listening connection was down posted once it is back.
@Suite struct PostgreSQLHistoryTests {
    static let model = PersistentHistoryTests.makeModel()
    static var historyOptions: [AnyHashable: Any] { [NSPersistentHistoryTrackingKey: true as NSNumber] }

    @Test func tombstoneTextKeepsEachValueAndItsType() throws {
        let values: [SQLServerValue] = [
            .integer(-42), .real(0.1), .real(-.infinity), .boolean(true), .boolean(false), .decimal(Decimal(string: "12345.678")!),
            .text("0042"), .text("a:b;c"), .bytes(Data([0, 255, 7])), .uuid(UUID()),
        ]
        for value in values {
            let text = try #require(SQLServerValueCoding.tombstoneText(value))
            #expect(SQLServerValueCoding.value(fromTombstoneText: text) == value, "\(text)")
        }
        #expect(SQLServerValueCoding.tombstoneText(.null) == nil)
        #expect(SQLServerValueCoding.value(fromTombstoneText: "q:1") == nil && SQLServerValueCoding.value(fromTombstoneText: "") == nil)
    }

    @Test func aNoticeCarriesItsTransactionNumber() throws {
        var notice = SQLServerChangeNotice(origin: "AB12", inserted: [(3, 17)], updated: [], deleted: [])
        notice.transaction = 42
        #expect(notice.payload == "o:AB12;t:42;i:3.17;u:;d:")
        #expect(SQLServerChangeNotice(payload: notice.payload)?.transaction == 42)
        notice.inserted = (0..<2_000).map { (3, Int64($0)) }
        #expect(notice.payload == "o:AB12;t:42;*")
        let huge = try #require(SQLServerChangeNotice(payload: notice.payload))
        #expect(huge.transaction == 42 && !huge.isComplete)
        #expect(SQLServerChangeNotice(payload: "o:AB12;t:x") == nil)
    }

    private func context(_ database: PostgreSQLStoreTests.Database, options: [AnyHashable: Any]? = historyOptions) throws -> NSManagedObjectContext {
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: Self.model)
        try coordinator.addPersistentStore(ofType: NSPostgreSQLStoreType, configurationName: nil, at: database.url, options: options)
        let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        context.persistentStoreCoordinator = coordinator
        context.name = "editor"
        context.transactionAuthor = "app"
        return context
    }

    private func history(_ context: NSManagedObjectContext, after token: NSPersistentHistoryToken? = nil) throws -> [NSPersistentHistoryTransaction] {
        try context.performAndWait {
            let result = try context.execute(NSPersistentHistoryChangeRequest.fetchHistory(after: token)) as? NSPersistentHistoryResult
            return try #require(result?.result as? [NSPersistentHistoryTransaction])
        }
    }

    private func note(_ context: NSManagedObjectContext, _ title: String, rank: Int64 = 0) -> NSManagedObject {
        PersistentHistoryTests.insertNote(context, title, rank: rank)
    }

    @Test(.enabled(if: PostgreSQLTestServer.isAvailable, PostgreSQLTestServer.skipReason))
    func eachSaveIsOneTransactionWithItsAuthorContextAndChanges() throws {
        let database = PostgreSQLStoreTests.Database()
        let context = try context(database)
        let (first, second) = try context.performAndWait {
            let first = note(context, "0042"), second = note(context, "second")
            try context.save()
            second.setValue(Int64(7), forKey: "rank")
            try context.save()
            context.delete(first)
            try context.save()
            return (first.objectID, second.objectID)
        }
        let transactions = try history(context)
        #expect(transactions.map(\.transactionNumber) == [1, 2, 3])
        #expect(transactions.allSatisfy { $0.author == "app" && $0.contextName == "editor" })
        #expect(transactions.allSatisfy { $0.processID == String(ProcessInfo.processInfo.processIdentifier) && !$0.bundleID.isEmpty })
        #expect(transactions.allSatisfy { $0.storeID == context.persistentStoreCoordinator!.persistentStores[0].identifier })
        let inserts = try #require(transactions[0].changes)
        #expect(inserts.map(\.changeType) == [.insert, .insert] && Set(inserts.map(\.changedObjectID)) == [first, second])
        let update = try #require(transactions[1].changes?.first)
        #expect(update.changeType == .update && update.changedObjectID == second && update.updatedProperties?.map(\.name) == ["rank"])
        let delete = try #require(transactions[2].changes?.first)
        #expect(delete.changeType == .delete && delete.changedObjectID == first)
        #expect(delete.tombstone?["title"] as? String == "0042")

        #expect(try history(context, after: transactions[0].token).map(\.transactionNumber) == [2, 3])
        let token = context.persistentStoreCoordinator!.currentPersistentHistoryToken(fromStores: nil)
        #expect(token == transactions[2].token)
        #expect(try history(context, after: token).isEmpty)

        // A purge through the first token: reading after it still works, before it is expired.
        let purged = try context.performAndWait {
            let purge = NSPersistentHistoryChangeRequest.deleteHistory(before: transactions[0].token)
            purge.resultType = .count
            return try context.execute(purge) as? NSPersistentHistoryResult
        }
        #expect(purged?.result as? Int == 1)
        #expect(try history(context).map(\.transactionNumber) == [2, 3])
        let expired = #expect(throws: (any Error).self) {
            try history(context, after: NSPersistentHistoryToken(transactionNumbers: [transactions[0].storeID: 0]))
        }
        #expect((expired as NSError?)?.code == NSPersistentHistoryTokenExpiredError)
    }

    @Test(.enabled(if: PostgreSQLTestServer.isAvailable, PostgreSQLTestServer.skipReason))
    func historyFetchRequestsNarrowTheServersHistory() throws {
        let database = PostgreSQLStoreTests.Database()
        let context = try context(database)
        let doomed = try context.performAndWait {
            let doomed = note(context, "doomed")
            _ = note(context, "kept")
            try context.save()
            context.delete(doomed)
            try context.save()
            return doomed.objectID
        }
        try context.performAndWait {
            let deletions = NSPersistentHistoryChange.fetchRequest!
            deletions.predicate = NSPredicate(format: "changeType == %d", NSPersistentHistoryChangeType.delete.rawValue)
            let request = NSPersistentHistoryChangeRequest.fetchHistory(after: nil as NSPersistentHistoryToken?)
            request.fetchRequest = deletions
            let transactions = try #require((try context.execute(request) as? NSPersistentHistoryResult)?.result as? [NSPersistentHistoryTransaction])
            #expect(transactions.map(\.transactionNumber) == [2])
            #expect(transactions.first?.changes?.map(\.changedObjectID) == [doomed])

            let mine = NSPersistentHistoryTransaction.fetchRequest!
            mine.predicate = NSPredicate(format: "author == %@", "app")
            let counting = NSPersistentHistoryChangeRequest.fetchHistory(withFetch: mine)
            counting.resultType = .count
            #expect((try context.execute(counting) as? NSPersistentHistoryResult)?.result as? Int == 3, "two inserts and a delete")
        }
    }

    @Test(.enabled(if: PostgreSQLTestServer.isAvailable, PostgreSQLTestServer.skipReason))
    func withoutTheOptionOnANewDatabaseNothingIsRecorded() throws {
        let database = PostgreSQLStoreTests.Database()
        let context = try context(database, options: nil)
        try context.performAndWait {
            _ = note(context, "one")
            try context.save()
            let error = #expect(throws: (any Error).self) {
                try context.execute(NSPersistentHistoryChangeRequest.fetchHistory(after: nil as NSPersistentHistoryToken?))
            }
            #expect((error as NSError?)?.code == NSPersistentStoreUnsupportedRequestTypeError)
        }
        #expect(context.persistentStoreCoordinator?.currentPersistentHistoryToken(fromStores: nil) == nil)
    }

    @Test(.enabled(if: PostgreSQLTestServer.isAvailable, PostgreSQLTestServer.skipReason))
    func aServerWithoutTheOptionStillRecordsWhenTheDatabaseKeepsHistory() throws {
        let database = PostgreSQLStoreTests.Database()
        let tracking = try context(database)
        let other = try context(database, options: nil)
        try other.performAndWait {
            _ = note(other, "from a server without the option")
            try other.save()
        }
        #expect(try history(tracking).flatMap { $0.changes ?? [] }.count == 1)
    }

    @Test(.enabled(if: PostgreSQLTestServer.isAvailable, PostgreSQLTestServer.skipReason))
    func concurrentSavesGetNumbersInCommitOrderWithoutGaps() throws {
        let database = PostgreSQLStoreTests.Database()
        let contexts = try (0..<4).map { _ in try context(database) }
        DispatchQueue.concurrentPerform(iterations: contexts.count) { index in
            let context = contexts[index]
            context.performAndWait {
                for round in 0..<10 {
                    _ = note(context, "\(index)-\(round)", rank: Int64(round))
                    do { try context.save() } catch { Issue.record("save: \(error)") }
                }
            }
        }
        let transactions = try history(contexts[0])
        #expect(transactions.map(\.transactionNumber) == Array(1...40))
        #expect(transactions.allSatisfy { $0.changes?.count == 1 })
    }

    @Test(.enabled(if: PostgreSQLTestServer.isAvailable, PostgreSQLTestServer.skipReason))
    func aSaveTooLargeForItsNoticeIsListedFromTheHistory() async throws {
        let database = PostgreSQLStoreTests.Database()
        let writer = try context(database)
        let watching = try context(database, options: Self.historyOptions.merging([NSPersistentStoreRemoteChangeNotificationPostOptionKey: true]) { $1 })
        let inbox = PostgreSQLRemoteChangeTests.Inbox(watching.persistentStoreCoordinator!)
        try writer.performAndWait {
            for index in 0..<2_000 { _ = note(writer, "bulk \(index)", rank: Int64(index)) }
            try writer.save()
        }
        let heard = try await eventually { inbox.received.contains { $0.inserted == 2_000 } }
        #expect(heard, "\(inbox.received)")
        #expect(inbox.received.allSatisfy { $0.token != nil })
    }

    @Test(.enabled(if: PostgreSQLTestServer.isAvailable, PostgreSQLTestServer.skipReason))
    func savesMadeWhileTheListenerWasDownArePostedOnceItIsBack() async throws {
        let database = PostgreSQLStoreTests.Database()
        let writer = try context(database)
        let watching = try context(database, options: Self.historyOptions.merging([NSPersistentStoreRemoteChangeNotificationPostOptionKey: true]) { $1 })
        let store = try #require(watching.persistentStoreCoordinator?.persistentStores.first as? SQLServerStore)
        let listener = try #require(store.changeListener)
        let inbox = PostgreSQLRemoteChangeTests.Inbox(watching.persistentStoreCoordinator!)
        try writer.performAndWait {
            _ = note(writer, "before")
            try writer.save()
        }
        #expect(try await eventually { inbox.received.count == 1 })

        // The server ends the listening connection; it stays down while three saves commit and
        // their notices go nowhere.
        listener.holdsReconnectionForTesting = true
        let admin = try PostgreSQLConnection.open(PostgreSQLTestServer.location())
        defer { admin.close() }
        let ended = try admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = 'LISTEN \(listener.channel)'")
        #expect(ended.count == 1)
        let down = try await eventually { listener.isConnected == false }
        #expect(down)
        let saved = try writer.performAndWait {
            var ids: [NSManagedObjectID] = []
            for index in 0..<3 {
                let object = note(writer, "while down \(index)")
                try writer.save()
                ids.append(object.objectID)
            }
            return ids
        }
        #expect(listener.isConnected == false)
        listener.holdsReconnectionForTesting = false
        let caughtUp = try await eventually { inbox.received.count == 4 }
        #expect(caughtUp, "\(inbox.received)")
        #expect(inbox.received.dropFirst().map(\.inserted) == [1, 1, 1], "one notification per missed transaction, with its objects")
        #expect(inbox.received.map(\.token) == [1, 2, 3, 4].map { $0 as Int64? })
        #expect(inbox.received.dropFirst().compactMap(\.insertedIDs?.first) == saved)
    }
}
