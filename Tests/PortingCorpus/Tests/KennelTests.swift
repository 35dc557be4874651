//
//  KennelTests.swift
//  KennelTests
//

import XCTest
#if canImport(CoreData)
import CoreData
#else
import OpenCoreData
#endif

class KennelTests: KennelTestCase {

    @discardableResult
    func makeDog(_ name: String, weight: Double, owner: Owner? = nil) -> Dog {
        let dog = Dog(context: context)
        dog.name = name
        dog.weight = weight
        dog.owner = owner
        return dog
    }

    func testInsertAndFetchWithGeneratedClasses() throws {
        let owner = Owner(context: context)
        owner.name = "Ada"
        owner.age = 36
        owner.isVerified = true
        owner.rating = NSNumber(value: 4.5)
        owner.balance = NSDecimalNumber(string: "120.50")
        let rex = makeDog("Rex", weight: 30.5, owner: owner)
        rex.birthday = Date(timeIntervalSince1970: 1_500_000_000)
        rex.chipID = UUID()
        XCTAssertTrue(rex.isGoodBoy, "the model's default value")
        try context.save()

        let request: NSFetchRequest<Owner> = Owner.fetchRequest()
        request.predicate = NSPredicate(format: "isVerified == YES AND age > %@", NSNumber(value: 30))
        let owners = try context.fetch(request)
        XCTAssertEqual(owners.count, 1)
        XCTAssertEqual(owners.first?.age?.intValue, 36)
        XCTAssertEqual(owners.first?.isVerified?.boolValue, true)
        XCTAssertEqual(owners.first?.rating?.floatValue, 4.5)
        XCTAssertEqual(owners.first?.balance, NSDecimalNumber(string: "120.50"))
        XCTAssertEqual(owners.first?.dogs?.count, 1)
        XCTAssertEqual((owners.first?.dogs?.anyObject() as? Dog)?.name, "Rex")
    }

    func testOrderedToManyAccessors() throws {
        let dog = makeDog("Fido", weight: 12)
        let morning = Walk(context: context)
        morning.date = Date(timeIntervalSince1970: 0)
        morning.distance = 2.5
        let evening = Walk(context: context)
        evening.date = Date(timeIntervalSince1970: 3600)
        evening.distance = NSNumber(value: 1.25)
        evening.steps = NSNumber(value: 3_000)

        dog.addToWalks(morning)
        dog.insertIntoWalks(evening, at: 0)
        XCTAssertEqual(dog.walks?.count, 2)
        XCTAssertEqual(dog.walks?.firstObject as? Walk, evening)
        XCTAssertEqual(morning.dog, dog)

        let noon = Walk(context: context)
        let night = Walk(context: context)
        dog.insertIntoWalks([noon, night], at: NSIndexSet(indexesIn: NSRange(location: 1, length: 2)))
        XCTAssertEqual(dog.walks?.array as? [Walk], [evening, noon, night, morning])
        let late = Walk(context: context)
        dog.replaceWalks(at: NSIndexSet(index: 2), with: [late])
        dog.removeFromWalks(at: NSIndexSet(indexesIn: NSRange(location: 1, length: 2)))
        XCTAssertEqual(dog.walks?.array as? [Walk], [evening, morning])
        XCTAssertNil(late.dog)

        if let walks = dog.walks?.mutableCopy() as? NSMutableOrderedSet {
            walks.removeObject(at: 0)
            dog.walks = walks
        }
        try context.save()
        XCTAssertEqual(dog.walks?.count, 1)
        XCTAssertNil(evening.dog)
        XCTAssertEqual((dog.walks?.firstObject as? Walk)?.distance?.doubleValue, 2.5)
    }

    func testKeyValueCodingWithNSNumber() throws {
        let dog = NSEntityDescription.insertNewObject(forEntityName: "Dog", into: context)
        dog.setValue("Bolt", forKey: "name")
        dog.setValue(NSNumber(value: 22), forKey: "weight")
        dog.setValue(NSNumber(value: false), forKey: "isGoodBoy")
        let walk = NSEntityDescription.insertNewObject(forEntityName: "Walk", into: context)
        walk.setValue(NSNumber(value: 10_000), forKey: "steps")
        walk.setValue(dog, forKey: "dog")
        try context.save()

        XCTAssertTrue(dog is Dog, "the class is found from representedClassName")
        XCTAssertEqual((dog as? Dog)?.weight, 22)
        XCTAssertEqual((dog as? Dog)?.isGoodBoy, false)
        XCTAssertEqual((walk as? Walk)?.steps?.int64Value, 10_000)
        XCTAssertEqual(dog.value(forKey: "weight") as? Double, 22)
        XCTAssertEqual(dog.mutableOrderedSetValue(forKey: "walks").count, 1)
    }

    func testDictionaryAndCountResults() throws {
        let ada = Owner(context: context)
        ada.name = "Ada"
        let bob = Owner(context: context)
        bob.name = "Bob"
        makeDog("A", weight: 10, owner: ada)
        makeDog("B", weight: 20, owner: ada)
        makeDog("C", weight: 5, owner: bob)
        try context.save()

        let countRequest = NSFetchRequest<NSNumber>(entityName: "Dog")
        countRequest.resultType = .countResultType
        countRequest.predicate = NSPredicate(format: "weight >= %f", 10.0)
        let count = try context.fetch(countRequest).first?.intValue
        XCTAssertEqual(count, 2)
        XCTAssertEqual(try context.count(for: Dog.fetchRequest()), 3)

        let sum = NSExpressionDescription()
        sum.name = "totalWeight"
        sum.expression = NSExpression(forFunction: "sum:", arguments: [NSExpression(forKeyPath: "weight")])
        sum.expressionResultType = .doubleAttributeType
        let request = NSFetchRequest<NSFetchRequestResult>(entityName: "Dog")
        request.resultType = .dictionaryResultType
        request.propertiesToFetch = ["owner.name", sum]
        request.propertiesToGroupBy = ["owner.name"]
        request.sortDescriptors = [NSSortDescriptor(key: "owner.name", ascending: true)]
        let rows = try context.fetch(request) as! [NSDictionary]
        XCTAssertEqual(rows.count, 2)
        XCTAssertEqual(rows[0]["owner.name"] as? String, "Ada")
        XCTAssertEqual((rows[0]["totalWeight"] as? NSNumber)?.doubleValue, 30)
    }

    func testChildContextEditAndDiscard() throws {
        let dog = makeDog("Rex", weight: 30)
        try context.save()

        let childContext = NSManagedObjectContext(concurrencyType: .mainQueueConcurrencyType)
        childContext.parent = context
        let childDog = childContext.object(with: dog.objectID) as! Dog
        childDog.name = "Rex II"
        XCTAssertTrue(childContext.hasChanges)
        // Cancel: the edit is thrown away with the child context.
        childContext.rollback()
        XCTAssertEqual(childDog.name, "Rex")

        childDog.weight = 31
        try childContext.save()
        XCTAssertEqual(dog.weight, 31, "the parent sees the child's saved change")
        XCTAssertTrue(context.hasChanges)
        context.rollback()
        XCTAssertEqual(dog.weight, 30)
    }

    func testBackgroundSaveMergesIntoViewContext() throws {
        let dog = makeDog("Rex", weight: 30)
        try context.save()
        let saved = expectation(forNotification: .NSManagedObjectContextDidSave, object: nil, handler: nil)
        let background = coreDataStack.persistentContainer.newBackgroundContext()
        background.perform {
            let backgroundDog = background.object(with: dog.objectID) as! Dog
            backgroundDog.weight = 28
            try? background.save()
        }
        wait(for: [saved], timeout: 10)
        // The view context merges on the main queue: let it run until the change arrives.
        let deadline = Date().addingTimeInterval(10)
        while dog.weight != 28 && Date() < deadline {
            RunLoop.current.run(until: Date().addingTimeInterval(0.01))
        }
        XCTAssertEqual(dog.weight, 28)
    }

    func makeHistoryTrackingContainer(storeURL: URL) -> NSPersistentContainer {
        let description = NSPersistentStoreDescription(url: storeURL)
        description.setOption(true as NSNumber, forKey: NSPersistentHistoryTrackingKey)
        let container = NSPersistentContainer(name: "Kennel", managedObjectModel: TestCoreDataStack.model)
        container.persistentStoreDescriptions = [description]
        container.loadPersistentStores { _, error in
            XCTAssertNil(error)
        }
        return container
    }

    func testHistoryFromOtherAuthorsIsMergedIntoTheViewContext() throws {
        let storeURL = FileManager.default.temporaryDirectory.appendingPathComponent("KennelHistory-\(UUID().uuidString).sqlite")
        let container = makeHistoryTrackingContainer(storeURL: storeURL)
        defer {
            try? container.persistentStoreCoordinator.destroyPersistentStore(at: storeURL, ofType: NSSQLiteStoreType, options: nil)
        }
        container.viewContext.transactionAuthor = "app"
        try container.viewContext.setQueryGenerationFrom(.current)
        let processor = HistoryProcessor(container: container, appTransactionAuthorName: "app")

        let rex = Dog(context: container.viewContext)
        rex.name = "Rex"
        try container.viewContext.save()

        let importer = container.newBackgroundContext()
        importer.transactionAuthor = "importer"
        var fidoID: NSManagedObjectID?
        importer.performAndWait {
            let fido = Dog(context: importer)
            fido.name = "Fido"
            try? importer.save()
            fidoID = fido.objectID
        }

        let dogs: NSFetchRequest<Dog> = Dog.fetchRequest()
        XCTAssertEqual(try container.viewContext.count(for: dogs), 1, "the pinned view context doesn't see the import yet")

        let merged = processor.processPersistentHistory()
        XCTAssertEqual(merged.map { $0.author }, ["importer"])
        XCTAssertEqual(merged.first?.changes?.map { $0.changedObjectID }, [fidoID!])
        let fido = try container.viewContext.existingObject(with: fidoID!) as? Dog
        XCTAssertEqual(fido?.name, "Fido")
        XCTAssertEqual(try container.viewContext.count(for: dogs), 2, "merging moved it to the newest generation")
        XCTAssertTrue(processor.processPersistentHistory().isEmpty, "nothing new after the last token")
    }

    func testHistoryTokenIsKeptAcrossLaunches() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("KennelToken-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: nil)
        defer { try? FileManager.default.removeItem(at: directory) }
        let storeURL = directory.appendingPathComponent("Kennel.sqlite")
        let tokenFile = directory.appendingPathComponent("token.data", isDirectory: false)
        let container = makeHistoryTrackingContainer(storeURL: storeURL)
        container.viewContext.transactionAuthor = "app"

        let importer = container.newBackgroundContext()
        importer.transactionAuthor = "importer"
        importer.performAndWait {
            let fido = Dog(context: importer)
            fido.name = "Fido"
            try? importer.save()
        }
        let firstLaunch = HistoryProcessor(container: container, appTransactionAuthorName: "app", tokenFile: tokenFile)
        XCTAssertEqual(firstLaunch.processPersistentHistory().count, 1)
        XCTAssertTrue(FileManager.default.fileExists(atPath: tokenFile.path))

        let secondLaunch = HistoryProcessor(container: container, appTransactionAuthorName: "app", tokenFile: tokenFile)
        XCTAssertEqual(secondLaunch.lastHistoryToken, firstLaunch.lastHistoryToken)
        XCTAssertTrue(secondLaunch.processPersistentHistory().isEmpty, "the saved token resumes after what was merged")
        importer.performAndWait {
            let rex = Dog(context: importer)
            rex.name = "Rex"
            try? importer.save()
        }
        XCTAssertEqual(secondLaunch.processPersistentHistory().count, 1)

        try Data("not a token".utf8).write(to: tokenFile)
        let damaged = HistoryProcessor(container: container, appTransactionAuthorName: "app", tokenFile: tokenFile)
        XCTAssertNil(damaged.lastHistoryToken, "a damaged token file is reported, not a crash")
    }

    func testConflictingSaveIsReportedAsCocoaError() throws {
        let dog = makeDog("Rex", weight: 30)
        try context.save()
        let container = coreDataStack.persistentContainer
        let editor = container.newBackgroundContext()
        let importer = container.newBackgroundContext()
        editor.performAndWait {
            let rex = editor.object(with: dog.objectID) as! Dog
            XCTAssertEqual(rex.weight, 30)
            importer.performAndWait {
                let other = importer.object(with: dog.objectID) as! Dog
                other.weight = 31
                try? importer.save()
            }
            rex.weight = 29
            do {
                try editor.save()
                XCTFail("the save should conflict with the importer's")
            } catch let error as CocoaError where error.code == .managedObjectMerge {
                XCTAssertEqual(CocoaError.managedObjectMerge.rawValue, NSManagedObjectMergeError)
                XCTAssertEqual(error.persistentStoreSaveConflicts?.count, 1)
                XCTAssertEqual(error.persistentStoreSaveConflicts?.first?.sourceObject, rex)
            } catch {
                XCTFail("Unexpected error: \(error)")
            }
        }
    }

    func testSavingAnUnchangedContextStillPostsDidSave() throws {
        expectation(forNotification: .NSManagedObjectContextDidSave, object: context) { _ in
            return true
        }
        try context.save()
        waitForExpectations(timeout: 2.0) { error in
            XCTAssertNil(error, "Save did not occur")
        }
    }

    func testFetchedResultsControllerWithDelegate() throws {
        let ada = Owner(context: context)
        ada.name = "Ada"
        let bob = Owner(context: context)
        bob.name = "Bob"
        makeDog("Zed", weight: 10, owner: ada)
        makeDog("Amy", weight: 10, owner: ada)
        makeDog("Max", weight: 40, owner: bob)
        try context.save()

        let viewModel = DogListViewModel(context: context)
        try viewModel.load()
        XCTAssertEqual(viewModel.numberOfSections, 2)
        XCTAssertEqual(viewModel.numberOfRows(inSection: 0), 2)
        XCTAssertEqual(viewModel.title(at: IndexPath(item: 0, section: 0)), "Amy (10.0 kg)")

        let didChange = expectation(description: "controllerDidChangeContent")
        viewModel.onChange = { didChange.fulfill() }
        let cleo = Owner(context: context)
        cleo.name = "Cleo"
        makeDog("Pip", weight: 3, owner: cleo)
        try context.save()
        wait(for: [didChange], timeout: 5)
        XCTAssertEqual(viewModel.changes, ["begin", "insert section 2", "insert 2.0", "end"])
        XCTAssertEqual(viewModel.numberOfSections, 3)
    }

    func testDiffableDataSourceSnapshots() throws {
        let rex = makeDog("Rex", weight: 30)
        for day in 1...2 {
            let walk = Walk(context: context)
            walk.date = Date(timeIntervalSinceReferenceDate: Double(day) * 86_400)
            walk.dog = rex
        }
        try context.save()

        let viewModel = WalkLogViewModel(dog: rex, context: context)
        try viewModel.load()
        XCTAssertEqual(viewModel.appliedSnapshots.count, 1, "the fetched state is applied at once")
        XCTAssertEqual(viewModel.appliedSnapshots.last?.numberOfItems, 2)

        let applied = expectation(description: "snapshot applied")
        viewModel.onApply = { applied.fulfill() }
        let newest = Walk(context: context)
        newest.date = Date(timeIntervalSinceReferenceDate: 3 * 86_400)
        newest.dog = rex
        // As apps using diffable data sources do: a permanent ID before the save, so the snapshot's
        // identifier doesn't change under the data source.
        try context.obtainPermanentIDs(for: [newest])
        try context.save()
        wait(for: [applied], timeout: 5)
        let snapshot = try XCTUnwrap(viewModel.appliedSnapshots.last)
        XCTAssertEqual(snapshot.numberOfItems, 3)
        XCTAssertEqual(snapshot.itemIdentifiers.first, newest.objectID)
    }

    func testPropertyValidationMethodRunsAtSave() throws {
        let dog = makeDog("   ", weight: 12)
        XCTAssertThrowsError(try context.save()) { error in
            guard let error = error as? CocoaError else { return XCTFail("expected a CocoaError, got \(error)") }
            XCTAssertEqual(error.code, .validationStringTooShort)
            XCTAssertEqual(error.validationKey, "name")
        }
        XCTAssertTrue(dog.isInserted)
        dog.name = "Biscuit"
        XCTAssertNoThrow(try context.save())
        XCTAssertFalse(context.hasChanges)
    }

    func testWalksSectionedByAMonthTheClassDerives() throws {
        let rex = makeDog("Rex", weight: 30)
        let day = 86_400.0
        for offset in [3.0, 40, 41, 70] {
            let walk = Walk(context: context)
            walk.date = Date(timeIntervalSinceReferenceDate: offset * day)
            walk.dog = rex
        }
        try context.save()

        let fetchRequest: NSFetchRequest<Walk> = Walk.fetchRequest()
        fetchRequest.sortDescriptors = [NSSortDescriptor(key: "date", ascending: true)]
        fetchRequest.fetchBatchSize = 20
        let controller = NSFetchedResultsController(fetchRequest: fetchRequest, managedObjectContext: context,
                                                    sectionNameKeyPath: "monthTitle", cacheName: nil)
        try controller.performFetch()
        XCTAssertEqual(controller.sections?.map { $0.name }, ["2001-01", "2001-02", "2001-03"])
        XCTAssertEqual(controller.sections?.map { $0.numberOfObjects }, [1, 2, 1])

        let april = Walk(context: context)
        april.date = Date(timeIntervalSinceReferenceDate: 100 * day)
        april.dog = rex
        try context.save()
        try controller.performFetch()
        XCTAssertEqual(controller.sections?.last?.name, "2001-04")
        XCTAssertEqual(controller.object(at: IndexPath(item: 0, section: 3)), april)
    }

    func testMigrationManagerComparesModels() throws {
        let sourceModel = NSPersistentContainer(name: "Kennel").managedObjectModel
        let destinationModel = TestCoreDataStack.model
        XCTAssertTrue(sourceModel.entitiesByName == destinationModel.entitiesByName)
        XCTAssertEqual(sourceModel, destinationModel)

        let storeURL = FileManager.default.temporaryDirectory.appendingPathComponent("Kennel-\(UUID().uuidString).sqlite")
        defer { try? FileManager.default.removeItem(at: storeURL) }
        let app = PersistenceController(storeURL: storeURL)
        let dog = Dog(context: app.persistentContainer.viewContext)
        dog.name = "Stored"
        app.saveContext()

        let metadata = try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: NSSQLiteStoreType, at: storeURL, options: nil)
        XCTAssertTrue(destinationModel.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
        let mapping = try NSMappingModel.inferredMappingModel(forSourceModel: sourceModel, destinationModel: destinationModel)
        XCTAssertEqual(mapping.entityMappings.count, 3)
        let manager = NSMigrationManager(sourceModel: sourceModel, destinationModel: destinationModel)
        XCTAssertTrue(manager.sourceModel === sourceModel)
    }
}
