import Foundation
import OpenCoreData
import OpenCoreDataTestKit
import Testing

/// `NSPersistentStoreRemoteChange`: another coordinator or another process writes the store file;
/// the watching coordinator posts, history after the last token holds exactly that write, and
/// merging it updates a fetched results controller.
@MainActor
@Suite(.serialized) struct RemoteChangeTests {
    nonisolated static var options: [AnyHashable: Any] {
        [
            NSPersistentHistoryTrackingKey: true as NSNumber,
            NSPersistentStoreRemoteChangeNotificationPostOptionKey: true as NSNumber,
            OCDRemoteChangePollingIntervalOptionKey: 0.02,
        ]
    }

    /// Collects the remote-change notifications one coordinator posts.
    final class Inbox: @unchecked Sendable {
        private let received = LockedBox<[NSPersistentHistoryToken?]>([])
        private var observer: NSObjectProtocol?

        init(_ coordinator: NSPersistentStoreCoordinator) {
            observer = NotificationCenter.default.addObserver(forName: .NSPersistentStoreRemoteChange, object: coordinator, queue: nil) { [received] note in
                received.update { $0.append(note.userInfo?[NSPersistentHistoryTokenKey] as? NSPersistentHistoryToken) }
            }
        }

        deinit { if let observer { NotificationCenter.default.removeObserver(observer) } }

        var count: Int { received.value.count }
        var lastToken: NSPersistentHistoryToken? { received.value.last ?? nil }

        /// Waits (up to `patience`) until a notification carries a token other than `token`; returns it.
        func waitForToken(after token: NSPersistentHistoryToken?) async throws -> NSPersistentHistoryToken? {
            var other: NSPersistentHistoryToken?
            _ = try await eventually {
                other = lastToken.flatMap { $0 != token ? $0 : nil }
                return other != nil
            }
            return other
        }
    }

    final class LockedBox<Value>: @unchecked Sendable {
        private let lock = NSLock()
        private var stored: Value
        init(_ value: Value) { stored = value }
        var value: Value { lock.lock(); defer { lock.unlock() }; return stored }
        func update(_ body: (inout Value) -> Void) { lock.lock(); defer { lock.unlock() }; body(&stored) }
    }

    /// The watching side: a coordinator, a context and a fetched results controller over all teams by name.
    struct Watcher {
        let coordinator: NSPersistentStoreCoordinator
        let context: NSManagedObjectContext
        let controller: NSFetchedResultsController<NSManagedObject>
        let table: TestTableView
        let inbox: Inbox

        init(model: NSManagedObjectModel, url: URL) throws {
            coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
            try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url, options: RemoteChangeTests.options)
            inbox = Inbox(coordinator)
            context = TestSupport.context(coordinator, concurrencyType: .mainQueueConcurrencyType)
            context.transactionAuthor = "watcher"
            let request = NSFetchRequest<NSManagedObject>(entityName: "Team")
            request.sortDescriptors = [NSSortDescriptor(key: "teamName", ascending: true)]
            controller = NSFetchedResultsController(fetchRequest: request, managedObjectContext: context, sectionNameKeyPath: nil, cacheName: nil)
            table = TestTableView()
            controller.delegate = table
            try controller.performFetch()
            table.reload(from: controller)
        }

        /// Fetches the history after `token`, merges each transaction into the context, returns them.
        func catchUp(after token: NSPersistentHistoryToken?) throws -> [NSPersistentHistoryTransaction] {
            let result = try context.execute(NSPersistentHistoryChangeRequest.fetchHistory(after: token)) as? NSPersistentHistoryResult
            let transactions = try #require(result?.result as? [NSPersistentHistoryTransaction])
            for transaction in transactions { context.mergeChanges(fromContextDidSave: transaction.objectIDNotification()) }
            return transactions
        }

        var names: [String] { (controller.fetchedObjects ?? []).compactMap { $0.value(forKey: "teamName") as? String } }
    }

    private func model() throws -> NSManagedObjectModel { try TestSupport.model("worldcup", "WorldCup") }

    /// The catch-up loop of an app: wait for the notification, read history after the last token,
    /// merge, and check the controller's delegate saw exactly the change.
    private func expectCatchUp(_ watcher: Watcher, after token: inout NSPersistentHistoryToken?, author: String,
                               changes: [NSPersistentHistoryChangeType], log expected: String, names: [String],
                               sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let notified = try await watcher.inbox.waitForToken(after: token)
        #expect(notified != nil, "no NSPersistentStoreRemoteChange arrived", sourceLocation: sourceLocation)
        let logCount = watcher.table.log.count
        let transactions = try watcher.catchUp(after: token)
        #expect(transactions.count == 1, "exactly the other writer's transaction: \(transactions)", sourceLocation: sourceLocation)
        #expect(transactions.first?.author == author, sourceLocation: sourceLocation)
        #expect(transactions.first?.changes?.map(\.changeType) == changes, sourceLocation: sourceLocation)
        #expect(transactions.last?.token == notified, "the notification carries the latest transaction's token", sourceLocation: sourceLocation)
        let newLog = Array(watcher.table.log.dropFirst(logCount))
        #expect(newLog.contains { $0.hasPrefix(expected) }, "delegate saw \(newLog)", sourceLocation: sourceLocation)
        #expect(watcher.table.failures.isEmpty, "\(watcher.table.failures)", sourceLocation: sourceLocation)
        #expect(watcher.names == names, sourceLocation: sourceLocation)
        token = transactions.last?.token ?? token
    }

    @Test func anotherCoordinatorInThisProcess() async throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("Shared.sqlite")
        let model = try model()
        let watcher = try Watcher(model: model, url: url)

        let writer = NSPersistentStoreCoordinator(managedObjectModel: model)
        try writer.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url, options: [NSPersistentHistoryTrackingKey: true as NSNumber])
        let context = TestSupport.context(writer, concurrencyType: .mainQueueConcurrencyType)
        context.transactionAuthor = "writer"
        var token: NSPersistentHistoryToken?

        let team = NSManagedObject(entity: model.entitiesByName["Team"]!, insertInto: context)
        team.setValue("Atlantis", forKey: "teamName")
        try context.save()
        try await expectCatchUp(watcher, after: &token, author: "writer", changes: [.insert], log: "insert", names: ["Atlantis"])

        team.setValue(Int32(3), forKey: "wins")
        try context.save()
        try await expectCatchUp(watcher, after: &token, author: "writer", changes: [.update], log: "update", names: ["Atlantis"])
        #expect(watcher.controller.fetchedObjects?.first?.value(forKey: "wins") as? Int32 == 3)

        context.delete(team)
        try context.save()
        try await expectCatchUp(watcher, after: &token, author: "writer", changes: [.delete], log: "delete", names: [])
    }

    /// The pattern apps use: options on the container's store description, catch-up in a background context.
    @Test func containersWithDescriptionOptions() async throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try model()
        func container() throws -> NSPersistentContainer {
            let container = NSPersistentContainer(name: "WorldCup", managedObjectModel: model)
            let description = NSPersistentStoreDescription(url: directory.appendingPathComponent("Container.sqlite"))
            description.setOption(true as NSNumber, forKey: NSPersistentHistoryTrackingKey)
            description.setOption(true as NSNumber, forKey: NSPersistentStoreRemoteChangeNotificationPostOptionKey)
            container.persistentStoreDescriptions = [description]
            var failure: Error?
            container.loadPersistentStores { _, error in failure = error }
            if let failure { throw failure }
            return container
        }
        let app = try container(), extensionProcess = try container()
        let inbox = Inbox(app.persistentStoreCoordinator)
        let writer = extensionProcess.newBackgroundContext()
        writer.transactionAuthor = "extension"
        try writer.performAndWait {
            NSManagedObject(entity: model.entitiesByName["Team"]!, insertInto: writer).setValue("Shared", forKey: "teamName")
            try writer.save()
        }
        let token = try #require(try await inbox.waitForToken(after: nil))
        let reader = app.newBackgroundContext()
        let transactions = try reader.performAndWait {
            let result = try reader.execute(NSPersistentHistoryChangeRequest.fetchHistory(after: nil as NSPersistentHistoryToken?)) as? NSPersistentHistoryResult
            return result?.result as? [NSPersistentHistoryTransaction] ?? []
        }
        #expect(transactions.map(\.author) == ["extension"])
        #expect(transactions.last?.token == token)
        app.viewContext.performAndWait {
            for transaction in transactions { app.viewContext.mergeChanges(fromContextDidSave: transaction.objectIDNotification()) }
        }
        let request = NSFetchRequest<NSManagedObject>(entityName: "Team")
        #expect(try app.viewContext.fetch(request).compactMap { $0.value(forKey: "teamName") as? String } == ["Shared"])
    }

    @Test func ownSavesAreAnnouncedToo() async throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let model = try model()
        let watcher = try Watcher(model: model, url: directory.appendingPathComponent("Own.sqlite"))
        let team = NSManagedObject(entity: model.entitiesByName["Team"]!, insertInto: watcher.context)
        team.setValue("Home", forKey: "teamName")
        try watcher.context.save()
        let token = try await watcher.inbox.waitForToken(after: nil)
        #expect(token != nil)
        let result = try watcher.context.execute(NSPersistentHistoryChangeRequest.fetchHistory(after: nil as NSPersistentHistoryToken?)) as? NSPersistentHistoryResult
        #expect((result?.result as? [NSPersistentHistoryTransaction])?.last?.token == token)
    }

    @Test func removingTheStoreStopsTheNotifications() async throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("Removed.sqlite")
        let model = try model()
        let watcher = try Watcher(model: model, url: url)
        try watcher.coordinator.remove(watcher.coordinator.persistentStores[0])
        let writer = NSPersistentStoreCoordinator(managedObjectModel: model)
        try writer.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url, options: nil)
        let context = TestSupport.context(writer, concurrencyType: .mainQueueConcurrencyType)
        NSManagedObject(entity: model.entitiesByName["Team"]!, insertInto: context).setValue("Ghost", forKey: "teamName")
        try context.save()
        try await Task.sleep(for: .milliseconds(200))
        #expect(watcher.inbox.count == 0)
    }

    @Test func anotherProcess() async throws {
        let writerURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent("HistoryWriter")
        try #require(FileManager.default.isExecutableFile(atPath: writerURL.path), "build the HistoryWriter helper (swift build) first: \(writerURL.path)")
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("Processes.sqlite")
        let watcher = try Watcher(model: try model(), url: url)
        var token: NSPersistentHistoryToken?

        func runWriter(_ command: String) async throws {
            let process = Process()
            process.executableURL = writerURL
            process.arguments = [TestSupport.modelURL("worldcup", "WorldCup").path, url.path, "other-process", command]
            let errors = Pipe()
            process.standardError = errors
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            await process.exited()
            let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(process.terminationStatus == 0, "\(message)")
        }

        try await runWriter("insert:Team:teamName=Lemuria,wins=1")
        try await expectCatchUp(watcher, after: &token, author: "other-process", changes: [.insert], log: "insert", names: ["Lemuria"])
        try await runWriter("update:Team:teamName=Lemuria:wins=4")
        try await expectCatchUp(watcher, after: &token, author: "other-process", changes: [.update], log: "update", names: ["Lemuria"])
        #expect(watcher.controller.fetchedObjects?.first?.value(forKey: "wins") as? Int32 == 4)
        try await runWriter("delete:Team:teamName=Lemuria")
        try await expectCatchUp(watcher, after: &token, author: "other-process", changes: [.delete], log: "delete", names: [])
    }
}
