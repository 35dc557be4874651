import Foundation
import OpenCoreData
import OpenCoreDataTestKit
import Testing
@testable import OpenCoreDataPostgreSQL

/// Batch update, delete and insert requests on the PostgreSQL store: the checks the SQLite and
/// in-memory stores pass, their history, and their notices to other servers.
@Suite(.enabled(if: PostgreSQLTestServer.isAvailable, PostgreSQLTestServer.skipReason))
struct PostgreSQLBatchTests {
    @Test func batchRequestsAnswerAsTheOtherStoresDo() throws {
        let database = PostgreSQLStoreTests.Database()
        try withExtendedLifetime(database) {
            try BubbleTeaTests.batchRequestsWork(in: try BubbleTeaTests.context(NSPostgreSQLStoreType, url: database.url))
        }
    }

    @Test func aBatchIsOneHistoryTransactionAndOtherServersHearItsObjects() async throws {
        let database = PostgreSQLStoreTests.Database()
        let model = PersistentHistoryTests.makeModel()
        let tracking: [AnyHashable: Any] = [NSPersistentHistoryTrackingKey: true as NSNumber]
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(ofType: NSPostgreSQLStoreType, configurationName: nil, at: database.url,
                                           options: tracking.merging([NSPersistentStoreRemoteChangeNotificationPostOptionKey: true]) { $1 })
        let watching = NSPersistentStoreCoordinator(managedObjectModel: model)
        try watching.addPersistentStore(ofType: NSPostgreSQLStoreType, configurationName: nil, at: database.url,
                                        options: tracking.merging([NSPersistentStoreRemoteChangeNotificationPostOptionKey: true]) { $1 })
        let own = PostgreSQLRemoteChangeTests.Inbox(coordinator)
        let other = PostgreSQLRemoteChangeTests.Inbox(watching)
        let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        context.persistentStoreCoordinator = coordinator
        context.transactionAuthor = "importer"
        let (folder, filed, transactions) = try context.performAndWait {
            let folder = NSManagedObject(entity: model.entitiesByName["Folder"]!, insertInto: context)
            folder.setValue("inbox", forKey: "name")
            let filed = PersistentHistoryTests.insertNote(context, "filed", rank: 1)
            filed.setValue(folder, forKey: "folder")
            try context.save()
            let insert = NSBatchInsertRequest(entityName: "Note", objects: [["title": "a", "rank": 1], ["title": "b", "rank": 2]])
            _ = try context.execute(insert)
            let update = NSBatchUpdateRequest(entityName: "Note")
            update.predicate = NSPredicate(format: "rank == 1")
            update.propertiesToUpdate = ["rank": NSExpression(format: "rank + 9")]
            _ = try context.execute(update)
            _ = try context.execute(NSBatchDeleteRequest(objectIDs: [folder.objectID]))
            let result = try context.execute(NSPersistentHistoryChangeRequest.fetchHistory(after: nil as NSPersistentHistoryToken?)) as? NSPersistentHistoryResult
            return (folder.objectID, filed.objectID, try #require(result?.result as? [NSPersistentHistoryTransaction]))
        }
        #expect(transactions.count == 4)
        #expect(transactions.dropFirst().allSatisfy { $0.author == "importer" })
        #expect(transactions[1].changes?.map(\.changeType) == [.insert, .insert])
        let updates = try #require(transactions[2].changes)
        #expect(updates.count == 2 && updates.allSatisfy { $0.changeType == .update && $0.updatedProperties?.map(\.name) == ["rank"] })
        let deletes = try #require(transactions[3].changes)
        #expect(deletes.contains { $0.changeType == .delete && $0.changedObjectID == folder })
        #expect(deletes.contains { $0.changeType == .update && $0.changedObjectID == filed && $0.updatedProperties?.map(\.name) == ["folder"] },
                "clearing the note's link to the deleted folder is an update of the note")
        let reader = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        reader.persistentStoreCoordinator = watching
        let ranks = try reader.performAndWait {
            try reader.fetch(NSFetchRequest<NSManagedObject>(entityName: "Note")).compactMap { $0.value(forKey: "rank") as? Int64 }.sorted()
        }
        #expect(ranks == [2, 10, 10])
        // Both coordinators hear each batch with its objects: the saving one's contexts don't know of a batch.
        for inbox in [own, other] {
            let heard = try await eventually { inbox.received.count == 4 }
            #expect(heard, "\(inbox.received)")
            #expect(inbox.received.dropFirst().map(\.inserted) == [2, 0, 0] && inbox.received.last?.deleted == 1)
        }
    }
}
