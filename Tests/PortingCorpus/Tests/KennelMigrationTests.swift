//
//  KennelMigrationTests.swift
//  KennelTests
//

import XCTest
#if canImport(CoreData)
import CoreData
#else
import OpenCoreData
#endif

class KennelMigrationTests: XCTestCase {

    var storeURL: URL!

    override func setUp() {
        super.setUp()
        storeURL = FileManager.default.temporaryDirectory.appendingPathComponent("KennelMigration-\(UUID().uuidString).sqlite")
    }

    override func tearDown() {
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: NSManagedObjectModel())
        try? coordinator.destroyPersistentStore(at: storeURL, ofType: NSSQLiteStoreType, options: nil)
        storeURL = nil
        super.tearDown()
    }

    /// A store the first version of the app wrote.
    func makeVersion1Store() throws {
        let model = KennelModelVersion.v1.modelReference.resolvedModel
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        let store = try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: storeURL, options: nil)
        let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            for (firstName, lastName) in [("Ada", "Lovelace"), ("Grace", nil)] as [(String, String?)] {
                let owner = NSEntityDescription.insertNewObject(forEntityName: "Owner", into: context)
                owner.setValue(firstName, forKey: "firstName")
                owner.setValue(lastName, forKey: "lastName")
                owner.setValue(NSNumber(value: 36), forKey: "age")
            }
            try context.save()
        }
        try coordinator.remove(store)
    }

    func testChecksumsNameTheModelVersions() {
        for version in KennelModelVersion.allCases {
            XCTAssertEqual(version.modelReference.resolvedModel.versionChecksum, version.checksum, version.rawValue)
        }
        XCTAssertNotNil(KennelModelVersion.v1.modelReference.resolvedModel.entitiesByName["Owner"]?.attributesByName["firstName"])
    }

    func testStagedMigrationMergesOwnerNames() throws {
        try makeVersion1Store()

        let container = NSPersistentContainer(name: "Kennel")
        let description = NSPersistentStoreDescription(url: storeURL)
        KennelMigrations.addStagedMigration(to: description)
        container.persistentStoreDescriptions = [description]
        var loadError: Error?
        container.loadPersistentStores { _, error in
            loadError = error
        }
        XCTAssertNil(loadError)

        let request: NSFetchRequest<Owner> = Owner.fetchRequest()
        request.sortDescriptors = [NSSortDescriptor(key: "name", ascending: true)]
        let owners = try container.viewContext.fetch(request)
        XCTAssertEqual(owners.map { $0.name }, ["Ada Lovelace", "Grace"])
        XCTAssertEqual(owners.map { $0.age?.intValue }, [36, 36])
        XCTAssertNil(container.managedObjectModel.entitiesByName["Owner"]?.attributesByName["firstName"])
    }
}
