//
//  PersistenceController.swift
//  Kennel
//
//  The Core Data stack of Xcode's app template (AppDelegate's persistentContainer and
//  saveContext()), moved into a class of its own as most apps do.
//

import Foundation
#if canImport(CoreData)
import CoreData
#else
import OpenCoreData
#endif

class PersistenceController {

    // MARK: - Core Data stack

    lazy var persistentContainer: NSPersistentContainer = {
        /*
         The persistent container for the application. This implementation
         creates and returns a container, having loaded the store for the
         application to it. This property is optional since there are legitimate
         error conditions that could cause the creation of the store to fail.
        */
        let container = NSPersistentContainer(name: "Kennel")
        if let storeURL = storeURL {
            container.persistentStoreDescriptions.first!.url = storeURL
        }
        container.loadPersistentStores(completionHandler: { (storeDescription, error) in
            if let error = error as NSError? {
                // Replace this implementation with code to handle the error appropriately.
                fatalError("Unresolved error \(error), \(error.userInfo)")
            }
        })
        container.viewContext.automaticallyMergesChangesFromParent = true
        return container
    }()

    let storeURL: URL?

    init(storeURL: URL? = nil) {
        self.storeURL = storeURL
    }

    // MARK: - Core Data Saving support

    func saveContext () {
        let context = persistentContainer.viewContext
        if context.hasChanges {
            do {
                try context.save()
            } catch {
                let nserror = error as NSError
                fatalError("Unresolved error \(nserror), \(nserror.userInfo)")
            }
        }
    }
}
