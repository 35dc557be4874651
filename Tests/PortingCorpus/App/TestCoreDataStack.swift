//
//  TestCoreDataStack.swift
//  KennelTests
//
//  The in-memory SQLite stack Apple recommends for tests: a store at /dev/null.
//

import Foundation
#if canImport(CoreData)
import CoreData
#else
import OpenCoreData
#endif

class TestCoreDataStack: PersistenceController {

    static let model: NSManagedObjectModel = {
        let container = NSPersistentContainer(name: "Kennel")
        return container.managedObjectModel
    }()

    override init(storeURL: URL? = nil) {
        super.init(storeURL: storeURL)

        let persistentStoreDescription = NSPersistentStoreDescription()
        persistentStoreDescription.url = URL(fileURLWithPath: "/dev/null")
        persistentStoreDescription.type = NSSQLiteStoreType

        let container = NSPersistentContainer(name: "Kennel", managedObjectModel: TestCoreDataStack.model)
        container.persistentStoreDescriptions = [persistentStoreDescription]

        container.loadPersistentStores { _, error in
            if let error = error as NSError? {
                fatalError("Unresolved error \(error), \(error.userInfo)")
            }
        }

        container.viewContext.automaticallyMergesChangesFromParent = true
        persistentContainer = container
    }
}
