import Foundation
import OpenCoreData
import Testing

/// Staged migration (`NSStagedMigrationManager`): stages run one model version at a time, custom
/// stages' handlers see the store at the version before and after their step.
@Suite(.serialized) struct StagedMigrationTests {
    /// Item(name: optional String, quantity: Int64).
    static func itemsV1() -> NSManagedObjectModel {
        let item = NSEntityDescription(name: "Item")
        item.properties = [
            NSAttributeDescription(name: "name", type: .stringAttributeType),
            NSAttributeDescription(name: "quantity", type: .integer64AttributeType),
        ]
        let model = NSManagedObjectModel()
        model.entities = [item]
        return model
    }

    /// Item's name is now required, with no default: no lightweight migration can fill the nil names.
    static func itemsV2() -> NSManagedObjectModel {
        let item = NSEntityDescription(name: "Item")
        item.properties = [
            NSAttributeDescription(name: "name", type: .stringAttributeType, isOptional: false),
            NSAttributeDescription(name: "quantity", type: .integer64AttributeType),
        ]
        let model = NSManagedObjectModel()
        model.entities = [item]
        return model
    }

    /// A store at `model` with three items, the second without a name.
    static func makeItemStore(_ model: NSManagedObjectModel) throws -> URL {
        let (coordinator, url) = try TestSupport.coordinator(model)
        let context = TestSupport.context(coordinator)
        for (name, quantity) in [("Apples", 3), (nil, 5), ("Pears", 7)] as [(String?, Int64)] {
            let item = NSEntityDescription.insertNewObject(forEntityName: "Item", into: context)
            item.setValue(name, forKey: "name")
            item.setValue(quantity, forKey: "quantity")
        }
        try context.save()
        for store in coordinator.persistentStores { try coordinator.remove(store) }
        return try #require(url)
    }

    /// The stage Apple's guide describes for an optional attribute made required: the nil names
    /// are filled in before the store is migrated.
    static func fillingNames(_ v1: NSManagedObjectModel, _ v2: NSManagedObjectModel, seen: ModelsSeen) -> NSCustomMigrationStage {
        let stage = NSCustomMigrationStage(migratingFrom: NSManagedObjectModelReference(model: v1, versionChecksum: v1.versionChecksum),
                                           to: NSManagedObjectModelReference(model: v2, versionChecksum: v2.versionChecksum))
        stage.label = "Name required"
        stage.willMigrateHandler = { manager, stage in
            let container = try #require(manager.container)
            seen.before.append(container.managedObjectModel)
            let context = container.newBackgroundContext()
            try context.performAndWait {
                let request = NSFetchRequest<NSManagedObject>(entityName: "Item")
                request.predicate = NSPredicate(format: "name == nil")
                for item in try context.fetch(request) { item.setValue("Unnamed", forKey: "name") }
                try context.save()
            }
        }
        stage.didMigrateHandler = { manager, _ in
            let container = try #require(manager.container)
            seen.after.append(container.managedObjectModel)
            let context = container.newBackgroundContext()
            seen.countAfter = try context.performAndWait { try context.count(for: NSFetchRequest<NSManagedObject>(entityName: "Item")) }
        }
        return stage
    }

    /// What the handlers saw (reference type: the handlers are escaping closures).
    final class ModelsSeen: @unchecked Sendable {
        var before: [NSManagedObjectModel] = []
        var after: [NSManagedObjectModel] = []
        var countAfter = -1
    }

    static func names(in url: URL, model: NSManagedObjectModel) throws -> [String?] {
        let (coordinator, _) = try TestSupport.coordinator(model, url: url)
        let request = NSFetchRequest<NSManagedObject>(entityName: "Item")
        request.sortDescriptors = [NSSortDescriptor(key: "quantity", ascending: true)]
        return try TestSupport.context(coordinator).fetch(request).map { $0.value(forKey: "name") as? String }
    }

    @Test func aCustomStageFillsInWhatLightweightMigrationCannot() throws {
        let (v1, v2) = (Self.itemsV1(), Self.itemsV2())
        let url = try Self.makeItemStore(v1)

        // Lightweight migration alone can't make the nil name required: the store stays as it was.
        let before = try TestSupport.snapshot(url.deletingLastPathComponent())
        let plain = NSPersistentStoreCoordinator(managedObjectModel: v2)
        #expect(throws: (any Error).self) {
            try plain.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url, options: TestSupport.migrating(from: [v1]))
        }
        #expect(try TestSupport.snapshot(url.deletingLastPathComponent()) == before)

        // Apple's idiom: the manager in the store description's options, loaded by a container.
        let seen = ModelsSeen()
        let manager = NSStagedMigrationManager([Self.fillingNames(v1, v2, seen: seen)])
        let container = NSPersistentContainer(name: "Items", managedObjectModel: v2)
        let description = NSPersistentStoreDescription(url: url)
        description.setOption(manager, forKey: NSPersistentStoreStagedMigrationManagerOptionKey)
        container.persistentStoreDescriptions = [description]
        var loadError: Error?
        container.loadPersistentStores { _, error in loadError = error }
        #expect(loadError == nil)
        #expect(manager.container == nil, "the container is only there while a handler runs")
        #expect(seen.before.count == 1 && seen.before.first === v1, "the will-migrate handler sees the store at the current model")
        #expect(seen.after.count == 1 && seen.after.first === v2, "the did-migrate handler sees it at the next model")
        #expect(seen.countAfter == 3)

        let request = NSFetchRequest<NSManagedObject>(entityName: "Item")
        request.sortDescriptors = [NSSortDescriptor(key: "quantity", ascending: true)]
        let context = container.newBackgroundContext()
        #expect(try context.performAndWait { try context.fetch(request).map { $0.value(forKey: "name") as? String } } == ["Apples", "Unnamed", "Pears"])
        let metadata = try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: NSSQLiteStoreType, at: url)
        #expect(metadata[NSStoreModelVersionChecksumKey] as? String == v2.versionChecksum)
    }

    @Test func aThrowingHandlerStopsTheMigrationAndTheStoreStaysAtItsVersion() throws {
        let (v1, v2) = (Self.itemsV1(), Self.itemsV2())
        let url = try Self.makeItemStore(v1)
        let stage = NSCustomMigrationStage(migratingFrom: NSManagedObjectModelReference(model: v1, versionChecksum: v1.versionChecksum),
                                           to: NSManagedObjectModelReference(model: v2, versionChecksum: v2.versionChecksum))
        struct NotToday: Error {}
        stage.willMigrateHandler = { _, _ in throw NotToday() }
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: v2)
        #expect(throws: NotToday.self) {
            try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url,
                                               options: [NSPersistentStoreStagedMigrationManagerOptionKey: NSStagedMigrationManager([stage])])
        }
        #expect(coordinator.persistentStores.isEmpty)
        #expect(try Self.names(in: url, model: v1) == ["Apples", nil, "Pears"])
    }

    @Test func aStoreAtNoneOfTheVersionsAndAVersionNamedTwiceAreErrors() throws {
        let (v1, v2) = (Self.itemsV1(), Self.itemsV2())
        let url = try Self.makeItemStore(v1)
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: v2)
        // The stages name only v2: the store's version is not among them.
        let unknown = NSStagedMigrationManager([NSLightweightMigrationStage([v2.versionChecksum])])
        let missing = try #require(throws: NSError.self) {
            try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url,
                                               options: [NSPersistentStoreStagedMigrationManagerOptionKey: unknown])
        }
        #expect(missing.domain == NSCocoaErrorDomain && missing.code == NSMigrationMissingSourceModelError)

        let backwards = NSStagedMigrationManager([NSLightweightMigrationStage([v1.versionChecksum, v2.versionChecksum]),
                                                  NSLightweightMigrationStage([v1.versionChecksum])])
        let repeated = try #require(throws: NSError.self) {
            try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url,
                                               options: [NSPersistentStoreStagedMigrationManagerOptionKey: backwards, OCDMigrationSourceModelsOptionKey: [v1]])
        }
        #expect(repeated.code == NSStagedMigrationBackwardMigrationError)

        // A reference to a model file that isn't there: the version can't be found.
        let nowhere = NSManagedObjectModelReference(fileURL: url.deletingLastPathComponent().appendingPathComponent("Gone.momd"), versionChecksum: "gone")
        let lost = NSStagedMigrationManager([NSCustomMigrationStage(migratingFrom: nowhere, to: NSManagedObjectModelReference(model: v2, versionChecksum: v2.versionChecksum))])
        let unresolved = try #require(throws: NSError.self) {
            try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url,
                                               options: [NSPersistentStoreStagedMigrationManagerOptionKey: lost])
        }
        #expect(unresolved.code == NSManagedObjectModelReferenceNotFoundError)
        #expect(try Self.names(in: url, model: v1) == ["Apples", nil, "Pears"], "nothing was migrated")
    }

    @Test func stagesOverTheUnCloudNotesVersionsFindTheirModelsByChecksum() throws {
        let bundle = UnCloudNotesMigrationTests.bundle
        let checksums = try NSManagedObjectModel.checksumsForVersionedModel(at: bundle)
        let names = ["UnCloudNotesDataModel", "UnCloudNotesDataModel v2", "UnCloudNotesDataModel v3", "UnCloudNotesDataModel v4"]
        #expect(checksums.keys.sorted() == names)
        for (number, name) in names.enumerated() {
            #expect(checksums[name] == (try UnCloudNotesMigrationTests.version(number + 1)).versionChecksum)
        }
        let directory = TestSupport.temporaryDirectory()
        let url = try UnCloudNotesMigrationTests.makeStore(version: 1, notes: 6, in: directory)

        // v1 → v2 lightweight; v2 → v3 a custom stage (its mapping model is beside the model);
        // v3 → v4 named by checksum only, with its mapping model and custom policy.
        let fixtures = Bundle(url: bundle.deletingLastPathComponent())
        let reference = { (name: String) in NSManagedObjectModelReference(name: "UnCloudNotesDataModel", in: fixtures, versionChecksum: checksums[name]!) }
        let toAttachments = NSCustomMigrationStage(migratingFrom: reference(names[1]), to: reference(names[2]))
        let seen = ModelsSeen()
        toAttachments.willMigrateHandler = { manager, _ in
            seen.before.append(try #require(manager.container?.managedObjectModel))
        }
        toAttachments.didMigrateHandler = { manager, _ in
            let container = try #require(manager.container)
            seen.after.append(container.managedObjectModel)
            let context = container.newBackgroundContext()
            seen.countAfter = try context.performAndWait { try context.count(for: NSFetchRequest<NSManagedObject>(entityName: "Note")) }
        }
        let manager = NSStagedMigrationManager([
            NSLightweightMigrationStage([checksums[names[0]]!, checksums[names[1]]!]),
            toAttachments,
            NSLightweightMigrationStage([checksums[names[3]]!]),
        ])
        let v4 = try UnCloudNotesMigrationTests.version(4)
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: v4)
        try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url,
                                           options: [NSPersistentStoreStagedMigrationManagerOptionKey: manager])
        #expect(seen.before.map { $0.entitiesByName["Attachment"] == nil } == [true], "before the stage: version 2, no attachments yet")
        #expect(seen.after.map { $0.entitiesByName["Attachment"] != nil } == [true])
        #expect(seen.countAfter == 6)
        let notes = try TestSupport.context(coordinator).fetch(NSFetchRequest<NSManagedObject>(entityName: "Note"))
        #expect(notes.count == 6)
        #expect(Set(notes.compactMap { $0.value(forKey: "title") as? String }) == Set((0..<6).map { "Note \($0)" }))
    }

    @Test func aCompiledModelsRecordedChecksumsNameItsVersions() throws {
        let momd = TestSupport.temporaryDirectory().appendingPathComponent("Model.momd")
        try FileManager.default.copyItem(at: TestSupport.fixtures.appendingPathComponent("apple-files/swiftgen-momd/Model.momd"), to: momd)
        let computed = try NSManagedObjectModel.checksumsForVersionedModel(at: momd)
        #expect(computed.keys.sorted() == ["Model", "Model 2"], "Xcode recorded none: the computed ones")

        // Xcode's VersionInfo.plist records a checksum per version; a reference may use it.
        let infoURL = momd.appendingPathComponent("VersionInfo.plist")
        var info = try #require(try PropertyListSerialization.propertyList(from: Data(contentsOf: infoURL), format: nil) as? [String: Any])
        info["NSManagedObjectModel_VersionChecksums"] = ["Model": "recordedChecksumOfVersion1=", "Model 2": "recordedChecksumOfVersion2="]
        try PropertyListSerialization.data(fromPropertyList: info, format: .binary, options: 0).write(to: infoURL)
        #expect(try NSManagedObjectModel.checksumsForVersionedModel(at: momd) == ["Model": "recordedChecksumOfVersion1=", "Model 2": "recordedChecksumOfVersion2="])
        let first = NSManagedObjectModelReference(fileURL: momd, versionChecksum: "recordedChecksumOfVersion1=").resolvedModel
        #expect(first.entitiesByName["NewEntity"] == nil && first.entitiesByName["MainEntity"] != nil)
        let second = NSManagedObjectModelReference(fileURL: momd, versionChecksum: computed["Model 2"]!).resolvedModel
        #expect(second.entitiesByName["NewEntity"] != nil, "the computed checksum names the version too")

        let notVersioned = try #require(throws: NSError.self) { try NSManagedObjectModel.checksumsForVersionedModel(at: momd.appendingPathComponent("Model.mom")) }
        #expect(notVersioned.code == NSFileReadCorruptFileError)
    }
}
