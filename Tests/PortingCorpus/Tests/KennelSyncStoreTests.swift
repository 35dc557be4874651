//
//  KennelSyncStoreTests.swift
//  KennelTests
//

import XCTest
#if canImport(CoreData)
import CoreData
#else
import OpenCoreData
#endif

class KennelSyncStoreTests: XCTestCase {

    var coordinator: NSPersistentStoreCoordinator!
    var store: KennelSyncStore!
    var context: NSManagedObjectContext!

    override func setUpWithError() throws {
        try super.setUpWithError()
        NSPersistentStoreCoordinator.registerStoreClass(KennelSyncStore.self, forStoreType: KennelSyncStore.storeType)
        coordinator = NSPersistentStoreCoordinator(managedObjectModel: TestCoreDataStack.model)
        let storeURL = FileManager.default.temporaryDirectory.appendingPathComponent("kennel-sync")
        store = try coordinator.addPersistentStore(ofType: KennelSyncStore.storeType, configurationName: nil, at: storeURL, options: nil) as? KennelSyncStore
        context = NSManagedObjectContext(concurrencyType: .mainQueueConcurrencyType)
        context.persistentStoreCoordinator = coordinator
    }

    override func tearDown() {
        context = nil
        store = nil
        coordinator = nil
        super.tearDown()
    }

    func testOwnersAreSavedFetchedUpdatedAndDeletedThroughTheStore() throws {
        XCTAssertNotNil(store)
        for (name, age) in [("Ana", 31), ("Bea", 45), ("Cy", 28)] {
            let owner = Owner(context: context)
            owner.name = name
            owner.age = NSNumber(value: age)
        }
        try context.save()
        XCTAssertEqual(store.savesExecuted, 1)
        let saved = context.registeredObjects.first!
        XCTAssertFalse(saved.objectID.isTemporaryID)
        XCTAssertTrue(store.referenceObject(for: saved.objectID) is String)

        // A fresh context reads the objects back from the store's nodes.
        let reader = NSManagedObjectContext(concurrencyType: .mainQueueConcurrencyType)
        reader.persistentStoreCoordinator = coordinator
        let request: NSFetchRequest<Owner> = Owner.fetchRequest()
        request.predicate = NSPredicate(format: "age < %@", NSNumber(value: 40))
        request.sortDescriptors = [NSSortDescriptor(key: "name", ascending: false)]
        let young = try reader.fetch(request)
        XCTAssertEqual(young.map { $0.name ?? "" }, ["Cy", "Ana"])
        XCTAssertEqual(young.first?.age?.intValue, 28)
        XCTAssertEqual(try reader.count(for: Owner.fetchRequest()), 3)

        young[0].age = 29
        reader.delete(young[1])
        try reader.save()
        XCTAssertEqual(store.savesExecuted, 2)

        let check = NSManagedObjectContext(concurrencyType: .mainQueueConcurrencyType)
        check.persistentStoreCoordinator = coordinator
        let all = try check.fetch(Owner.fetchRequest()).sorted { ($0.name ?? "") < ($1.name ?? "") }
        XCTAssertEqual(all.map { $0.name ?? "" }, ["Bea", "Cy"])
        XCTAssertEqual(all.last?.age?.intValue, 29)
    }
}
