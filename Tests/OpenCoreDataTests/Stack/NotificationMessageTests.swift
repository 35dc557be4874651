import Foundation
import OpenCoreData
import OpenCoreDataTestKit
import Testing

/// Core Data's typed `NotificationCenter` messages (iOS 27): each notification of a context or a
/// coordinator reaches the observers of its message types too, once, with the same contents.
@Suite struct NotificationMessageTests {
    /// What observers received, from any thread.
    final class Inbox<Message>: @unchecked Sendable {
        private let lock = NSLock()
        private var stored: [Message] = []
        func append(_ message: Message) { lock.lock(); defer { lock.unlock() }; stored.append(message) }
        var messages: [Message] { lock.lock(); defer { lock.unlock() }; return stored }
    }

    private func stack(_ type: NSManagedObjectContext.ConcurrencyType) throws -> (NSManagedObjectModel, NSPersistentStoreCoordinator, NSManagedObjectContext) {
        let model = try TestSupport.model("worldcup", "WorldCup")
        let (coordinator, _) = try TestSupport.coordinator(model, type: NSInMemoryStoreType)
        return (model, coordinator, TestSupport.context(coordinator, concurrencyType: type))
    }

    /// Inserts a team and saves it in the context's own block; the team's ID.
    private func saveTeam(in context: NSManagedObjectContext, _ model: NSManagedObjectModel) throws -> NSManagedObjectID {
        try context.performAndWait {
            let team = NSManagedObject(entity: model.entitiesByName["Team"]!, insertInto: context)
            team.setValue("Atlantis", forKey: "teamName")
            try context.save()
            return team.objectID
        }
    }

    @Test @MainActor func aMainQueueContextSendsItsMessagesWithItsNotifications() async throws {
        let (model, _, context) = try stack(.mainQueueConcurrencyType)
        let changes = Inbox<NSManagedObjectContext.ObjectsDidChangeMessage>()
        let willSaves = Inbox<NSManagedObjectContext.WillSaveMessage>()
        let saves = Inbox<NSManagedObjectContext.DidSaveMessage>()
        let savedIDs = Inbox<NSManagedObjectContext.DidSaveObjectIDsMessage>()
        let savedIDsAsync = Inbox<Set<NSManagedObjectID>>()
        let classicSaves = Inbox<Notification>()
        let center = NotificationCenter.default
        let tokens = [
            center.addObserver(of: context, for: .objectsDidChange) { changes.append($0) },
            center.addObserver(of: context, for: .willSave) { willSaves.append($0) },
            center.addObserver(of: context, for: NSManagedObjectContext.DidSaveMessage.self) { saves.append($0) },
            center.addObserver(of: context, for: .didSaveObjectIDs) { savedIDs.append($0) },
            center.addObserver(of: context, for: .didSaveObjectIDsAsync) { message async in savedIDsAsync.append(message.insertedIDs) },
        ]
        let classic = center.addObserver(forName: .NSManagedObjectContextDidSave, object: context, queue: nil) { classicSaves.append($0) }
        defer {
            tokens.forEach { center.removeObserver($0) }
            center.removeObserver(classic)
        }

        let team = NSManagedObject(entity: model.entitiesByName["Team"]!, insertInto: context)
        team.setValue("Atlantis", forKey: "teamName")
        context.processPendingChanges()
        #expect(changes.messages.count == 1, "delivered while the notification is posted")
        #expect(changes.messages.first?.inserted == [team])
        #expect(changes.messages.first?.context === context)
        #expect(changes.messages.first?.invalidatedAll == nil)

        try context.save()
        #expect(willSaves.messages.count == 1)
        #expect(saves.messages.count == 1 && classicSaves.messages.count == 1, "one message and one notification a save")
        #expect(saves.messages.first?.inserted == [team])
        #expect(saves.messages.first?.updated.isEmpty == true && saves.messages.first?.deleted.isEmpty == true)
        #expect(savedIDs.messages.first?.insertedIDs == [team.objectID])
        #expect(team.objectID.isTemporaryID == false)
        #expect(try await eventually { savedIDsAsync.messages == [[team.objectID]] }, "the asynchronous message arrives too")

        team.setValue("Mu", forKey: "teamName")
        try context.save()
        #expect(saves.messages.last?.updated == [team])
        #expect(savedIDs.messages.last?.updatedIDs == [team.objectID])

        context.reset()
        #expect(changes.messages.last?.invalidatedAll == true)
    }

    @Test func aPrivateQueueContextSendsTheAsynchronousMessagesOnly() async throws {
        let (model, _, context) = try stack(.privateQueueConcurrencyType)
        let savedIDs = Inbox<NSManagedObjectContext.DidSaveObjectIDsAsyncMessage>()
        let mainActorSaves = Inbox<NSManagedObjectID>()
        let center = NotificationCenter.default
        let tokens = [
            center.addObserver(of: context, for: .didSaveObjectIDsAsync) { message async in savedIDs.append(message) },
            await MainActor.run {
                center.addObserver(of: context, for: .didSaveObjectIDs) { message in message.insertedIDs.forEach(mainActorSaves.append) }
            },
        ]
        defer { tokens.forEach { center.removeObserver($0) } }
        let id = try saveTeam(in: context, model)
        #expect(try await eventually { savedIDs.messages.count == 1 })
        #expect(savedIDs.messages.first?.insertedIDs == [id])
        #expect(savedIDs.messages.first?.context === context)
        #expect(mainActorSaves.messages.isEmpty, "main-actor messages are for main-queue contexts")
    }

    @Test func aMainQueueContextUsedFromAnotherThreadSendsTheAsynchronousMessagesOnly() async throws {
        let (model, _, context) = try stack(.mainQueueConcurrencyType)
        let mainActorSaves = Inbox<NSManagedObjectID>()
        let asyncSaves = Inbox<Set<NSManagedObjectID>>()
        let center = NotificationCenter.default
        let tokens = [
            await MainActor.run {
                center.addObserver(of: context, for: .didSave) { message in message.inserted.forEach { mainActorSaves.append($0.objectID) } }
            },
            center.addObserver(of: context, for: .didSaveObjectIDsAsync) { message async in asyncSaves.append(message.insertedIDs) },
        ]
        defer { tokens.forEach { center.removeObserver($0) } }
        let id = try saveTeam(in: context, model)
        #expect(try await eventually { asyncSaves.messages == [[id]] })
        #expect(mainActorSaves.messages.isEmpty, "off the main queue, nothing is posted for the main actor")
    }

    @Test @MainActor func mergingChangesSendsTheMergeMessages() async throws {
        let (model, coordinator, context) = try stack(.mainQueueConcurrencyType)
        let merges = Inbox<NSManagedObjectContext.DidMergeChangesMessage>()
        let asyncMerges = Inbox<Set<NSManagedObjectID>>()
        let center = NotificationCenter.default
        let tokens = [
            center.addObserver(of: context, for: .didMergeChanges) { merges.append($0) },
            center.addObserver(of: context, for: .didMergeChangesAsync) { message async in asyncMerges.append(message.insertedIDs) },
        ]
        defer { tokens.forEach { center.removeObserver($0) } }
        let other = TestSupport.context(coordinator, concurrencyType: .privateQueueConcurrencyType)
        let saved = Inbox<Notification>()
        let observer = center.addObserver(forName: .NSManagedObjectContextDidSave, object: other, queue: nil) { saved.append($0) }
        defer { center.removeObserver(observer) }
        let id = try saveTeam(in: other, model)
        context.mergeChanges(fromContextDidSave: try #require(saved.messages.first))
        #expect(merges.messages.count == 1)
        #expect(merges.messages.first?.insertedIDs == [id])
        #expect(try await eventually { asyncMerges.messages == [[id]] })
    }

    @Test @MainActor func messagesAndNotificationsConvertBothWays() throws {
        let (model, _, context) = try stack(.mainQueueConcurrencyType)
        let team = NSManagedObject(entity: model.entitiesByName["Team"]!, insertInto: context)
        try context.save()
        let ids: Set<NSManagedObjectID> = [team.objectID]
        let note = Notification(name: .NSManagedObjectContextDidSaveObjectIDs, object: context, userInfo: [
            NSInsertedObjectIDsKey: ids, NSUpdatedObjectIDsKey: Set<NSManagedObjectID>(), NSDeletedObjectIDsKey: Array(ids),
        ])
        let message = try #require(NSManagedObjectContext.DidSaveObjectIDsAsyncMessage.makeMessage(note))
        #expect(message.insertedIDs == ids && message.deletedIDs == ids && message.updatedIDs.isEmpty)
        #expect(message.refreshedIDs.isEmpty && message.invalidatedIDs.isEmpty && message.historyToken == nil)
        let back = NSManagedObjectContext.DidSaveObjectIDsAsyncMessage.makeNotification(message)
        #expect(back.name == .NSManagedObjectContextDidSaveObjectIDs)
        #expect(back.object as? NSManagedObjectContext === context)
        #expect(back.userInfo?[NSInsertedObjectIDsKey] as? Set<NSManagedObjectID> == ids)

        #expect(NSManagedObjectContext.DidSaveMessage.makeMessage(note) == nil, "another notification makes no message")
        #expect(NSManagedObjectContext.WillSaveMessage.makeMessage(Notification(name: .NSManagedObjectContextWillSave, object: nil)) == nil,
                "a notification without its context makes no message")
        let objects = Notification(name: .NSManagedObjectContextObjectsDidChange, object: context, userInfo: [NSRefreshedObjectsKey: [team]])
        let change = try #require(NSManagedObjectContext.ObjectsDidChangeMessage.makeMessage(objects))
        #expect(change.refreshed == [team] && change.inserted.isEmpty)
        #expect(NSManagedObjectContext.ObjectsDidChangeMessage.makeNotification(change).userInfo?[NSRefreshedObjectsKey] as? Set<NSManagedObject> == [team])
    }

    @Test @MainActor func aCoordinatorSendsItsStoreChanges() async throws {
        let model = try TestSupport.model("worldcup", "WorldCup")
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        let changes = Inbox<NSPersistentStoreCoordinator.StoresDidChangeMessage>()
        let asyncChanges = Inbox<[NSPersistentStore]>()
        let center = NotificationCenter.default
        let tokens = [
            center.addObserver(of: coordinator, for: .storesDidChange) { changes.append($0) },
            center.addObserver(of: coordinator, for: .storesDidChangeAsync) { message async in asyncChanges.append(message.addedStores + message.removedStores) },
        ]
        defer { tokens.forEach { center.removeObserver($0) } }
        let store = try coordinator.addPersistentStore(ofType: NSInMemoryStoreType, configurationName: nil, at: nil, options: nil)
        #expect(changes.messages.count == 1)
        #expect(changes.messages.first?.addedStores.first === store)
        #expect(changes.messages.first?.removedStores.isEmpty == true)
        #expect(changes.messages.first?.persistentStoreCoordinator === coordinator)
        #expect(changes.messages.first?.uuidChangedStores == nil)
        try coordinator.remove(store)
        #expect(changes.messages.last?.removedStores.first === store)
        #expect(try await eventually { asyncChanges.messages.count == 2 })
        #expect(asyncChanges.messages.allSatisfy { $0.first === store })
    }

    @Test func anotherCoordinatorsSaveSendsARemoteChangeMessage() async throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try TestSupport.model("worldcup", "WorldCup")
        let url = directory.appendingPathComponent("Remote.sqlite")
        let options: [AnyHashable: Any] = [
            NSPersistentHistoryTrackingKey: true as NSNumber,
            NSPersistentStoreRemoteChangeNotificationPostOptionKey: true as NSNumber,
            OCDRemoteChangePollingIntervalOptionKey: 0.02,
        ]
        let watching = NSPersistentStoreCoordinator(managedObjectModel: model)
        let store = try watching.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url, options: options)
        let received = Inbox<NSPersistentStoreCoordinator.RemoteChangeMessage>()
        let token = NotificationCenter.default.addObserver(of: watching, for: .remoteChange) { message async in received.append(message) }
        defer { NotificationCenter.default.removeObserver(token) }

        let (writer, _) = try TestSupport.coordinator(model, url: url)
        let context = TestSupport.context(writer)
        NSManagedObject(entity: model.entitiesByName["Team"]!, insertInto: context).setValue("Atlantis", forKey: "teamName")
        try context.save()
        #expect(try await eventually { !received.messages.isEmpty })
        let message = try #require(received.messages.first)
        #expect(message.storeURL.standardizedFileURL.path == url.standardizedFileURL.path)
        #expect(message.storeUUID == store.identifier)
        #expect(message.historyToken != nil)
        #expect(message.persistentStoreCoordinator === watching)
    }
}
