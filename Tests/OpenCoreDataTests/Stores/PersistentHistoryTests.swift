import Foundation
import GRDB
import OpenCoreData
import Testing

/// Persistent history in the SQLite store (`NSPersistentHistoryTrackingKey`).
@Suite struct PersistentHistoryTests {
    /// Folder ←→> Note; a note's title is kept in the history when it is deleted.
    static func makeModel() -> NSManagedObjectModel {
        let folder = NSEntityDescription(name: "Folder", className: "NSManagedObject")
        let note = NSEntityDescription(name: "Note", className: "NSManagedObject")
        let notes = NSRelationshipDescription(name: "notes", destination: note, toMany: true, deleteRule: .nullifyDeleteRule)
        let noteFolder = NSRelationshipDescription(name: "folder", destination: folder)
        notes.inverseRelationship = noteFolder
        noteFolder.inverseRelationship = notes
        let title = NSAttributeDescription(name: "title", type: .stringAttributeType, isOptional: false)
        title.preservesValueInHistoryOnDeletion = true
        note.properties = [title, NSAttributeDescription(name: "rank", type: .integer64AttributeType), noteFolder]
        folder.properties = [NSAttributeDescription(name: "name", type: .stringAttributeType), notes]
        let model = NSManagedObjectModel()
        model.entities = [folder, note]
        return model
    }

    static var historyOptions: [AnyHashable: Any] { [NSPersistentHistoryTrackingKey: true as NSNumber] }

    /// A coordinator on a new store file with history tracking, and a context named "editor" whose author is "app".
    private func stack(options: [AnyHashable: Any]? = historyOptions) throws -> (NSPersistentStoreCoordinator, NSManagedObjectContext, URL) {
        let directory = TestSupport.temporaryDirectory()
        let url = directory.appendingPathComponent("History.sqlite")
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: Self.makeModel())
        try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url, options: options)
        let context = TestSupport.context(coordinator)
        context.name = "editor"
        context.transactionAuthor = "app"
        return (coordinator, context, directory)
    }

    private func history(_ context: NSManagedObjectContext, after token: NSPersistentHistoryToken? = nil) throws -> [NSPersistentHistoryTransaction] {
        let result = try context.execute(NSPersistentHistoryChangeRequest.fetchHistory(after: token)) as? NSPersistentHistoryResult
        return try #require(result?.result as? [NSPersistentHistoryTransaction])
    }

    /// Runs `body` on a read-only connection of its own to the coordinator's store file.
    private func readFile<T>(of coordinator: NSPersistentStoreCoordinator, _ body: (Database) throws -> T) throws -> T {
        let url = try #require(coordinator.persistentStores.first?.url)
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: url.path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read(body)
    }

    private func note(_ context: NSManagedObjectContext, _ title: String, rank: Int64 = 0) -> NSManagedObject {
        Self.insertNote(context, title, rank: rank)
    }

    /// Inserts a note with a title and rank.
    static func insertNote(_ context: NSManagedObjectContext, _ title: String, rank: Int64 = 0) -> NSManagedObject {
        let note = NSManagedObject(entity: context.persistentStoreCoordinator!.managedObjectModel.entitiesByName["Note"]!, insertInto: context)
        note.setValue(title, forKey: "title")
        note.setValue(rank, forKey: "rank")
        return note
    }

    @Test func eachSaveIsOneTransactionWithItsAuthorContextAndChanges() throws {
        let (_, context, directory) = try stack()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = note(context, "0042"), second = note(context, "second")
        try context.save()
        second.setValue(Int64(7), forKey: "rank")
        try context.save()
        context.delete(first)
        try context.save()

        let transactions = try history(context)
        #expect(transactions.count == 3)
        #expect(transactions.map(\.author) == ["app", "app", "app"])
        #expect(transactions.map(\.contextName) == ["editor", "editor", "editor"])
        #expect(transactions.allSatisfy { $0.storeID == context.persistentStoreCoordinator!.persistentStores[0].identifier })
        #expect(transactions.allSatisfy { $0.processID == String(ProcessInfo.processInfo.processIdentifier) && !$0.bundleID.isEmpty })
        #expect(transactions.map(\.transactionNumber) == transactions.map(\.transactionNumber).sorted())
        #expect(Set(transactions.map(\.token)).count == 3)

        let inserts = try #require(transactions[0].changes)
        #expect(inserts.map(\.changeType) == [.insert, .insert])
        #expect(Set(inserts.map(\.changedObjectID)) == [first.objectID, second.objectID])
        #expect(inserts.allSatisfy { $0.updatedProperties == nil && $0.tombstone == nil && $0.transaction === transactions[0] })

        let update = try #require(transactions[1].changes?.first)
        #expect(transactions[1].changes?.count == 1)
        #expect(update.changeType == .update && update.changedObjectID == second.objectID)
        #expect(update.updatedProperties?.map(\.name) == ["rank"])

        let delete = try #require(transactions[2].changes?.first)
        #expect(delete.changeType == .delete && delete.changedObjectID == first.objectID)
        #expect(delete.tombstone?["title"] as? String == "0042", "kept as the string it was, not as a number")
        #expect(inserts[0].changeID < update.changeID && update.changeID < delete.changeID)

        // The three ways to say "after".
        #expect(try history(context, after: transactions[0].token).map(\.transactionNumber) == transactions.dropFirst().map(\.transactionNumber))
        let afterTransaction = try context.execute(NSPersistentHistoryChangeRequest.fetchHistory(after: transactions[1])) as? NSPersistentHistoryResult
        #expect((afterTransaction?.result as? [NSPersistentHistoryTransaction])?.map(\.transactionNumber) == [transactions[2].transactionNumber])
        let afterDate = try context.execute(NSPersistentHistoryChangeRequest.fetchHistory(after: Date.distantPast)) as? NSPersistentHistoryResult
        #expect((afterDate?.result as? [NSPersistentHistoryTransaction])?.count == 3)
        let afterFuture = try context.execute(NSPersistentHistoryChangeRequest.fetchHistory(after: Date().addingTimeInterval(60))) as? NSPersistentHistoryResult
        #expect((afterFuture?.result as? [NSPersistentHistoryTransaction])?.isEmpty == true)
    }

    @Test func historyUsesApplesTablesInTheStoreFile() throws {
        let (coordinator, context, directory) = try stack()
        defer { try? FileManager.default.removeItem(at: directory) }
        _ = note(context, "one")
        try context.save()
        try readFile(of: coordinator) { db in
            #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM ATRANSACTION") == 1)
            #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM ACHANGE WHERE ZCHANGETYPE = 0") == 1)
            let names = try String.fetchAll(db, sql: "SELECT s.ZNAME FROM ATRANSACTION t JOIN ATRANSACTIONSTRING s ON s.Z_PK IN (t.ZAUTHORTS, t.ZCONTEXTNAMETS)")
            #expect(Set(names) == ["app", "editor"])
            let entity = try Int.fetchOne(db, sql: "SELECT ZENTITY FROM ACHANGE")
            #expect(try Int.fetchOne(db, sql: "SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'Note'") == entity)
        }
    }

    @Test func withoutTheOptionNothingIsRecordedAndHistoryRequestsFail() throws {
        let (coordinator, context, directory) = try stack(options: nil)
        defer { try? FileManager.default.removeItem(at: directory) }
        _ = note(context, "one")
        try context.save()
        #expect(try readFile(of: coordinator) { db in try db.tableExists("ATRANSACTION") } == false)
        #expect { try context.execute(NSPersistentHistoryChangeRequest.fetchHistory(after: nil as NSPersistentHistoryToken?)) } throws: { error in
            (error as NSError).code == NSPersistentStoreUnsupportedRequestTypeError
        }
    }

    @Test func aFailedSaveLeavesNoHistory() throws {
        let (coordinator, context, directory) = try stack()
        defer { try? FileManager.default.removeItem(at: directory) }
        let object = note(context, "shared")
        try context.save()
        let other = TestSupport.context(coordinator)
        let copy = try other.existingObject(with: object.objectID)
        copy.setValue(Int64(1), forKey: "rank")
        try other.save()
        object.setValue(Int64(2), forKey: "rank")
        _ = note(context, "not saved")
        #expect(throws: (any Error).self) { try context.save() }
        let transactions = try history(context)
        #expect(transactions.count == 2, "the insert and the other context's update; nothing of the failed save")
        #expect(transactions.flatMap { $0.changes ?? [] }.count == 2)
    }

    @Test func batchRequestsRecordTheirChanges() throws {
        let (coordinator, context, directory) = try stack()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = coordinator.managedObjectModel
        let folder = NSManagedObject(entity: model.entitiesByName["Folder"]!, insertInto: context)
        folder.setValue("inbox", forKey: "name")
        let filed = note(context, "filed", rank: 1)
        filed.setValue(folder, forKey: "folder")
        try context.save()
        context.transactionAuthor = "importer"

        let insert = NSBatchInsertRequest(entityName: "Note", objects: [["title": "a", "rank": 1], ["title": "b", "rank": 2]])
        insert.resultType = .objectIDs
        let inserted = try #require((try context.execute(insert) as? NSBatchInsertResult)?.result as? [NSManagedObjectID])
        let update = NSBatchUpdateRequest(entityName: "Note")
        update.predicate = NSPredicate(format: "rank == 1")
        update.propertiesToUpdate = ["rank": Int64(10)]
        _ = try context.execute(update)
        let delete = NSBatchDeleteRequest(objectIDs: [folder.objectID])
        _ = try context.execute(delete)

        let transactions = try history(context)
        #expect(transactions.count == 4)
        #expect(transactions.dropFirst().allSatisfy { $0.author == "importer" && $0.contextName == "editor" })
        let insertChanges = try #require(transactions[1].changes)
        #expect(insertChanges.map(\.changeType) == [.insert, .insert])
        #expect(Set(insertChanges.map(\.changedObjectID)) == Set(inserted))
        let updateChanges = try #require(transactions[2].changes)
        #expect(updateChanges.count == 2, "the filed note and batch-inserted 'a' have rank 1")
        #expect(updateChanges.allSatisfy { $0.changeType == .update && $0.updatedProperties?.map(\.name) == ["rank"] })
        let deleteChanges = try #require(transactions[3].changes)
        #expect(deleteChanges.contains { $0.changeType == .delete && $0.changedObjectID == folder.objectID })
        #expect(deleteChanges.contains { $0.changeType == .update && $0.changedObjectID == filed.objectID && $0.updatedProperties?.map(\.name) == ["folder"] },
                "clearing the note's link to the deleted folder is an update of the note")
    }

    @Test func deletingHistoryAndExpiredTokens() throws {
        let (_, context, directory) = try stack()
        defer { try? FileManager.default.removeItem(at: directory) }
        for index in 0..<4 {
            _ = note(context, "note \(index)")
            try context.save()
        }
        let all = try history(context)
        #expect(all.count == 4)
        let purge = NSPersistentHistoryChangeRequest.deleteHistory(before: all[1].token)
        purge.resultType = .count
        #expect((try context.execute(purge) as? NSPersistentHistoryResult)?.result as? Int == 2, "up to and including the token's transaction")
        #expect(try history(context).map(\.transactionNumber) == all.suffix(2).map(\.transactionNumber))
        #expect(try history(context, after: all[1].token).count == 2, "the token itself is still a valid starting point")
        #expect { try history(context, after: all[0].token) } throws: { error in
            (error as NSError).code == NSPersistentHistoryTokenExpiredError
        }
        _ = try context.execute(NSPersistentHistoryChangeRequest.deleteHistory(before: all[3]))
        #expect(try history(context).map(\.transactionNumber) == [all[3].transactionNumber])
        _ = try context.execute(NSPersistentHistoryChangeRequest.deleteHistory(before: Date().addingTimeInterval(1)))
        #expect(try history(context).isEmpty)
        // Numbers keep growing after a purge, so old tokens never point at new transactions.
        _ = note(context, "after purge")
        try context.save()
        #expect(try history(context).first.map(\.transactionNumber) == all[3].transactionNumber + 1)
    }

    @Test func currentTokenMarksTheNewestTransactionOfTheChosenStores() throws {
        let (coordinator, context, directory) = try stack()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = coordinator.persistentStores[0]
        let empty = try #require(coordinator.currentPersistentHistoryToken(fromStores: nil), "a store with no transactions yet has a token")
        #expect(try history(context, after: empty).isEmpty)
        _ = note(context, "one")
        try context.save()
        #expect(try history(context, after: empty).count == 1, "a token taken before any save covers nothing")

        let current = try #require(coordinator.currentPersistentHistoryToken(fromStores: nil))
        #expect(current == (try history(context).last?.token), "the newest transaction's own token")
        #expect(coordinator.currentPersistentHistoryToken(fromStores: []) == current, "an empty list means every store")
        #expect(coordinator.currentPersistentHistoryToken(fromStores: [store]) == current)
        #expect(try history(context, after: current).isEmpty)
        _ = note(context, "two")
        try context.save()
        let later = try history(context, after: current)
        #expect(later.map { $0.changes?.count } == [1], "only what was saved after it")

        // A purge of every transaction does not move it back: it still covers them, and is not expired.
        _ = try context.execute(NSPersistentHistoryChangeRequest.deleteHistory(before: Date().addingTimeInterval(1)))
        let afterPurge = try #require(coordinator.currentPersistentHistoryToken(fromStores: nil))
        #expect(afterPurge == later.last?.token)
        #expect(try history(context, after: afterPurge).isEmpty)

        // Stores that record no history give no token; alongside one that does, they are left out.
        let memory = try coordinator.addPersistentStore(ofType: NSInMemoryStoreType, configurationName: nil, at: nil, options: nil)
        #expect(coordinator.currentPersistentHistoryToken(fromStores: [memory]) == nil)
        #expect(coordinator.currentPersistentHistoryToken(fromStores: nil) == afterPurge)
        let (plain, _, plainDirectory) = try stack(options: nil)
        defer { try? FileManager.default.removeItem(at: plainDirectory) }
        #expect(plain.currentPersistentHistoryToken(fromStores: nil) == nil)
    }

    @Test func resultTypes() throws {
        let (_, context, directory) = try stack()
        defer { try? FileManager.default.removeItem(at: directory) }
        let one = note(context, "one"), two = note(context, "two")
        try context.save()
        func run(_ type: NSPersistentHistoryResultType) throws -> Any? {
            let request = NSPersistentHistoryChangeRequest.fetchHistory(after: nil as NSPersistentHistoryToken?)
            request.resultType = type
            return (try context.execute(request) as? NSPersistentHistoryResult)?.result
        }
        #expect(try run(.statusOnly) as? Bool == true)
        #expect(try run(.count) as? Int == 2, "the number of changes, as Apple documents it")
        #expect(Set(try run(.objectIDs) as? [NSManagedObjectID] ?? []) == [one.objectID, two.objectID])
        let transactions = try #require(try run(.transactionsOnly) as? [NSPersistentHistoryTransaction])
        #expect(transactions.count == 1 && transactions[0].changes == nil)
        let changes = try #require(try run(.changesOnly) as? [NSPersistentHistoryChange])
        #expect(changes.count == 2 && changes.allSatisfy { $0.transaction?.transactionNumber == transactions[0].transactionNumber })
    }

    @Test func tokensAreCodableAndComparable() throws {
        let (_, context, directory) = try stack()
        defer { try? FileManager.default.removeItem(at: directory) }
        _ = note(context, "one")
        try context.save()
        let token = try #require(try history(context).last?.token)
        let data = try JSONEncoder().encode(token)
        let decoded = try JSONDecoder().decode(NSPersistentHistoryToken.self, from: data)
        #expect(decoded == token)
        #expect(decoded.hashValue == token.hashValue)
        #expect(try history(context, after: decoded).isEmpty)
        _ = note(context, "two")
        try context.save()
        #expect(try history(context).last?.token != token)
    }

    /// Tokens are archived as apps archive them, with `NSKeyedArchiver` and secure coding; an
    /// archive of something else, or damaged bytes, is an error, not a token or a crash.
    @Test func tokensArchiveWithSecureCoding() throws {
        let (_, context, directory) = try stack()
        defer { try? FileManager.default.removeItem(at: directory) }
        _ = note(context, "one")
        try context.save()
        let token = try #require(try history(context).last?.token)
        let data = try NSKeyedArchiver.archivedData(withRootObject: token, requiringSecureCoding: true)
        let unarchived = try #require(try NSKeyedUnarchiver.unarchivedObject(ofClass: NSPersistentHistoryToken.self, from: data))
        #expect(unarchived == token)
        #expect(try history(context, after: unarchived).isEmpty)
        #expect(NSPersistentHistoryToken.supportsSecureCoding)

        let notAToken = try NSKeyedArchiver.archivedData(withRootObject: NSString(string: "token"), requiringSecureCoding: true)
        // (Foundation on Linux answers nil here where Apple's throws.)
        #expect((try? NSKeyedUnarchiver.unarchivedObject(ofClass: NSPersistentHistoryToken.self, from: notAToken)) == nil)
        #expect(throws: (any Error).self) { try NSKeyedUnarchiver.unarchivedObject(ofClass: NSPersistentHistoryToken.self, from: Data("damaged".utf8)) }
    }

    @Test func objectIDNotificationMergesIntoAnotherContext() throws {
        let (coordinator, context, directory) = try stack()
        defer { try? FileManager.default.removeItem(at: directory) }
        let kept = note(context, "kept"), doomed = note(context, "doomed")
        try context.save()
        let reader = TestSupport.context(coordinator)
        let keptHere = try reader.existingObject(with: kept.objectID)
        let doomedHere = try reader.existingObject(with: doomed.objectID)
        #expect(keptHere.value(forKey: "rank") as? Int64 == 0)
        let token = try history(context).last?.token

        kept.setValue(Int64(5), forKey: "rank")
        context.delete(doomed)
        let added = note(context, "added")
        try context.save()

        let seen = RemoteChangeTests.LockedBox<[String: Int]>([:])
        let observer = NotificationCenter.default.addObserver(forName: .NSManagedObjectContextObjectsDidChange, object: reader, queue: nil) { note in
            for key in [NSInsertedObjectsKey, NSRefreshedObjectsKey, NSDeletedObjectsKey] {
                let count = (note.userInfo?[key] as? Set<NSManagedObject>)?.count ?? 0
                seen.update { $0[key, default: 0] += count }
            }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        for transaction in try history(context, after: token) {
            let notification = transaction.objectIDNotification()
            #expect(notification.name == NSManagedObjectContext.didSaveObjectIDsNotification)
            reader.mergeChanges(fromContextDidSave: notification)
        }
        #expect(keptHere.value(forKey: "rank") as? Int64 == 5)
        #expect(reader.registeredObject(for: doomedHere.objectID) == nil)
        #expect(reader.registeredObject(for: added.objectID) != nil)
        #expect(seen.value == [NSInsertedObjectsKey: 1, NSRefreshedObjectsKey: 1, NSDeletedObjectsKey: 1])
    }
}
