import Foundation
import OpenCoreData
import Testing

/// `NSAtomicStore` through stores written in the tests (`ShelfPlistStore`, `MemoryOnlyAtomicStore`):
/// the calls Core Data makes, the file read back by another coordinator, faults, relationships,
/// conflicts, metadata, and a failed `save()` changing nothing.
@Suite struct AtomicStoreSubclassTests {
    init() {
        ShelfPlistStore.register()
        NSPersistentStoreCoordinator.registerStoreClass(MemoryOnlyAtomicStore.self, forStoreType: MemoryOnlyAtomicStore.storeType)
        NSPersistentStoreCoordinator.registerStoreClass(IncompleteAtomicStore.self, forStoreType: IncompleteAtomicStore.storeType)
    }

    /// A coordinator with a shelf store at `url` (a new file in a new folder by default).
    func open(_ url: URL? = nil, model: NSManagedObjectModel = LibraryModel.make()) throws -> (NSPersistentStoreCoordinator, ShelfPlistStore, URL) {
        let url = url ?? TestSupport.temporaryDirectory().appendingPathComponent("shelf.plist")
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        let store = try coordinator.addPersistentStore(ofType: ShelfPlistStore.storeType, configurationName: nil, at: url, options: nil)
        return (coordinator, try #require(store as? ShelfPlistStore), url)
    }

    /// Two authors with two and one books, saved.
    func seed(_ context: NSManagedObjectContext) throws { try LibraryModel.seed(context) }

    func books(_ context: NSManagedObjectContext, _ format: String? = nil) throws -> [NSManagedObject] {
        let request = NSFetchRequest<NSManagedObject>(entityName: "Book")
        request.predicate = format.map { NSPredicate(format: $0) }
        request.sortDescriptors = [NSSortDescriptor(key: "title", ascending: true)]
        return try context.fetch(request)
    }

    @Test func savedObjectsAreWrittenAndReadBackByAnotherCoordinator() throws {
        let (coordinator, store, url) = try open()
        #expect(store.calls["load"] == 1)
        let context = TestSupport.context(coordinator)
        try seed(context)
        #expect(store.calls["newReferenceObject"] == 5)
        #expect(store.calls["newCacheNode"] == 5)
        #expect(store.calls["save"] == 1)
        #expect(store.cacheNodes().count == 5)
        let ursula = try #require(context.registeredObjects.first { $0.entity.name == "Author" && $0.value(forKey: "name") as? String == "Ursula" })
        #expect(!ursula.objectID.isTemporaryID)
        #expect(store.referenceObject(for: ursula.objectID) is Int)
        // Relationships between objects inserted together are nodes in the store's nodes.
        let node = try #require(store.cacheNode(for: ursula.objectID))
        #expect((node.value(forKey: "books") as? Set<NSAtomicStoreCacheNode>)?.count == 2)

        // A fresh coordinator reads the file; the store's UUID and integer references keep URIs.
        let (reader, readerStore, _) = try open(url)
        #expect(readerStore.identifier == store.identifier)
        let fresh = TestSupport.context(reader)
        let theirs = try books(fresh, "author.name == 'Ursula'")
        #expect(theirs.map { $0.value(forKey: "title") as? String } == ["Dispossessed", "Earthsea"])
        let author = try #require(theirs[0].value(forKey: "author") as? NSManagedObject)
        #expect(author.value(forKey: "born") as? Int64 == 1929)
        #expect(Set((author.value(forKey: "books") as? Set<NSManagedObject> ?? []).compactMap { $0.value(forKey: "title") as? String }) == ["Earthsea", "Dispossessed"])
        let sameAuthor = try #require(reader.managedObjectID(forURIRepresentation: ursula.objectID.uriRepresentation()))
        #expect(sameAuthor == author.objectID)

        // Counts and dictionaries are answered from the nodes too.
        let count = NSFetchRequest<NSManagedObject>(entityName: "Book")
        count.predicate = NSPredicate(format: "year > %d", 1970)
        #expect(try fresh.count(for: count) == 2)
        let titles = NSFetchRequest<NSDictionary>(entityName: "Book")
        titles.resultType = .dictionaryResultType
        titles.propertiesToFetch = ["title"]
        titles.sortDescriptors = [NSSortDescriptor(key: "year", ascending: false)]
        #expect(try fresh.fetch(titles).map { $0["title"] as? String } == ["Kindred", "Dispossessed", "Earthsea"])
    }

    @Test func updatesAndDeletesReachTheNodesAndTheFile() throws {
        let (coordinator, store, url) = try open()
        let context = TestSupport.context(coordinator)
        try seed(context)
        let updatesAfterSeed = store.calls["updateCacheNode"] ?? 0

        let all = try books(context)
        let kindred = try #require(all.first { $0.value(forKey: "title") as? String == "Kindred" })
        let earthsea = try #require(all.first { $0.value(forKey: "title") as? String == "Earthsea" })
        kindred.setValue("Kindred (1979)", forKey: "title")
        context.delete(earthsea)
        let deletedID = earthsea.objectID
        try context.save()
        #expect(store.removed == [deletedID])
        #expect(store.cacheNode(for: deletedID) == nil)
        // Kindred, and Ursula whose books lost one.
        #expect((store.calls["updateCacheNode"] ?? 0) - updatesAfterSeed == 2)

        let (reader, _, _) = try open(url)
        let fresh = TestSupport.context(reader)
        #expect(try books(fresh).map { $0.value(forKey: "title") as? String } == ["Dispossessed", "Kindred (1979)"])
        let ursula = try #require(try books(fresh, "title == 'Dispossessed'").first?.value(forKey: "author") as? NSManagedObject)
        #expect((ursula.value(forKey: "books") as? Set<NSManagedObject>)?.count == 1)
    }

    @Test func aFailedSaveChangesNothingAndCanBeRetried() throws {
        let (coordinator, store, url) = try open()
        let context = TestSupport.context(coordinator)
        try seed(context)
        let fileBefore = try Data(contentsOf: url)

        let kindred = try #require(try books(context, "title == 'Kindred'").first)
        let earthsea = try #require(try books(context, "title == 'Earthsea'").first)
        kindred.setValue("Renamed", forKey: "title")
        context.delete(earthsea)
        let extra = NSEntityDescription.insertNewObject(forEntityName: "Book", into: context)
        extra.setValue("Parable", forKey: "title")
        extra.setValue(Int64(1993), forKey: "year")
        store.failNextSave = NSError(domain: NSCocoaErrorDomain, code: 512, userInfo: [NSLocalizedDescriptionKey: "Disk full."])

        #expect(throws: (any Error).self) { try context.save() }
        #expect(try Data(contentsOf: url) == fileBefore)
        #expect(store.cacheNodes().count == 5)
        #expect(store.cacheNode(for: kindred.objectID)?.value(forKey: "title") as? String == "Kindred")
        #expect(store.cacheNode(for: earthsea.objectID) != nil)
        let other = TestSupport.context(coordinator)
        #expect(try books(other).map { $0.value(forKey: "title") as? String } == ["Dispossessed", "Earthsea", "Kindred"])

        // The context kept its changes: saving again writes them.
        try context.save()
        let (reader, _, _) = try open(url)
        #expect(try books(TestSupport.context(reader)).map { $0.value(forKey: "title") as? String } == ["Dispossessed", "Parable", "Renamed"])
    }

    @Test func aChangeSavedSinceTheObjectWasReadIsAConflict() throws {
        let (coordinator, _, _) = try open()
        try seed(TestSupport.context(coordinator))
        let first = TestSupport.context(coordinator)
        let second = TestSupport.context(coordinator)
        let mine = try #require(try books(first, "title == 'Kindred'").first)
        let theirs = try #require(try books(second, "title == 'Kindred'").first)
        #expect(theirs.value(forKey: "year") as? Int64 == 1979)
        mine.setValue("First", forKey: "title")
        try first.save()

        theirs.setValue(Int64(1980), forKey: "year")
        #expect {
            try second.save()
        } throws: { error in
            (error as NSError).code == NSManagedObjectMergeError
        }
        second.mergePolicy = NSMergeByPropertyObjectTrumpMergePolicy
        try second.save()
        let check = TestSupport.context(coordinator)
        let saved = try #require(try books(check, "year == 1980").first)
        #expect(saved.value(forKey: "title") as? String == "First")
    }

    @Test func metadataIsTheSubclasssAndAChangedModelIsRefused() throws {
        let (coordinator, store, url) = try open()
        try seed(TestSupport.context(coordinator))
        let metadata = try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: ShelfPlistStore.storeType, at: url)
        #expect(metadata[NSStoreUUIDKey] as? String == store.identifier)
        #expect(metadata[NSStoreTypeKey] as? String == ShelfPlistStore.storeType)
        #expect(LibraryModel.make().isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))

        var edited = metadata
        edited["note"] = "kept"
        try NSPersistentStoreCoordinator.setMetadata(edited, forPersistentStoreOfType: ShelfPlistStore.storeType, at: url)
        let (_, reopened, _) = try open(url)
        #expect(reopened.metadata["note"] as? String == "kept")

        // A model whose Book has another attribute doesn't match the file's version hashes.
        let changed = LibraryModel.make()
        let book = try #require(changed.entitiesByName["Book"])
        book.properties.append(NSAttributeDescription(name: "isbn", type: .stringAttributeType))
        #expect {
            _ = try open(url, model: changed)
        } throws: { error in
            (error as NSError).code == NSPersistentStoreIncompatibleVersionHashError
        }
    }

    @Test func aSubclassThatLeavesNodesToTheFrameworkWorks() throws {
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: LibraryModel.make())
        let added = try coordinator.addPersistentStore(ofType: MemoryOnlyAtomicStore.storeType, configurationName: nil,
                                                       at: URL(fileURLWithPath: "/dev/null"), options: nil)
        let store = try #require(added as? MemoryOnlyAtomicStore)
        let context = TestSupport.context(coordinator)
        try seed(context)
        // The default reference objects are UUID strings; the default nodes hold the values and
        // the destinations' nodes.
        let kindred = try #require(try books(context, "title == 'Kindred'").first)
        #expect(store.referenceObject(for: kindred.objectID) is String)
        let node = try #require(store.cacheNode(for: kindred.objectID))
        #expect(node.value(forKey: "year") as? Int64 == 1979)
        #expect((node.value(forKey: "author") as? NSAtomicStoreCacheNode)?.value(forKey: "name") as? String == "Octavia")

        let other = TestSupport.context(coordinator)
        let octavia = try #require(try books(other, "author.name == 'Octavia'").first?.value(forKey: "author") as? NSManagedObject)
        #expect((octavia.value(forKey: "books") as? Set<NSManagedObject>)?.count == 1)

        // A fetched results controller over the store, in sections by genre.
        let request = NSFetchRequest<NSManagedObject>(entityName: "Book")
        request.sortDescriptors = [NSSortDescriptor(key: "genre", ascending: true), NSSortDescriptor(key: "title", ascending: true)]
        let controller = NSFetchedResultsController(fetchRequest: request, managedObjectContext: other, sectionNameKeyPath: "genre", cacheName: nil)
        try controller.performFetch()
        #expect(controller.sections?.map(\.name) == ["fantasy", "sf"])
        #expect(controller.sections?.map(\.numberOfObjects) == [1, 2])
    }

    @Test func aSubclassWithoutLoadIsRefusedWithAnError() throws {
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: LibraryModel.make())
        #expect {
            _ = try coordinator.addPersistentStore(ofType: IncompleteAtomicStore.storeType, configurationName: nil,
                                                   at: URL(fileURLWithPath: "/dev/null"), options: nil)
        } throws: { error in
            (error as NSError).code == 134060 && "\(error)".contains("must override load()")
        }
        #expect(coordinator.persistentStores.isEmpty)
    }
}
