import Foundation
import OpenCoreData
import Testing

/// Query generations: a pinned context reads the store as it was when its generation was fixed,
/// whatever other contexts and coordinators save, until it saves, is reset or merges.
@Suite struct QueryGenerationTests {
    /// A store file of notes (`PersistentHistoryTests.makeModel()`), with `count` notes saved.
    private struct Store {
        let directory: URL
        let url: URL
        let coordinator: NSPersistentStoreCoordinator

        init(notes count: Int = 2, options: [AnyHashable: Any]? = nil) throws {
            directory = TestSupport.temporaryDirectory()
            url = directory.appendingPathComponent("Notes.sqlite")
            coordinator = try Self.coordinator(url, options: options)
            let writer = TestSupport.context(coordinator)
            for index in 0..<count { _ = PersistentHistoryTests.insertNote(writer, "note \(index)", rank: Int64(index)) }
            try writer.save()
        }

        static func coordinator(_ url: URL, options: [AnyHashable: Any]? = nil) throws -> NSPersistentStoreCoordinator {
            let coordinator = NSPersistentStoreCoordinator(managedObjectModel: PersistentHistoryTests.makeModel())
            try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url, options: options)
            return coordinator
        }

        func context() -> NSManagedObjectContext { TestSupport.context(coordinator) }

        /// The titles a fetch reads (registered objects take the values read, so that what is
        /// compared is what the context's generation holds).
        func titles(_ context: NSManagedObjectContext) throws -> [String] {
            let request = NSFetchRequest<NSManagedObject>(entityName: "Note")
            request.sortDescriptors = [NSSortDescriptor(key: "rank", ascending: true)]
            request.shouldRefreshRefetchedObjects = true
            return try context.fetch(request).compactMap { $0.value(forKey: "title") as? String }
        }

        /// Saves, through a context of its own: a new note, a changed title, a deleted note.
        func changeEverything(through coordinator: NSPersistentStoreCoordinator? = nil) throws {
            let writer = TestSupport.context(coordinator ?? self.coordinator)
            let request = NSFetchRequest<NSManagedObject>(entityName: "Note")
            request.sortDescriptors = [NSSortDescriptor(key: "rank", ascending: true)]
            let notes = try writer.fetch(request)
            notes[0].setValue("renamed", forKey: "title")
            writer.delete(notes[1])
            _ = PersistentHistoryTests.insertNote(writer, "added", rank: 9)
            try writer.save()
        }
    }

    @Test func aPinnedContextKeepsReadingItsGeneration() throws {
        let store = try Store()
        defer { try? FileManager.default.removeItem(at: store.directory) }
        let pinned = store.context()
        #expect(pinned.queryGenerationToken == nil, "unpinned by default")
        try pinned.setQueryGenerationFrom(.current)
        let faults = try pinned.fetch(NSFetchRequest<NSManagedObject>(entityName: "Note"))
        #expect(faults.allSatisfy { $0.isFault })
        #expect(pinned.queryGenerationToken != nil)

        try store.changeEverything()
        // Another coordinator on the same file, as another process would.
        let other = try Store.coordinator(store.url)
        let otherWriter = TestSupport.context(other)
        _ = PersistentHistoryTests.insertNote(otherWriter, "from elsewhere", rank: 10)
        try otherWriter.save()

        let titles = faults.map { $0.value(forKey: "title") as? String }
        #expect(Set(titles.compactMap { $0 }) == ["note 0", "note 1"], "faults fire from the generation, the deleted note's too")
        #expect(try store.titles(pinned) == ["note 0", "note 1"], "fetches see the generation")
        #expect(try pinned.count(for: NSFetchRequest<NSFetchRequestResult>(entityName: "Note")) == 2)
        let unpinned = store.context()
        #expect(try store.titles(unpinned) == ["renamed", "added", "from elsewhere"], "an unpinned context sees the store as it is")
    }

    @Test func anotherContextCanPinToTheSameGeneration() throws {
        let store = try Store()
        defer { try? FileManager.default.removeItem(at: store.directory) }
        let first = store.context()
        try first.setQueryGenerationFrom(.current)
        let token = try #require(first.queryGenerationToken, "asking for the token fixes the generation")
        try store.changeEverything()

        let second = store.context()
        try second.setQueryGenerationFrom(token)
        #expect(second.queryGenerationToken == token)
        #expect(token.copy() as? NSQueryGenerationToken == token)
        #expect(try store.titles(second) == ["note 0", "note 1"])
        #expect(try store.titles(first) == ["note 0", "note 1"])

        let third = store.context()
        try third.setQueryGenerationFrom(.current)
        #expect(try store.titles(third) == ["renamed", "added"])
        #expect(third.queryGenerationToken != token, "a later generation")

        try second.setQueryGenerationFrom(nil)
        #expect(second.queryGenerationToken == nil)
        #expect(try store.titles(second) == ["renamed", "added"], "unpinned, it reads the store as it is")
    }

    @Test func savingResettingAndMergingMoveToTheNewestGeneration() throws {
        let store = try Store()
        defer { try? FileManager.default.removeItem(at: store.directory) }
        let pinned = store.context()
        try pinned.setQueryGenerationFrom(.current)
        #expect(try store.titles(pinned) == ["note 0", "note 1"])

        // A merge of another context's save.
        let writer = store.context()
        let note = PersistentHistoryTests.insertNote(writer, "merged", rank: 5)
        let writerSaves = SavedNotes()
        let observer = NotificationCenter.default.addObserver(forName: .NSManagedObjectContextDidSave, object: writer, queue: nil) { writerSaves.add($0) }
        try writer.save()
        NotificationCenter.default.removeObserver(observer)
        #expect(try store.titles(pinned) == ["note 0", "note 1"])
        pinned.mergeChanges(fromContextDidSave: try #require(writerSaves.first))
        #expect(try store.titles(pinned) == ["note 0", "note 1", "merged"])

        // A reset.
        writer.delete(note)
        try writer.save()
        #expect(try store.titles(pinned) == ["note 0", "note 1", "merged"])
        pinned.reset()
        #expect(try store.titles(pinned) == ["note 0", "note 1"])

        // Its own save, whose did-save notification carries the new generation's token.
        try store.changeEverything()
        let mine = PersistentHistoryTests.insertNote(pinned, "mine", rank: 7)
        let pinnedSaves = SavedNotes()
        let tokenObserver = NotificationCenter.default.addObserver(forName: .NSManagedObjectContextDidSave, object: pinned, queue: nil) { pinnedSaves.add($0) }
        try pinned.save()
        NotificationCenter.default.removeObserver(tokenObserver)
        let token = pinnedSaves.first?.userInfo?[NSManagedObjectContextQueryGenerationKey] as? NSQueryGenerationToken
        #expect(token != nil && token == pinned.queryGenerationToken)
        #expect(try store.titles(pinned) == ["renamed", "mine", "added"])
        #expect(!mine.objectID.isTemporaryID)
    }

    @Test func storesThatCantKeepAGenerationAreReadAsTheyAre() throws {
        for options in [nil, [NSSQLitePragmasOption: ["journal_mode": "DELETE"]]] as [[AnyHashable: Any]?] {
            let coordinator = NSPersistentStoreCoordinator(managedObjectModel: PersistentHistoryTests.makeModel())
            let directory = TestSupport.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let url = options == nil ? URL(fileURLWithPath: "/dev/null") : directory.appendingPathComponent("Delete.sqlite")
            try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url, options: options)
            let pinned = TestSupport.context(coordinator)
            try pinned.setQueryGenerationFrom(.current)
            #expect(pinned.queryGenerationToken == nil, "no store here can keep a generation")
            let writer = TestSupport.context(coordinator)
            _ = PersistentHistoryTests.insertNote(writer, "visible")
            try writer.save()
            #expect(try pinned.count(for: NSFetchRequest<NSFetchRequestResult>(entityName: "Note")) == 1)
        }
    }

    @Test func misusesAreThrownErrors() throws {
        let store = try Store()
        defer { try? FileManager.default.removeItem(at: store.directory) }
        let parent = store.context()
        try parent.setQueryGenerationFrom(.current)
        let token = try #require(parent.queryGenerationToken)

        let child = NSManagedObjectContext(concurrencyType: .confinementConcurrencyType)
        child.parent = parent
        #expect(child.queryGenerationToken == token, "a child reads through its parent")
        #expect { try child.setQueryGenerationFrom(.current) } throws: { ($0 as NSError).code == NSPersistentStoreUnsupportedRequestTypeError }

        let elsewhere = try Store(notes: 0)
        defer { try? FileManager.default.removeItem(at: elsewhere.directory) }
        let stranger = elsewhere.context()
        #expect { try stranger.setQueryGenerationFrom(token) } throws: { ($0 as NSError).code == NSPersistentStoreUnsupportedRequestTypeError }
        #expect(stranger.queryGenerationToken == nil, "a refused token leaves the context as it was")
    }

    @Test func aControllerOfAPinnedContextShowsItsGeneration() throws {
        let store = try Store()
        defer { try? FileManager.default.removeItem(at: store.directory) }
        let pinned = store.context()
        try pinned.setQueryGenerationFrom(.current)
        _ = try store.titles(pinned)
        try store.changeEverything()

        let request = NSFetchRequest<NSManagedObject>(entityName: "Note")
        request.sortDescriptors = [NSSortDescriptor(key: "rank", ascending: true)]
        request.fetchBatchSize = 20
        let controller = NSFetchedResultsController(fetchRequest: request, managedObjectContext: pinned,
                                                    sectionNameKeyPath: nil, cacheName: "QueryGenerationTests-\(UUID().uuidString)")
        try controller.performFetch()
        #expect(controller.fetchedObjects?.compactMap { $0.value(forKey: "title") as? String } == ["note 0", "note 1"])
    }
}
