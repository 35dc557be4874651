//
//  KennelArchiveStoreTests.swift
//  KennelTests
//

import XCTest
#if canImport(CoreData)
import CoreData
#else
import OpenCoreData
#endif

class KennelArchiveStoreTests: XCTestCase {

    var storeURL: URL!

    override func setUpWithError() throws {
        try super.setUpWithError()
        NSPersistentStoreCoordinator.registerStoreClass(KennelArchiveStore.self, forStoreType: KennelArchiveStore.storeType)
        storeURL = FileManager.default.temporaryDirectory.appendingPathComponent("kennel-archive-\(UUID().uuidString).plist")
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: storeURL)
        try super.tearDownWithError()
    }

    private func makeContext() throws -> (NSManagedObjectContext, KennelArchiveStore) {
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: TestCoreDataStack.model)
        let store = try coordinator.addPersistentStore(ofType: KennelArchiveStore.storeType, configurationName: nil, at: storeURL, options: nil)
        let context = NSManagedObjectContext(concurrencyType: .mainQueueConcurrencyType)
        context.persistentStoreCoordinator = coordinator
        return (context, store as! KennelArchiveStore)
    }

    func testTheKennelIsWrittenToTheFileAndReadBack() throws {
        let (context, _) = try makeContext()
        let owner = Owner(context: context)
        owner.name = "Ana"
        owner.age = 31
        owner.balance = NSDecimalNumber(string: "12.50")
        let chip = UUID()
        for name in ["Rex", "Fido"] {
            let dog = Dog(context: context)
            dog.name = name
            dog.weight = name == "Rex" ? 30.5 : 8
            dog.chipID = name == "Rex" ? chip : nil
            dog.owner = owner
        }
        let rex = owner.dogs!.compactMap { $0 as? Dog }.first { $0.name == "Rex" }!
        for steps in [1200, 800, 4500] {
            let walk = Walk(context: context)
            walk.steps = NSNumber(value: steps)
            rex.addToWalks(walk)
        }
        try context.save()

        // Another coordinator reads the file.
        let (reader, _) = try makeContext()
        let request: NSFetchRequest<Dog> = Dog.fetchRequest()
        request.sortDescriptors = [NSSortDescriptor(key: "name", ascending: true)]
        let dogs = try reader.fetch(request)
        XCTAssertEqual(dogs.map { $0.name }, ["Fido", "Rex"])
        XCTAssertEqual(dogs[1].chipID, chip)
        XCTAssertEqual(dogs[1].weight, 30.5)
        XCTAssertEqual(dogs[1].owner?.name, "Ana")
        XCTAssertEqual(dogs[1].owner?.balance, NSDecimalNumber(string: "12.50"))
        XCTAssertEqual(dogs[1].walks?.array.compactMap { ($0 as? Walk)?.steps?.intValue }, [1200, 800, 4500])
        XCTAssertEqual(dogs[1].owner?.dogs?.count, 2)

        let walkRequest: NSFetchRequest<Walk> = Walk.fetchRequest()
        walkRequest.predicate = NSPredicate(format: "steps > %@ AND dog.name == %@", NSNumber(value: 1000), "Rex")
        XCTAssertEqual(try reader.count(for: walkRequest), 2)

        let metadata = try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: KennelArchiveStore.storeType, at: storeURL, options: nil)
        XCTAssertTrue(TestCoreDataStack.model.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
    }

    func testChangesAndDeletionsAreSaved() throws {
        let (context, _) = try makeContext()
        for name in ["Bea", "Cy"] {
            let owner = Owner(context: context)
            owner.name = name
        }
        try context.save()

        let (editor, _) = try makeContext()
        let owners = try editor.fetch(Owner.fetchRequest()).sorted { ($0.name ?? "") < ($1.name ?? "") }
        owners[0].email = "bea@example.com"
        editor.delete(owners[1])
        try editor.save()

        let (reader, _) = try makeContext()
        let remaining = try reader.fetch(Owner.fetchRequest())
        XCTAssertEqual(remaining.map { $0.name }, ["Bea"])
        XCTAssertEqual(remaining.first?.email, "bea@example.com")
    }
}
