import Foundation
import GRDB
@testable import OpenCoreDataCore
import OpenCoreData
import Testing

/// SQLite stores keep their model in Z_MODELCACHE as Core Data does: written at creation and
/// migration, readable without any model file, and used for migration when no bundled version
/// matches.
@Suite struct StoreModelCacheTests {
    private static let bnr = TestSupport.fixtures.appendingPathComponent("apple-files/bnr-testmodel")

    private func bnrVersion(_ name: String) throws -> NSManagedObjectModel {
        try NSManagedObjectModel.load(contentsOf: Self.bnr.appendingPathComponent("Sample.xcdatamodeld/\(name).xcdatamodel"))
    }

    /// The archive a store keeps here decodes to the same tree as the one Apple's Core Data wrote
    /// for the same model.
    @Test func theCacheWrittenHereMatchesApples() throws {
        let queue = try DatabaseQueue(path: Self.bnr.appendingPathComponent("TestModel.sqlite").path, configuration: { var c = Configuration(); c.readonly = true; return c }())
        let blob = try #require(try queue.read { db in try Data.fetchOne(db, sql: "SELECT Z_CONTENT FROM Z_MODELCACHE") })
        try queue.close()
        let apples = try ModelCompilerTests.tree(try RawDeflate.inflate(Array(blob)))
        let ours = try ModelCompilerTests.tree(try CompiledModelEncoder.archive(try bnrVersion("TestModel"), as: .storeCache))
        #expect(ours == apples)
    }

    /// A new store keeps its model; the model reads back from the file alone, equal and with the
    /// same hashes; a store without a cache is 134130.
    @Test func aNewStoreKeepsItsModel() throws {
        let model = try TestSupport.model("swiftgen-kitchensink", "Model")
        let url = TestSupport.temporaryDirectory().appendingPathComponent("Kitchen.sqlite")
        let (coordinator, _) = try TestSupport.coordinator(model, url: url)
        try coordinator.remove(coordinator.persistentStores[0])
        let cached = try NSManagedObjectModel.cachedModel(ofStoreAt: url)
        #expect(CompiledModelTests.summary(cached) == CompiledModelTests.summary(model))
        let metadata = try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: NSSQLiteStoreType, at: url)
        #expect(cached.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
        let applesName = try NSPersistentStoreCoordinator.cachedModelForPersistentStore(at: url)
        #expect(CompiledModelTests.summary(applesName) == CompiledModelTests.summary(model))
        #expect(metadata[NSPersistentStoreModelVersionChecksumKey] as? String == model.versionChecksum)

        let old = TestSupport.fixtures.appendingPathComponent("failedbanks/FailedBanksCD.sqlite")
        let error = try #require(throws: NSError.self) { _ = try NSManagedObjectModel.cachedModel(ofStoreAt: old) }
        #expect(error.code == NSMigrationMissingSourceModelError)
    }

    private func noteModel(withBody: Bool) -> NSManagedObjectModel {
        let model = NSManagedObjectModel()
        var properties = [NSAttributeDescription(name: "title", type: .stringAttributeType)]
        if withBody { properties.append(NSAttributeDescription(name: "body", type: .stringAttributeType)) }
        model.entities = [NSEntityDescription(name: "Note", properties: properties)]
        return model
    }

    /// The app ships only a later model version (built in code: no file of the earlier version
    /// exists anywhere); the store's own model is the migration source, as in Core Data. The
    /// migrated store keeps the new version's model.
    @Test func migrationFallsBackToTheStoresOwnModel() throws {
        let url = TestSupport.temporaryDirectory().appendingPathComponent("Notes.sqlite")
        do {
            let (coordinator, _) = try TestSupport.coordinator(noteModel(withBody: false), url: url)
            let context = TestSupport.context(coordinator)
            NSEntityDescription.insertNewObject(forEntityName: "Note", into: context).setValue("kept", forKey: "title")
            try context.save()
            try coordinator.remove(coordinator.persistentStores[0])
        }
        let later = noteModel(withBody: true)
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: later)
        try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url,
                                           options: [NSMigratePersistentStoresAutomaticallyOption: true, NSInferMappingModelAutomaticallyOption: true])
        let context = TestSupport.context(coordinator)
        let note = try #require(try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Note")).first)
        #expect(note.value(forKey: "title") as? String == "kept")
        note.setValue("new", forKey: "body")
        try context.save()
        try coordinator.remove(coordinator.persistentStores[0])
        let cached = try NSManagedObjectModel.cachedModel(ofStoreAt: url)
        #expect(cached.entityVersionHashesByName == later.entityVersionHashesByName)
    }

    /// An Apple-written store whose version the app no longer ships migrates from the model
    /// Apple cached in it.
    @Test func anAppleStoreMigratesFromItsOwnCache() throws {
        let directory = TestSupport.temporaryDirectory()
        let url = directory.appendingPathComponent("TestModel.sqlite")
        try FileManager.default.copyItem(at: Self.bnr.appendingPathComponent("TestModel.sqlite"), to: url)
        let later = try bnrVersion("TestModel 2")
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: later)
        try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url,
                                           options: [NSMigratePersistentStoresAutomaticallyOption: true, NSInferMappingModelAutomaticallyOption: true])
        let context = TestSupport.context(coordinator)
        let book = NSEntityDescription.insertNewObject(forEntityName: "Book", into: context)
        book.setValue("Core Data", forKey: "title")
        let publisher = NSEntityDescription.insertNewObject(forEntityName: "Publisher", into: context)
        book.setValue(publisher, forKey: "publisher")
        try context.save()
        try coordinator.remove(coordinator.persistentStores[0])
        #expect(Set(try NSManagedObjectModel.cachedModel(ofStoreAt: url).entitiesByName.keys) == ["Author", "Book", "Publisher"])
    }

    /// Without migration options the store is left as it was (no cache is used silently).
    @Test func withoutMigrationTheCacheIsNotUsed() throws {
        let directory = TestSupport.temporaryDirectory()
        let url = directory.appendingPathComponent("TestModel.sqlite")
        try FileManager.default.copyItem(at: Self.bnr.appendingPathComponent("TestModel.sqlite"), to: url)
        let before = try TestSupport.snapshot(directory)
        let error = try #require(throws: NSError.self) { _ = try TestSupport.coordinator(try bnrVersion("TestModel 2"), url: url) }
        #expect(error.code == NSPersistentStoreIncompatibleVersionHashError)
        #expect(try TestSupport.snapshot(directory) == before)
    }
}
