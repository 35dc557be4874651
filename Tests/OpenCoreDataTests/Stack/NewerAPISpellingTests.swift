import Foundation
import OpenCoreData
import Testing

/// Spellings of Core Data's API that newer or less common app code uses: the iOS 15 attribute
/// types, the coordinator's value-returning `performAndWait` and async `perform`, the store-type
/// spellings of destroy and replace, a batch insert by entity name with an object handler, the
/// context's `userInfo`, and constants.
@Suite struct NewerAPISpellingTests {
    @Test func attributeTypesInTheNewerSpelling() throws {
        let attribute = NSAttributeDescription()
        attribute.name = "score"
        attribute.type = .integer64
        #expect(attribute.attributeType == .integer64AttributeType)
        attribute.attributeType = .UUIDAttributeType
        #expect(attribute.type == .uuid)
        #expect(NSAttributeDescription.AttributeType.string.rawValue == .stringAttributeType)

        let sum = NSExpressionDescription()
        sum.resultType = .double
        #expect(sum.expressionResultType == .doubleAttributeType)
    }

    @Test func theCoordinatorRunsBlocksAndReturnsTheirValues() async throws {
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: TestSupport.makeCompanyModel())
        try coordinator.addPersistentStore(ofType: NSInMemoryStoreType, configurationName: nil, at: nil)
        let count = coordinator.performAndWait { coordinator.persistentStores.count }
        #expect(count == 1)
        #expect(throws: CocoaError.self) {
            try coordinator.performAndWait { () throws -> Int in throw CocoaError(.fileNoSuchFile) }
        }
        let type = await coordinator.perform { coordinator.persistentStores.first?.type }
        #expect(type == NSInMemoryStoreType)
    }

    @Test func destroyAndReplaceTakeTheStoreType() throws {
        let directory = TestSupport.temporaryDirectory()
        let source = directory.appendingPathComponent("source.sqlite")
        let target = directory.appendingPathComponent("target.sqlite")
        let model = TestSupport.makeCompanyModel()
        for url in [source, target] {
            let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
            let store = try coordinator.addPersistentStore(type: .sqlite, at: url)
            let context = TestSupport.context(coordinator)
            let company = NSEntityDescription.insertNewObject(forEntityName: "Company", into: context)
            company.setValue(url.lastPathComponent, forKey: "name")
            try context.save()
            try coordinator.remove(store)
        }
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.replacePersistentStore(at: target, destinationOptions: nil, withPersistentStoreFrom: source, sourceOptions: nil, type: .sqlite)
        try coordinator.addPersistentStore(type: .sqlite, at: target)
        let names = try TestSupport.context(coordinator).fetch(NSFetchRequest<NSManagedObject>(entityName: "Company")).compactMap { $0.value(forKey: "name") as? String }
        #expect(names == ["source.sqlite"])

        let other = NSPersistentStoreCoordinator(managedObjectModel: model)
        try other.destroyPersistentStore(at: source, type: .sqlite)
        #expect(!FileManager.default.fileExists(atPath: source.path))
    }

    @Test func aBatchInsertByEntityNameWithAnObjectHandler() throws {
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: TestSupport.makeCompanyModel())
        try coordinator.addPersistentStore(type: .sqlite, at: TestSupport.temporaryDirectory().appendingPathComponent("batch.sqlite"))
        let context = TestSupport.context(coordinator)
        var next = 0
        let insert = NSBatchInsertRequest(entityName: "Company", managedObjectHandler: { object in
            guard next < 3 else { return true }
            object.setValue("Company \(next)", forKey: "name")
            next += 1
            return false
        })
        insert.resultType = .count
        let result = try context.execute(insert) as? NSBatchInsertResult
        #expect(result?.result as? Int == 3)
        #expect(try context.count(for: NSFetchRequest<NSManagedObject>(entityName: "Company")) == 3)
    }

    @Test func theCoordinatorExecutesRequestsForAContext() throws {
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: TestSupport.makeCompanyModel())
        try coordinator.addPersistentStore(type: .sqlite, at: TestSupport.temporaryDirectory().appendingPathComponent("execute.sqlite"))
        let context = TestSupport.context(coordinator)
        let company = NSEntityDescription.insertNewObject(forEntityName: "Company", into: context)
        company.setValue("Acme", forKey: "name")
        #expect((try coordinator.execute(NSSaveChangesRequest(inserted: nil, updated: nil, deleted: nil, locked: nil), with: context) as? [Any])?.isEmpty == true)
        #expect(!context.hasChanges)

        let fetch = NSFetchRequest<NSFetchRequestResult>(entityName: "Company")
        let found = try coordinator.execute(fetch, with: context) as? [NSManagedObject]
        #expect(found?.map { $0.value(forKey: "name") as? String } == ["Acme"])

        let update = NSBatchUpdateRequest(entityName: "Company")
        update.propertiesToUpdate = ["name": "Acme Corp"]
        update.resultType = .updatedObjectsCountResultType
        #expect((try coordinator.execute(update, with: context) as? NSBatchUpdateResult)?.result as? Int == 1)
    }

    @Test func theContextKeepsTheAppsValues() {
        let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        context.userInfo["screen"] = "inbox"
        #expect(context.userInfo["screen"] as? String == "inbox")
        #expect(NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType).userInfo.count == 0)
    }

    @Test func constantsHaveCoreDatasValues() {
        #expect(NSManagedObjectConstraintValidationError == 1551)
        #expect(NSValidationInvalidURIError == 1690)
        #expect(NSManagedObjectContextLockingError == 132000)
        #expect(NSPersistentStoreCoordinatorLockingError == 132010)
        #expect(NSExternalRecordImportError == 134200)
        #expect(NSRefreshedObjectIDsKey == NSManagedObjectContext.NotificationKey.refreshedObjectIDs.rawValue)
        #expect(NSInvalidatedObjectIDsKey == NSManagedObjectContext.NotificationKey.invalidatedObjectIDs.rawValue)
        let element: NSFetchIndexElementType = .binary
        #expect(element == NSFetchIndexElementDescription.CollationType.binary)
    }
}
