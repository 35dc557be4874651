//
//  KennelNewerAPITests.swift
//  KennelTests
//
//  Newer and less common spellings of Core Data's API, as apps write them.
//

import XCTest
#if canImport(CoreData)
import CoreData
#else
import OpenCoreData
#endif

/// Sections indexed by their first two letters instead of one.
class TwoLetterIndexController: NSFetchedResultsController<Dog> {
    override func sectionIndexTitle(forSectionName sectionName: String) -> String? {
        return String(sectionName.prefix(2))
    }
}

/// Reloads its table's section index when the controller's content changes.
class SectionIndexReloader: NSObject, NSFetchedResultsControllerDelegate {
    var indexTitles: [String] = []

    func controllerDidChangeContent(_ controller: NSFetchedResultsController<NSFetchRequestResult>) {
        indexTitles = controller.sectionIndexTitles
    }
}

/// The names of the dogs each save inserted, as a view model keeps them.
class SaveLog {
    var insertedNames: [[String]] = []
}

class KennelNewerAPITests: KennelTestCase {

    func makeContainer() -> NSPersistentContainer {
        let description = NSPersistentStoreDescription()
        description.url = URL(fileURLWithPath: "/dev/null")
        description.type = NSSQLiteStoreType
        let container = NSPersistentContainer(name: "Kennel", managedObjectModel: TestCoreDataStack.model)
        container.persistentStoreDescriptions = [description]
        return container
    }

    func testLoadingStoresWithAsyncAwait() async throws {
        let container = makeContainer()
        let description = try await container.loadPersistentStores()
        XCTAssertEqual(description.type, NSSQLiteStoreType)
        XCTAssertEqual(container.persistentStoreCoordinator.persistentStores.count, 1)

        let broken = makeContainer()
        let unreadable = NSPersistentStoreDescription(url: URL(fileURLWithPath: "/proc/version"))
        broken.persistentStoreDescriptions = [unreadable]
        do {
            _ = try await broken.loadPersistentStores()
            XCTFail("a file that isn't a store can't be loaded")
        } catch let error as NSError {
            XCTAssertEqual(error.domain, NSCocoaErrorDomain)
        }
    }

    func testAddingAStoreWithAsyncAwait() async throws {
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: TestCoreDataStack.model)
        let description = NSPersistentStoreDescription(url: URL(fileURLWithPath: "/dev/null"))
        let added = try await coordinator.addPersistentStore(with: description)
        XCTAssertTrue(added === description)
        XCTAssertEqual(coordinator.persistentStores.count, 1)
    }

    func testAConflictMadeForAMergePolicyTest() {
        let first = Dog(context: context)
        first.name = "Rex"
        let second = Dog(context: context)
        second.name = "Rex"
        let conflict = NSConstraintConflict(constraint: ["name"], database: nil, databaseSnapshot: nil,
                                            conflicting: [first, second], conflictingSnapshots: [[:], [:]])
        XCTAssertEqual(conflict.constraintValues["name"] as? String, "Rex")
        XCTAssertEqual(conflict.conflictingObjects.count, 2)
        XCTAssertNil(conflict.databaseObject)
    }

    func testContextsOfTheNewerConcurrencyTypes() throws {
        let container = makeContainer()
        container.loadPersistentStores { _, error in
            XCTAssertNil(error)
        }
        let background = NSManagedObjectContext(.privateQueue)
        background.persistentStoreCoordinator = container.persistentStoreCoordinator
        XCTAssertEqual(background.concurrencyType, .privateQueueConcurrencyType)
        XCTAssertEqual(NSManagedObjectContext(.mainQueue).concurrencyType, NSManagedObjectContextConcurrencyType.mainQueueConcurrencyType)
        let saved: Int = try background.performAndWait {
            let dog = Dog(context: background)
            dog.name = "Rex"
            try background.save()
            return try background.count(for: Dog.fetchRequest())
        }
        XCTAssertEqual(saved, 1)
    }

    func testSeveralKeysAtOnceAndSubscripts() throws {
        let dog = Dog(context: context)
        dog.setValuesForKeys(["name": "Rex", "weight": NSNumber(value: 12.5), "birthday": NSNull()])
        XCTAssertEqual(dog.name, "Rex")
        XCTAssertEqual(dog.weight, 12.5)
        XCTAssertNil(dog.birthday)
        dog["name"] = "Max"
        XCTAssertEqual(dog["name"] as? String, "Max")
        XCTAssertEqual(dog["weight"] as? Double, 12.5)
        try context.save()
    }

    func testAValidationErrorNamesTheObject() {
        let dog = Dog(context: context)
        dog.name = "  "
        do {
            try context.save()
            XCTFail("a blank name fails the save")
        } catch let error as CocoaError {
            XCTAssertTrue(error.validationObject as? Dog === dog)
            XCTAssertEqual(error.validationKey, "name")
        } catch {
            XCTFail("\(error)")
        }
    }

    func testASumThroughASwiftKeyPath() throws {
        for (name, weight) in [("Rex", 30.0), ("Fido", 12.5)] {
            let dog = Dog(context: context)
            dog.name = name
            dog.weight = weight
        }
        try context.save()
        let total = NSExpressionDescription()
        total.name = "total"
        total.expression = NSExpression(forFunction: "sum:", arguments: [NSExpression(forKeyPath: \Dog.weight)])
        total.expressionResultType = .doubleAttributeType
        let request = NSFetchRequest<NSDictionary>(entityName: "Dog")
        request.resultType = .dictionaryResultType
        request.propertiesToFetch = [total]
        let rows = try context.fetch(request)
        XCTAssertEqual(rows.first?["total"] as? Double, 42.5)
    }

    func testATransformerByName() {
        let isNil = ValueTransformer(forName: .isNilTransformerName)
        XCTAssertEqual(isNil?.transformedValue(nil) as? Bool, true)
        XCTAssertEqual(isNil?.transformedValue("Rex") as? Bool, false)
        XCTAssertNil(ValueTransformer(forName: NSValueTransformerName("NoSuchTransformer")))
    }

    func testABatchDeleteWhoseResultIsNotRead() throws {
        for name in ["Rex", "Fido"] {
            Dog(context: context).name = name
        }
        try context.save()
        try context.execute(NSBatchDeleteRequest(fetchRequest: NSFetchRequest<NSFetchRequestResult>(entityName: "Dog")))
        let background = coreDataStack.persistentContainer.newBackgroundContext()
        let remaining = try background.performAndWait {
            try background.count(for: Dog.fetchRequest())
        }
        XCTAssertEqual(remaining, 0)
    }

    func testABatchUpdateMergedIntoTheViewContext() throws {
        let rex = Dog(context: context)
        rex.name = "Rex"
        rex.weight = 30
        try context.save()
        let request = NSBatchUpdateRequest(entity: Dog.entity())
        XCTAssertEqual(request.entity.name, "Dog")
        request.propertiesToUpdate = ["weight": 28.5]
        request.resultType = .updatedObjectIDsResultType
        let result = try context.execute(request) as? NSBatchUpdateResult
        let objectIDs = result?.result as? [NSManagedObjectID] ?? []
        NSManagedObjectContext.mergeChanges(fromRemoteContextSave: [NSUpdatedObjectsKey: objectIDs], into: [context])
        XCTAssertEqual(rex.weight, 28.5)
    }

    func testObservingSavesThroughNotificationMessages() throws {
        let log = SaveLog()
        let token = NotificationCenter.default.addObserver(of: context, for: .didSave) { message in
            log.insertedNames.append(message.inserted.compactMap { ($0 as? Dog)?.name }.sorted())
        }
        defer { NotificationCenter.default.removeObserver(token) }
        Dog(context: context).name = "Rex"
        Dog(context: context).name = "Fido"
        try context.save()
        XCTAssertEqual(log.insertedNames, [["Fido", "Rex"]])
    }

    func testAnAsynchronousFetchWithoutACompletionBlock() throws {
        Dog(context: context).name = "Rex"
        try context.save()
        let background = coreDataStack.persistentContainer.newBackgroundContext()
        let result: NSAsynchronousFetchResult<Dog>? = try background.performAndWait {
            try background.execute(NSAsynchronousFetchRequest(fetchRequest: Dog.fetchRequest())) as? NSAsynchronousFetchResult<Dog>
        }
        let names = background.performAndWait { result?.finalResult?.map(\.name) }
        XCTAssertEqual(names, ["Rex"])
    }

    func testAControllerSubclassWithItsOwnSectionIndex() throws {
        for name in ["Rex", "Rover", "Fido"] {
            Dog(context: context).name = name
        }
        try context.save()
        let request: NSFetchRequest<Dog> = Dog.fetchRequest()
        request.sortDescriptors = [NSSortDescriptor(key: "name", ascending: true)]
        let controller = TwoLetterIndexController(fetchRequest: request, managedObjectContext: context, sectionNameKeyPath: "name", cacheName: nil)
        try controller.performFetch()
        XCTAssertEqual(controller.sectionIndexTitles, ["Fi", "Re", "Ro"])
        XCTAssertEqual(controller.sections?.map { $0.indexTitle }, ["Fi", "Re", "Ro"])
        XCTAssertEqual(controller.section(forSectionIndexTitle: "Ro", at: 2), 2)

        let reloader = SectionIndexReloader()
        controller.delegate = reloader
        Dog(context: context).name = "Bella"
        try context.save()
        XCTAssertEqual(reloader.indexTitles, ["Be", "Fi", "Re", "Ro"])
    }

    func testReadingAStoreDescriptionsOptions() {
        let description = NSPersistentStoreDescription(url: URL(fileURLWithPath: "/dev/null"))
        description.setOption(true as NSNumber, forKey: NSPersistentHistoryTrackingKey)
        description.setValue("DELETE" as NSString, forPragmaNamed: "journal_mode")
        let options: [String: NSObject] = description.options
        XCTAssertEqual(options[NSPersistentHistoryTrackingKey] as? NSNumber, true as NSNumber)
        XCTAssertEqual(description.sqlitePragmas["journal_mode"] as? String, "DELETE")
    }

    func testCountingThroughAFetchRequestExpression() throws {
        for name in ["Rex", "Rover", "Fido"] {
            Dog(context: context).name = name
        }
        try context.save()
        let request: NSFetchRequest<Dog> = Dog.fetchRequest()
        request.predicate = NSPredicate(format: "name BEGINSWITH %@", "R")
        let count = NSFetchRequestExpression.expression(forFetch: NSExpression(forConstantValue: request),
                                                        context: NSExpression(forConstantValue: context), countOnly: true)
        XCTAssertEqual(count.expressionValue(with: nil, context: nil) as? Int, 2)
        let dogs = NSFetchRequestExpression.expression(forFetch: NSExpression(forConstantValue: request),
                                                       context: NSExpression(forConstantValue: context), countOnly: false)
        let fetched = dogs.expressionValue(with: nil, context: nil) as? [Dog]
        XCTAssertEqual(fetched?.compactMap { $0.name }.sorted(), ["Rex", "Rover"])
    }

    /// The other test stack apps use: an in-memory store, fetched by relationship.
    func testAnInMemoryStoreFetchesAnOwnersDogs() throws {
        let description = NSPersistentStoreDescription()
        description.type = NSInMemoryStoreType
        let container = NSPersistentContainer(name: "Kennel", managedObjectModel: TestCoreDataStack.model)
        container.persistentStoreDescriptions = [description]
        container.loadPersistentStores { _, error in XCTAssertNil(error) }
        let context = container.viewContext

        let ann = Owner(context: context)
        ann.name = "Ann"
        let bob = Owner(context: context)
        bob.name = "Bob"
        for (name, owner) in [("Rex", ann), ("Fido", ann), ("Spot", bob), ("Stray", nil)] as [(String, Owner?)] {
            let dog = Dog(context: context)
            dog.name = name
            dog.owner = owner
        }
        try context.save()

        let request: NSFetchRequest<Dog> = Dog.fetchRequest()
        request.sortDescriptors = [NSSortDescriptor(key: "name", ascending: true)]
        request.predicate = NSPredicate(format: "owner == %@", ann)
        XCTAssertEqual(try context.fetch(request).map { $0.name }, ["Fido", "Rex"])
        request.predicate = NSPredicate(format: "%K IN %@", "owner", [bob])
        XCTAssertEqual(try context.fetch(request).map { $0.name }, ["Spot"])
        request.predicate = NSPredicate(format: "owner != %@", ann)
        XCTAssertEqual(try context.fetch(request).map { $0.name }, ["Spot", "Stray"])
        request.predicate = NSPredicate(format: "owner == %@", bob.objectID)
        XCTAssertEqual(try context.count(for: request), 1)
    }
}
