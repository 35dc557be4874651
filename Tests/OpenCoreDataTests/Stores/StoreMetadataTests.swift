import Foundation
import OpenCoreData
import Testing

/// Reading and writing a store file's metadata without adding the store.
@Suite struct StoreMetadataTests {
    private func savedStore(type: String = NSSQLiteStoreType) throws -> (URL, NSManagedObjectModel) {
        let model = try TestSupport.model("worldcup", "WorldCup")
        let (coordinator, url) = try TestSupport.coordinator(model, type: type)
        let context = TestSupport.context(coordinator)
        NSManagedObject(entity: model.entitiesByName["Team"]!, insertInto: context).setValue("Atlantis", forKey: "teamName")
        try context.save()
        for store in coordinator.persistentStores { try coordinator.remove(store) }
        return (try #require(url), model)
    }

    @Test func readingMetadataLeavesTheFileAsItWas() throws {
        let (url, model) = try savedStore()
        let directory = url.deletingLastPathComponent()
        defer { try? FileManager.default.removeItem(at: directory) }
        let before = try TestSupport.snapshot(directory)
        let metadata = try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: NSSQLiteStoreType, at: url)
        #expect(metadata[NSStoreTypeKey] as? String == NSSQLiteStoreType)
        #expect((metadata[NSStoreUUIDKey] as? String)?.isEmpty == false)
        #expect(model.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
        #expect(try NSPersistentStoreCoordinator.metadataForPersistentStore(type: .sqlite, at: url)[NSStoreUUIDKey] as? String == metadata[NSStoreUUIDKey] as? String)
        #expect(try NSPersistentStore.metadataForPersistentStore(with: url)[NSStoreUUIDKey] as? String == metadata[NSStoreUUIDKey] as? String)
        #expect(try TestSupport.snapshot(directory) == before, "no byte and no side file changed")

        let changed = try TestSupport.model("worldcup", "WorldCup")
        changed.entitiesByName["Team"]!.properties.append(NSAttributeDescription(name: "coach", type: .stringAttributeType))
        #expect(!changed.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
    }

    @Test func anAddedStoreLoadsItsMetadataAgainWithoutChangingIt() throws {
        let (url, model) = try savedStore()
        let directory = url.deletingLastPathComponent()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (coordinator, _) = try TestSupport.coordinator(model, url: url)
        let store = try #require(coordinator.persistentStores.first)
        let uuid = store.metadata[NSStoreUUIDKey] as? String
        try store.loadMetadata()
        #expect(store.metadata[NSStoreUUIDKey] as? String == uuid)
        #expect(ObjectIdentifier(NSPersistentStore.migrationManagerClass()) == ObjectIdentifier(NSMigrationManager.self))
        #expect(ObjectIdentifier(type(of: store).migrationManagerClass()) == ObjectIdentifier(NSMigrationManager.self))
    }

    @Test func metadataCanBeReadWhileAnotherCoordinatorWrites() throws {
        let (url, model) = try savedStore()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let (coordinator, _) = try TestSupport.coordinator(model, url: url)
        let context = TestSupport.context(coordinator)
        NSManagedObject(entity: model.entitiesByName["Team"]!, insertInto: context).setValue("Mu", forKey: "teamName")
        try context.save()
        let metadata = try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: NSSQLiteStoreType, at: url)
        #expect(metadata[NSStoreUUIDKey] as? String == coordinator.persistentStores[0].identifier)
    }

    @Test(arguments: [NSSQLiteStoreType, NSBinaryStoreType])
    func writingMetadataToAFile(type: String) throws {
        let (url, model) = try savedStore(type: type)
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        var metadata = try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: type, at: url)
        let uuid = metadata[NSStoreUUIDKey] as? String
        metadata["AppSchemaStep"] = 3
        metadata.removeValue(forKey: NSStoreUUIDKey)
        try NSPersistentStoreCoordinator.setMetadata(metadata, forPersistentStoreOfType: type, at: url)
        let reread = try NSPersistentStore.metadataForPersistentStore(with: url)
        #expect(reread["AppSchemaStep"] as? Int == 3)
        #expect(reread[NSStoreUUIDKey] as? String == uuid, "the identifier is kept")

        let (coordinator, _) = try TestSupport.coordinator(model, type: type, url: url)
        let store = try #require(coordinator.persistentStores.first)
        #expect(coordinator.metadata(for: store)["AppSchemaStep"] as? Int == 3)
        let request = NSFetchRequest<NSManagedObject>(entityName: "Team")
        #expect(try TestSupport.context(coordinator).count(for: request) == 1, "the objects are kept")
    }

    @Test func badFilesAndValuesGiveCoreDataErrors() throws {
        let (url, _) = try savedStore()
        let directory = url.deletingLastPathComponent()
        defer { try? FileManager.default.removeItem(at: directory) }
        let before = try TestSupport.snapshot(directory)
        #expect { try NSPersistentStoreCoordinator.setMetadata(["bad": NSObject()], forPersistentStoreOfType: NSSQLiteStoreType, at: url) } throws: { error in
            (error as NSError).code == NSCoreDataError
        }
        #expect(try TestSupport.snapshot(directory) == before)
        let missing = directory.appendingPathComponent("missing.sqlite")
        #expect { try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: NSSQLiteStoreType, at: missing) } throws: { error in
            (error as NSError).code == NSFileReadNoSuchFileError
        }
        let text = directory.appendingPathComponent("notes.txt")
        try Data("not a store".utf8).write(to: text)
        #expect { try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: NSSQLiteStoreType, at: text) } throws: { error in
            (error as NSError).code == NSPersistentStoreInvalidTypeError
        }
        #expect { try NSPersistentStoreCoordinator.setMetadata([:], forPersistentStoreOfType: NSSQLiteStoreType, at: text) } throws: { error in
            (error as NSError).code == NSPersistentStoreInvalidTypeError
        }
        #expect(FileManager.default.contents(atPath: text.path) == Data("not a store".utf8))
    }
}
