import Foundation
import OpenCoreData
import Testing

/// `NSIncrementalStore` through a store written in the tests (`LibraryJSONStore`): the calls Core
/// Data makes, and contexts, faults, relationships, the fetched results controller and merge
/// conflicts over it.
@Suite struct IncrementalStoreTests {
    init() { LibraryJSONStore.register() }

    /// A coordinator with a library store at `url` (a new file in a new folder by default).
    func open(_ url: URL? = nil) throws -> (NSPersistentStoreCoordinator, LibraryJSONStore, URL) {
        let url = url ?? TestSupport.temporaryDirectory().appendingPathComponent("library.json")
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: LibraryModel.make())
        let store = try coordinator.addPersistentStore(ofType: LibraryJSONStore.storeType, configurationName: nil, at: url, options: nil)
        return (coordinator, try #require(store as? LibraryJSONStore), url)
    }

    /// Two authors with two and one books, saved.
    func seed(_ context: NSManagedObjectContext) throws { try LibraryModel.seed(context) }

    @Test func aRegisteredClassIsTheStoreOfItsType() throws {
        let (coordinator, store, url) = try open()
        #expect(store.madeByOwnInitializer)
        #expect(store.type == LibraryJSONStore.storeType)
        #expect(store.url == url)
        #expect(store.persistentStoreCoordinator === coordinator)
        #expect(store.calls["loadMetadata"] == 1)
        #expect(store.identifier == store.metadata[NSStoreUUIDKey] as? String)
        #expect(NSPersistentStoreCoordinator.registeredStoreTypes[LibraryJSONStore.storeType] == LibraryJSONStore.self)
    }

    @Test func savedObjectsComeBackInAnotherCoordinatorAsFaultsFilledByTheStore() throws {
        let (coordinator, store, url) = try open()
        let context = TestSupport.context(coordinator)
        try seed(context)
        #expect(store.calls["save"] == 1)
        #expect(store.calls["obtainPermanentIDs"] == 1)  // Once for the save's authors and books.
        let saved = try #require(context.registeredObjects.first { $0.entity.name == "Author" })
        #expect(!saved.objectID.isTemporaryID)
        #expect(store.referenceObject(for: saved.objectID) is Int)

        // A fresh coordinator reads the file.
        let (reader, readerStore, _) = try open(url)
        let fresh = TestSupport.context(reader)
        let request = NSFetchRequest<NSManagedObject>(entityName: "Book")
        request.predicate = NSPredicate(format: "year < %d", 1975)
        request.sortDescriptors = [NSSortDescriptor(key: "title", ascending: true)]
        let books = try fresh.fetch(request)
        #expect(books.map { $0.value(forKey: "title") as? String } == ["Dispossessed", "Earthsea"])
        let loads = readerStore.calls["newValuesForObject"] ?? 0
        #expect(loads > 0)

        // A to-one from the node; the to-many from newValue(forRelationship:).
        let author = try #require(books[0].value(forKey: "author") as? NSManagedObject)
        #expect(author.value(forKey: "name") as? String == "Ursula")
        #expect(author.value(forKey: "born") as? Int64 == 1929)
        let written = try #require(author.value(forKey: "books") as? Set<NSManagedObject>)
        #expect(Set(written.compactMap { $0.value(forKey: "title") as? String }) == ["Earthsea", "Dispossessed"])
        #expect((readerStore.calls["newValueForRelationship"] ?? 0) >= 1)
    }

    @Test func everyFetchResultTypeGoesThroughExecute() throws {
        let (coordinator, _, _) = try open()
        let context = TestSupport.context(coordinator)
        try seed(context)
        let count = try context.count(for: NSFetchRequest<NSFetchRequestResult>(entityName: "Book"))
        #expect(count == 3)

        let ids = NSFetchRequest<NSManagedObjectID>(entityName: "Author")
        ids.resultType = .managedObjectIDResultType
        #expect(try context.fetch(ids).count == 2)

        let dictionaries = NSFetchRequest<NSDictionary>(entityName: "Book")
        dictionaries.resultType = .dictionaryResultType
        dictionaries.propertiesToFetch = ["title"]
        dictionaries.sortDescriptors = [NSSortDescriptor(key: "year", ascending: false)]
        let rows = try context.fetch(dictionaries)
        #expect(rows.compactMap { $0["title"] as? String } == ["Kindred", "Dispossessed", "Earthsea"])

        let limited = NSFetchRequest<NSManagedObject>(entityName: "Book")
        limited.sortDescriptors = [NSSortDescriptor(key: "year", ascending: true)]
        limited.fetchLimit = 1
        #expect(try context.fetch(limited).first?.value(forKey: "title") as? String == "Earthsea")
    }

    @Test func updatesAndDeletesReachTheFile() throws {
        let (coordinator, _, url) = try open()
        let context = TestSupport.context(coordinator)
        try seed(context)
        let request = NSFetchRequest<NSManagedObject>(entityName: "Author")
        request.predicate = NSPredicate(format: "name == %@", "Octavia")
        let octavia = try #require(try context.fetch(request).first)
        octavia.setValue(Int64(1946), forKey: "born")
        let ursula = try #require(try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Author")).first { $0.value(forKey: "name") as? String == "Ursula" })
        context.delete(ursula)  // Cascades to her two books.
        try context.save()

        let (reader, _, _) = try open(url)
        let fresh = TestSupport.context(reader)
        let authors = try fresh.fetch(NSFetchRequest<NSManagedObject>(entityName: "Author"))
        #expect(authors.map { $0.value(forKey: "born") as? Int64 } == [1946])
        #expect(try fresh.count(for: NSFetchRequest<NSFetchRequestResult>(entityName: "Book")) == 1)
    }

    @Test func aFetchedResultsControllerFollowsSaves() throws {
        let (coordinator, _, _) = try open()
        let context = TestSupport.context(coordinator)
        try seed(context)
        let request = NSFetchRequest<NSManagedObject>(entityName: "Book")
        request.sortDescriptors = [NSSortDescriptor(key: "genre", ascending: true), NSSortDescriptor(key: "title", ascending: true)]
        request.fetchBatchSize = 2
        let controller = NSFetchedResultsController(fetchRequest: request, managedObjectContext: context,
                                                    sectionNameKeyPath: "genre", cacheName: nil)
        let delegate = RecordingDelegate()
        controller.delegate = delegate
        try controller.performFetch()
        #expect(controller.sections?.map(\.name) == ["fantasy", "sf"])
        #expect(controller.sections?.map(\.numberOfObjects) == [1, 2])

        let book = NSEntityDescription.insertNewObject(forEntityName: "Book", into: context)
        book.setValue("Parable", forKey: "title")
        book.setValue(Int64(1993), forKey: "year")
        book.setValue("sf", forKey: "genre")
        try context.save()
        #expect(controller.sections?.map(\.numberOfObjects) == [1, 3])
        #expect(delegate.inserted == [IndexPath(item: 2, section: 1)])
        #expect(controller.object(at: IndexPath(item: 2, section: 1)) === book)
    }

    @Test func conflictsAreFoundFromNodeVersionsAndResolvedByTheMergePolicy() throws {
        let (coordinator, _, _) = try open()
        try seed(TestSupport.context(coordinator))
        let first = TestSupport.context(coordinator)
        let second = TestSupport.context(coordinator)
        let request = NSFetchRequest<NSManagedObject>(entityName: "Author")
        request.predicate = NSPredicate(format: "name == %@", "Octavia")
        let mine = try #require(try first.fetch(request).first)
        let theirs = try #require(try second.fetch(request).first)
        #expect(mine.value(forKey: "born") as? Int64 == 1947)
        #expect(theirs.value(forKey: "born") as? Int64 == 1947)

        mine.setValue("Octavia E.", forKey: "name")
        try first.save()
        theirs.setValue(Int64(1946), forKey: "born")
        // The default policy refuses: the store's node is a version ahead.
        let error = try #require(throws: NSError.self) { try second.save() }
        #expect(error.domain == NSCocoaErrorDomain && error.code == 133020)
        #expect((error.userInfo["conflictList"] as? [NSMergeConflict])?.count == 1)

        second.mergePolicy = NSMergeByPropertyObjectTrumpMergePolicy
        try second.save()
        let check = TestSupport.context(coordinator)
        let stored = try #require(try check.fetch(NSFetchRequest<NSManagedObject>(entityName: "Author")).first { ($0.value(forKey: "born") as? Int64) == 1946 })
        #expect(stored.value(forKey: "name") as? String == "Octavia E.")
    }

    @Test func aChangeBehindTheContextsBackIsAConflictToo() throws {
        let (coordinator, store, _) = try open()
        let context = TestSupport.context(coordinator)
        try seed(context)
        let octavia = try #require(try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Author")).first { $0.value(forKey: "name") as? String == "Octavia" })
        store.changeStored("Author", store.referenceObject(for: octavia.objectID) as! Int, "name", to: "O. E. Butler")
        octavia.setValue(Int64(1946), forKey: "born")
        context.mergePolicy = NSMergeByPropertyStoreTrumpMergePolicy
        try context.save()
        #expect(octavia.value(forKey: "name") as? String == "O. E. Butler")
        #expect(octavia.value(forKey: "born") as? Int64 == 1946)
    }

    @Test func theStoreHearsWhichObjectsContextsUse() throws {
        let (coordinator, store, _) = try open()
        try seed(TestSupport.context(coordinator))
        let context = TestSupport.context(coordinator)
        let authors = try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Author"))
        #expect(Set(store.inUse.keys) == Set(authors.map(\.objectID)))
        context.reset()
        #expect(store.inUse.isEmpty)
    }

    @Test func referenceObjectsOfAnyHashableKindMakeStableIDs() throws {
        let (coordinator, store, _) = try open()
        let entity = try #require(coordinator.managedObjectModel.entitiesByName["Author"])
        let byString = store.newObjectID(for: entity, referenceObject: "ursula")
        #expect(byString == store.newObjectID(for: entity, referenceObject: "ursula"))
        #expect(byString != store.newObjectID(for: entity, referenceObject: "octavia"))
        #expect(store.referenceObject(for: byString) as? String == "ursula")
        let byNumber = store.newObjectID(for: entity, referenceObject: 42)
        #expect(store.referenceObject(for: byNumber) as? Int == 42)
        #expect(byNumber.uriRepresentation().lastPathComponent == "p42")
        #expect(coordinator.managedObjectID(forURIRepresentation: byNumber.uriRepresentation()) == byNumber)
    }

    @Test func anUnregisteredTypeIsUnknownAgain() throws {
        NSPersistentStoreCoordinator.registerStoreClass(NoMetadataStore.self, forStoreType: "ForgottenTest")
        #expect(NSPersistentStoreCoordinator.registeredStoreTypes["ForgottenTest"] != nil)
        NSPersistentStoreCoordinator.registerStoreClass(nil, forStoreType: "ForgottenTest")
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: LibraryModel.make())
        let error = try #require(throws: NSError.self) {
            try coordinator.addPersistentStore(ofType: "ForgottenTest", configurationName: nil, at: URL(fileURLWithPath: "/dev/null"), options: nil)
        }
        #expect(error.domain == NSCocoaErrorDomain && error.code == 134000)
    }

    @Test func aStoreWithoutItsIdentifierIsRefusedWithCoreDataError() throws {
        NSPersistentStoreCoordinator.registerStoreClass(NoMetadataStore.self, forStoreType: NoMetadataStore.storeType)
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: LibraryModel.make())
        let error = try #require(throws: NSError.self) {
            try coordinator.addPersistentStore(ofType: NoMetadataStore.storeType, configurationName: nil, at: URL(fileURLWithPath: "/dev/null"), options: nil)
        }
        #expect(error.domain == NSCocoaErrorDomain && error.code == 134000)
        #expect(coordinator.persistentStores.isEmpty)
    }

    @Test func aBatchRequestReachesExecuteAndItsRefusalIsThrown() throws {
        let (coordinator, store, _) = try open()
        let context = TestSupport.context(coordinator)
        try seed(context)
        let update = NSBatchUpdateRequest(entityName: "Book")
        update.propertiesToUpdate = ["genre": "classic"]
        let error = try #require(throws: NSError.self) { try context.execute(update) }
        #expect(error.domain == NSCocoaErrorDomain && error.code == 134091)
        #expect(store.calls["save"] == 1)
    }

    @Test func aWrongValueFromTheStoreIsAThrownError() throws {
        let (coordinator, store, _) = try open()
        let context = TestSupport.context(coordinator)
        try seed(context)
        let fresh = TestSupport.context(coordinator)
        let octavia = try #require(try fresh.fetch(NSFetchRequest<NSManagedObject>(entityName: "Author")).first { $0.value(forKey: "name") as? String == "Octavia" })
        store.changeStored("Author", store.referenceObject(for: octavia.objectID) as! Int, "born", to: "nineteen forty-seven")
        let other = TestSupport.context(coordinator)
        let error = try #require(throws: NSError.self) { _ = try other.existingObject(with: octavia.objectID) }
        #expect(error.domain == NSCocoaErrorDomain && error.code == 134010)
    }
}

/// Records the controller's inserts.
final class RecordingDelegate: NSObject, NSFetchedResultsControllerDelegate {
    var inserted: [IndexPath] = []
    func controller(_ controller: NSFetchedResultsController<NSFetchRequestResult>, didChange anObject: Any, at indexPath: IndexPath?,
                    for type: NSFetchedResultsChangeType, newIndexPath: IndexPath?) {
        if type == .insert, let newIndexPath { inserted.append(newIndexPath) }
    }
}

/// A store that forgets to set its metadata's identifier.
final class NoMetadataStore: NSIncrementalStore {
    static let storeType = "NoMetadataTest"
    override func loadMetadata() throws { metadata = [NSStoreTypeKey: Self.storeType] }
}
