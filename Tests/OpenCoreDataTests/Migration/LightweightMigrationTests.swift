import Foundation
import GRDB
import OpenCoreData
import Testing

/// Lightweight migration when a store is added: inferred mappings run in place in SQL, in one
/// transaction; failures leave the file as it was.
@Suite struct LightweightMigrationTests {
    /// Version 1: Person (name, age, nickname, score, city) ←→> Pet (name, owner); Person <<→> Club
    /// (many-to-many); an Obsolete entity with rows.
    static func version1() -> NSManagedObjectModel {
        let person = NSEntityDescription(name: "Person")
        let pet = NSEntityDescription(name: "Pet")
        let club = NSEntityDescription(name: "Club")
        let obsolete = NSEntityDescription(name: "Obsolete")
        let pets = NSRelationshipDescription(name: "pets", destination: pet, toMany: true)
        let owner = NSRelationshipDescription(name: "owner", destination: person)
        let clubs = NSRelationshipDescription(name: "clubs", destination: club, toMany: true)
        let members = NSRelationshipDescription(name: "members", destination: person, toMany: true)
        TestSupport.pair(pets, owner)
        TestSupport.pair(clubs, members)
        person.properties = [
            NSAttributeDescription(name: "name", type: .stringAttributeType, isOptional: false),
            NSAttributeDescription(name: "age", type: .integer16AttributeType),
            NSAttributeDescription(name: "nickname", type: .stringAttributeType),
            NSAttributeDescription(name: "score", type: .integer32AttributeType),
            NSAttributeDescription(name: "city", type: .stringAttributeType),
            pets, clubs,
        ]
        pet.properties = [NSAttributeDescription(name: "name", type: .stringAttributeType), owner]
        club.properties = [NSAttributeDescription(name: "title", type: .stringAttributeType), members]
        obsolete.properties = [NSAttributeDescription(name: "junk", type: .stringAttributeType)]
        let model = NSManagedObjectModel()
        model.entities = [person, pet, club, obsolete]
        return model
    }

    /// Version 2: Person renamed Human (name → fullName, age widened to Integer 64, nickname
    /// removed, score now a String, city required with a default, a new required email with a
    /// default); Pet moved under a new abstract Animal, its owner renamed keeper and made
    /// to-many (so Human ↔ Pet is many-to-many); Club's members became one ordered to-one
    /// `club` on Human; Obsolete gone; a new Vet entity.
    static func version2(cityDefault: String? = "Nowhere", uniqueName: Bool = false) -> NSManagedObjectModel {
        let human = NSEntityDescription(name: "Human")
        human.renamingIdentifier = "Person"
        let animal = NSEntityDescription(name: "Animal")
        animal.isAbstract = true
        let pet = NSEntityDescription(name: "Pet")
        let club = NSEntityDescription(name: "Club")
        let vet = NSEntityDescription(name: "Vet")
        let pets = NSRelationshipDescription(name: "pets", destination: pet, toMany: true)
        let keepers = NSRelationshipDescription(name: "keepers", destination: human, toMany: true)
        keepers.renamingIdentifier = "owner"
        let humanClub = NSRelationshipDescription(name: "club", destination: club)
        humanClub.renamingIdentifier = "clubs"
        let members = NSRelationshipDescription(name: "members", destination: human, toMany: true, ordered: true)
        TestSupport.pair(pets, keepers)
        TestSupport.pair(humanClub, members)
        let fullName = NSAttributeDescription(name: "fullName", type: .stringAttributeType, isOptional: false)
        fullName.renamingIdentifier = "name"
        human.properties = [
            fullName,
            NSAttributeDescription(name: "age", type: .integer64AttributeType),
            NSAttributeDescription(name: "score", type: .stringAttributeType),
            NSAttributeDescription(name: "city", type: .stringAttributeType, isOptional: false, defaultValue: cityDefault),
            NSAttributeDescription(name: "email", type: .stringAttributeType, isOptional: false, defaultValue: "unknown@example.com"),
            pets, humanClub,
        ]
        if uniqueName { human.uniquenessConstraints = [["city"]] }
        animal.properties = [NSAttributeDescription(name: "name", type: .stringAttributeType)]
        pet.properties = [NSAttributeDescription(name: "species", type: .stringAttributeType), keepers]
        animal.subentities = [pet]
        club.properties = [NSAttributeDescription(name: "title", type: .stringAttributeType), members]
        vet.properties = [NSAttributeDescription(name: "clinic", type: .stringAttributeType)]
        let model = NSManagedObjectModel()
        model.entities = [human, animal, pet, club, vet]
        return model
    }

    static var migrating: [AnyHashable: Any] { TestSupport.migrating() }

    /// A version-1 store: 20 people (every fourth without a city), 2 pets each, 3 clubs.
    static func makeStore(in directory: URL) throws -> URL {
        let url = directory.appendingPathComponent("People.sqlite")
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: version1())
        try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url, options: nil)
        try fillVersion1(TestSupport.context(coordinator))
        for store in coordinator.persistentStores { try coordinator.remove(store) }
        return url
    }

    /// Saves version 1's objects through a context: 20 people (every fourth without a city), 2
    /// pets each, 3 clubs, one obsolete row.
    static func fillVersion1(_ context: NSManagedObjectContext) throws {
        let clubs = (0..<3).map { index -> NSManagedObject in
            let club = NSEntityDescription.insertNewObject(forEntityName: "Club", into: context)
            club.setValue("Club \(index)", forKey: "title")
            return club
        }
        for index in 0..<20 {
            let person = NSEntityDescription.insertNewObject(forEntityName: "Person", into: context)
            person.setValue("Person \(index)", forKey: "name")
            person.setValue(Int16(20 + index), forKey: "age")
            person.setValue("nick\(index)", forKey: "nickname")
            person.setValue(Int32(index * 10), forKey: "score")
            person.setValue(index % 4 == 0 ? nil : "City \(index % 3)", forKey: "city")
            person.mutableSetValue(forKey: "clubs").add(clubs[index % 3])
            for petIndex in 0..<2 {
                let pet = NSEntityDescription.insertNewObject(forEntityName: "Pet", into: context)
                pet.setValue("Pet \(index)-\(petIndex)", forKey: "name")
                pet.setValue(person, forKey: "owner")
            }
        }
        NSEntityDescription.insertNewObject(forEntityName: "Obsolete", into: context).setValue("junk", forKey: "junk")
        try context.save()
    }

    /// The names of the files that differ between two snapshots (added, removed or changed).
    static func changes(_ before: [String: Data], _ directory: URL) throws -> [String] {
        let after = try TestSupport.snapshot(directory)
        return Set(before.keys).union(after.keys).filter { before[$0] != after[$0] }.sorted()
    }

    static func inode(_ url: URL) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: url.path)[.systemFileNumber] as? NSNumber)?.intValue ?? -1
    }

    @Test func attributesEntitiesAndRelationshipsMigrateInPlace() throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = try Self.makeStore(in: directory)
        let identifier = try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: NSSQLiteStoreType, at: url)[NSStoreUUIDKey] as? String
        let inode = try Self.inode(url)

        let model = Self.version2()
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        var options = Self.migrating
        options[OCDMigrationSourceModelsOptionKey] = [Self.version1()]
        let parent = Progress(totalUnitCount: 1)
        parent.becomeCurrent(withPendingUnitCount: 1)
        let store = try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url, options: options)
        parent.resignCurrent()
        #expect(parent.fractionCompleted == 1, "the migration reports its progress to the caller's current progress")
        #expect(try Self.inode(url) == inode, "migrated in place, not copied")
        #expect(store.identifier == identifier, "the store keeps its identifier, so object URIs stay valid")

        try Self.checkVersion2(coordinator)

        let metadata = try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: NSSQLiteStoreType, at: url)
        #expect(model.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
    }

    /// Checks what `fillVersion1` saved, migrated to `version2()`, through a coordinator on the
    /// migrated store; then saves new objects, which must get keys of their own.
    static func checkVersion2(_ coordinator: NSPersistentStoreCoordinator) throws {
        let context = TestSupport.context(coordinator)
        let request = NSFetchRequest<NSManagedObject>(entityName: "Human")
        request.sortDescriptors = [NSSortDescriptor(key: "age", ascending: true)]
        let humans = try context.fetch(request)
        #expect(humans.count == 20)
        for (index, human) in humans.enumerated() {
            #expect(human.value(forKey: "fullName") as? String == "Person \(index)", "renamed attribute")
            #expect(human.value(forKey: "age") as? Int64 == Int64(20 + index), "widened type")
            #expect(human.value(forKey: "score") as? String == "\(index * 10)", "number to string")
            #expect(human.value(forKey: "city") as? String == (index % 4 == 0 ? "Nowhere" : "City \(index % 3)"), "required now, the default fills the gaps")
            #expect(human.value(forKey: "email") as? String == "unknown@example.com", "new attribute takes its default")
            let pets = try #require(human.value(forKey: "pets") as? Set<NSManagedObject>)
            #expect(Set(pets.compactMap { $0.value(forKey: "name") as? String }) == ["Pet \(index)-0", "Pet \(index)-1"], "one-to-many became many-to-many, pairs kept")
            #expect((human.value(forKey: "club") as? NSManagedObject)?.value(forKey: "title") as? String == "Club \(index % 3)", "many-to-many became to-one")
        }
        let pet = try #require(try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Animal")).first)
        #expect(pet.entity.name == "Pet", "Pet rows moved into the new Animal hierarchy")
        #expect((pet.value(forKey: "keepers") as? Set<NSManagedObject>)?.count == 1)
        let clubRequest = NSFetchRequest<NSManagedObject>(entityName: "Club")
        clubRequest.sortDescriptors = [NSSortDescriptor(key: "title", ascending: true)]
        let club = try #require(try context.fetch(clubRequest).first)
        let members = try #require(club.value(forKey: "members") as? NSOrderedSet)
        #expect(members.count == 7)
        #expect(try context.count(for: NSFetchRequest<NSManagedObject>(entityName: "Vet")) == 0)

        // New objects get primary keys that don't collide with the migrated ones.
        let newcomer = NSEntityDescription.insertNewObject(forEntityName: "Human", into: context)
        newcomer.setValue("Newcomer", forKey: "fullName")
        let newPet = NSEntityDescription.insertNewObject(forEntityName: "Pet", into: context)
        newPet.setValue("Rex", forKey: "name")
        newPet.mutableSetValue(forKey: "keepers").add(newcomer)
        try context.save()
        let check = TestSupport.context(coordinator)
        #expect(try check.count(for: NSFetchRequest<NSManagedObject>(entityName: "Human")) == 21)
        #expect(try check.count(for: NSFetchRequest<NSManagedObject>(entityName: "Pet")) == 41)

    }

    @Test func aFailedMigrationLeavesTheStoreExactlyAsItWas() throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = try Self.makeStore(in: directory)
        // A store that keeps no model of its own (as Core Data's before framework 637), so only
        // the versions given can be its source.
        let queue = try DatabaseQueue(path: url.path)
        try queue.write { db in try db.execute(sql: "DELETE FROM Z_MODELCACHE") }
        try queue.close()
        let before = try TestSupport.snapshot(directory)
        var options = Self.migrating
        options[OCDMigrationSourceModelsOptionKey] = [Self.version1()]

        func attempt(_ model: NSManagedObjectModel, _ options: [AnyHashable: Any]) -> NSError? {
            do {
                try NSPersistentStoreCoordinator(managedObjectModel: model).addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url, options: options)
                return nil
            } catch {
                return error as NSError
            }
        }

        let required = attempt(Self.version2(cityDefault: nil), options)
        #expect(required?.code == NSMigrationError, "a required attribute with no default can't be filled for the people without a city")
        #expect((required?.userInfo[NSUnderlyingErrorKey] as? NSError)?.code == NSValidationMissingMandatoryPropertyError)
        #expect(try Self.changes(before, directory) == [])

        let unique = attempt(Self.version2(uniqueName: true), options)
        #expect(unique?.code == NSMigrationConstraintViolationError, "people share cities")
        #expect(try Self.changes(before, directory) == [])

        let changedType = Self.version2()
        changedType.entitiesByName["Human"]!.properties.append(NSAttributeDescription(name: "nickname", type: .dateAttributeType))
        #expect(attempt(changedType, options)?.code == NSInferredMappingModelError, "a string can't become a date")
        #expect(try Self.changes(before, directory) == [])

        #expect(attempt(Self.version2(), Self.migrating)?.code == NSMigrationMissingSourceModelError, "no model version matches the store")
        var noInference = options
        noInference[NSInferMappingModelAutomaticallyOption] = false
        #expect(attempt(Self.version2(), noInference)?.code == NSMigrationMissingMappingModelError)
        #expect(attempt(Self.version2(), [:])?.code == NSPersistentStoreIncompatibleVersionHashError, "without the migration option the store is just incompatible")
        var readOnly = options
        readOnly[NSReadOnlyPersistentStoreOption] = true
        #expect(attempt(Self.version2(), readOnly)?.code == NSPersistentStoreIncompatibleVersionHashError, "a read-only store is never migrated")
        #expect(try Self.changes(before, directory) == [], "nothing was written by any attempt")

        #expect(attempt(Self.version2(), options) == nil, "and the store still migrates once the model is right")
    }

    @Test func aVersionHashModifierAloneForcesAMigration() throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = try Self.makeStore(in: directory)
        let modified = Self.version1()
        modified.entitiesByName["Pet"]!.versionHashModifier = "new-meaning"
        let original = Self.version1()
        #expect(modified.entitiesByName["Pet"]!.versionHash != original.entitiesByName["Pet"]!.versionHash)
        #expect(modified.entitiesByName["Person"]!.versionHash == original.entitiesByName["Person"]!.versionHash)
        let metadata = try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: NSSQLiteStoreType, at: url)
        #expect(!modified.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))

        let mapping = try NSMappingModel.inferredMappingModel(forSourceModel: Self.version1(), destinationModel: modified)
        #expect(mapping.entityMappingsByName["PetToPet"]?.mappingType == .transformEntityMappingType)
        #expect(mapping.entityMappingsByName["PersonToPerson"]?.mappingType == .copyEntityMappingType)

        var options = Self.migrating
        options[OCDMigrationSourceModelsOptionKey] = [Self.version1()]
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: modified)
        try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url, options: options)
        #expect(try TestSupport.context(coordinator).count(for: NSFetchRequest<NSManagedObject>(entityName: "Pet")) == 40)
    }

    @Test func inferredMappingsNameWhatTheyDo() throws {
        let mapping = try NSMappingModel.inferredMappingModel(forSourceModel: Self.version1(), destinationModel: Self.version2())
        let byName = mapping.entityMappingsByName
        #expect(byName["PersonToHuman"]?.mappingType == .transformEntityMappingType)
        #expect(byName["AddVet"]?.mappingType == .addEntityMappingType)
        #expect(byName["RemoveObsolete"]?.mappingType == .removeEntityMappingType)
        let fullName = try #require(byName["PersonToHuman"]?.attributeMappings?.first { $0.name == "fullName" })
        #expect(fullName.valueExpression?.description == "$source.name")
        #expect(byName["PersonToHuman"]?.attributeMappings?.first { $0.name == "email" }?.valueExpression == nil)
    }
}

/// Automatic migration of the UnCloudNotes model with the versions and mapping models beside it.
@MainActor
@Suite(.serialized) struct AutomaticMigrationTests {
    @Test func aContainerMigratesAVersionOneStoreToTheCurrentModelInPlace() throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = try UnCloudNotesMigrationTests.makeStore(version: 1, notes: 10, in: directory)
        let inode = try LightweightMigrationTests.inode(url)
        let current = try NSManagedObjectModel.load(contentsOf: UnCloudNotesMigrationTests.bundle)
        let container = NSPersistentContainer(name: "UnCloudNotesDataModel", managedObjectModel: current)
        let description = NSPersistentStoreDescription(url: url)
        #expect(description.shouldMigrateStoreAutomatically && description.shouldInferMappingModelAutomatically)
        container.persistentStoreDescriptions = [description]
        var loadError: Error?
        container.loadPersistentStores { _, error in loadError = error }
        #expect(loadError == nil)
        #expect(try LightweightMigrationTests.inode(url) == inode, "v1 → v4 is inferred (two new entities) and runs in place")
        let request = NSFetchRequest<NSManagedObject>(entityName: "Note")
        request.sortDescriptors = [NSSortDescriptor(key: "displayIndex", ascending: true)]
        let notes = try container.viewContext.fetch(request)
        #expect(notes.compactMap { $0.value(forKey: "title") as? String } == (0..<10).map { "Note \($0)" })
    }

    @Test func aVersionThreeStoreMigratesWithTheMappingModelBesideTheModel() throws {
        AttachmentToImageAttachmentMigrationPolicyV3toV4.register()
        NotePictureTransformer.register()
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("Notes.sqlite")
        let v3 = try UnCloudNotesMigrationTests.version(3)
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: v3)
        try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url, options: nil)
        let context = TestSupport.context(coordinator)
        let note = NSEntityDescription.insertNewObject(forEntityName: "Note", into: context)
        note.setValue("Holiday", forKey: "title")
        note.setValue("Pictures from the beach", forKey: "body")
        let attachment = NSEntityDescription.insertNewObject(forEntityName: "Attachment", into: context)
        attachment.setValue(Date(timeIntervalSinceReferenceDate: 0), forKey: "dateCreated")
        attachment.setValue(NotePicture(width: 640, height: 480), forKey: "image")
        attachment.setValue(note, forKey: "note")
        try context.save()
        let identifier = coordinator.persistentStores[0].identifier
        for store in coordinator.persistentStores { try coordinator.remove(store) }

        let current = try NSManagedObjectModel.load(contentsOf: UnCloudNotesMigrationTests.bundle)
        let migrated = NSPersistentStoreCoordinator(managedObjectModel: current)
        let store = try migrated.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url, options: LightweightMigrationTests.migrating)
        #expect(store.identifier == identifier)
        let migratedContext = TestSupport.context(migrated)
        let images = try migratedContext.fetch(NSFetchRequest<NSManagedObject>(entityName: "ImageAttachment"))
        #expect(images.count == 1)
        #expect(images.first?.value(forKey: "caption") as? String == "Pictures from the beach")
        #expect(images.first?.value(forKey: "width") as? Float == 640)
        #expect((images.first?.value(forKey: "note") as? NSManagedObject)?.value(forKey: "title") as? String == "Holiday")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.contains("migrating") }.isEmpty, "no temporary file left")
    }
}

/// Migration object by object, through `NSMigrationManager`: binary stores, cancellation, and
/// failures that must leave no destination behind.
@Suite struct ManagerMigrationTests {
    @Test func aBinaryStoreMigratesThroughTheManagerWithTheInferredMapping() throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("People.store")
        let source = LightweightMigrationTests.version1()
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: source)
        try coordinator.addPersistentStore(ofType: NSBinaryStoreType, configurationName: nil, at: url, options: nil)
        let context = TestSupport.context(coordinator)
        let club = NSEntityDescription.insertNewObject(forEntityName: "Club", into: context)
        club.setValue("Chess", forKey: "title")
        for index in 0..<5 {
            let person = NSEntityDescription.insertNewObject(forEntityName: "Person", into: context)
            person.setValue("Person \(index)", forKey: "name")
            person.setValue(Int32(index), forKey: "score")
            person.mutableSetValue(forKey: "clubs").add(club)
            let pet = NSEntityDescription.insertNewObject(forEntityName: "Pet", into: context)
            pet.setValue("Pet \(index)", forKey: "name")
            pet.setValue(person, forKey: "owner")
        }
        try context.save()
        for store in coordinator.persistentStores { try coordinator.remove(store) }

        var options = LightweightMigrationTests.migrating
        options[OCDMigrationSourceModelsOptionKey] = [LightweightMigrationTests.version1()]
        let migrated = NSPersistentStoreCoordinator(managedObjectModel: LightweightMigrationTests.version2())
        try migrated.addPersistentStore(ofType: NSBinaryStoreType, configurationName: nil, at: url, options: options)
        let check = TestSupport.context(migrated)
        let request = NSFetchRequest<NSManagedObject>(entityName: "Human")
        request.sortDescriptors = [NSSortDescriptor(key: "fullName", ascending: true)]
        let humans = try check.fetch(request)
        #expect(humans.compactMap { $0.value(forKey: "fullName") as? String } == (0..<5).map { "Person \($0)" })
        #expect(humans.compactMap { $0.value(forKey: "score") as? String } == (0..<5).map { "\($0)" })
        #expect(humans.allSatisfy { $0.value(forKey: "city") as? String == "Nowhere" })
        #expect(humans.allSatisfy { ($0.value(forKey: "club") as? NSManagedObject)?.value(forKey: "title") as? String == "Chess" })
        #expect(humans.map { (($0.value(forKey: "pets") as? Set<NSManagedObject>)?.first?.value(forKey: "name") as? String) ?? "" } == (0..<5).map { "Pet \($0)" })
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["People.store"])
    }

    @Test func failuresAndCancellationLeaveNoDestination() throws {
        NotePictureTransformer.register()
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = try UnCloudNotesMigrationTests.makeStore(version: 2, notes: 4, in: directory)
        let before = try TestSupport.snapshot(directory)
        let target = directory.appendingPathComponent("target.sqlite")
        let v2 = try UnCloudNotesMigrationTests.version(2)
        let v3 = try UnCloudNotesMigrationTests.version(3)
        let mapping = try #require(NSMappingModel(contentsOf: TestSupport.fixtures.appendingPathComponent("uncloudnotes/UnCloudNotesMappingModel_v2_to_v3.xcmappingmodel")))

        mapping.entityMappings[0].entityMigrationPolicyClassName = "Elsewhere.MissingPolicy"
        let missing = try #require(throws: NSError.self) {
            try NSMigrationManager(sourceModel: v2, destinationModel: v3).migrateStore(
                from: url, sourceType: NSSQLiteStoreType, with: mapping, toDestinationURL: target, destinationType: NSSQLiteStoreType)
        }
        #expect(missing.code == NSEntityMigrationPolicyError)
        let changedFiles = try LightweightMigrationTests.changes(before, directory)
        #expect(changedFiles == [], "\(changedFiles)")

        mapping.entityMappings[0].entityMigrationPolicyClassName = nil
        let manager = NSMigrationManager(sourceModel: v2, destinationModel: v3)
        CancellingPolicy.register()
        mapping.entityMappings[1].entityMigrationPolicyClassName = "CancellingPolicy"
        let cancelled = try #require(throws: NSError.self) {
            try manager.migrateStore(from: url, sourceType: NSSQLiteStoreType, with: mapping, toDestinationURL: target, destinationType: NSSQLiteStoreType)
        }
        #expect(cancelled.code == NSMigrationCancelledError)
        #expect(try LightweightMigrationTests.changes(before, directory) == [], "the source is untouched and the partial destination removed")

        // Cancelled from another thread with the app's own error: that error is thrown.
        CancellingFromAnotherThreadPolicy.register()
        mapping.entityMappings[1].entityMigrationPolicyClassName = "CancellingFromAnotherThreadPolicy"
        let stopped = try #require(throws: NSError.self) {
            try NSMigrationManager(sourceModel: v2, destinationModel: v3).migrateStore(
                from: url, sourceType: NSSQLiteStoreType, with: mapping, toDestinationURL: target, destinationType: NSSQLiteStoreType)
        }
        #expect(stopped.domain == "Test.Stopped" && stopped.code == 7, "\(stopped)")
        #expect(try LightweightMigrationTests.changes(before, directory) == [])

        let wrongModel = try #require(throws: NSError.self) {
            try NSMigrationManager(sourceModel: v3, destinationModel: v3).migrateStore(
                from: url, sourceType: NSSQLiteStoreType, with: nil, toDestinationURL: target, destinationType: NSSQLiteStoreType)
        }
        #expect(wrongModel.code == NSMigrationManagerSourceStoreError)
        #expect(try LightweightMigrationTests.changes(before, directory) == [])
    }
}

/// Cancels the migration it runs in from another thread, as an app's cancel button would.
final class CancellingFromAnotherThreadPolicy: NSEntityMigrationPolicy {
    override func createDestinationInstances(forSource sInstance: NSManagedObject, in mapping: NSEntityMapping, manager: NSMigrationManager) throws {
        try super.createDestinationInstances(forSource: sInstance, in: mapping, manager: manager)
        DispatchQueue.global().sync { manager.cancelMigrationWithError(NSError(domain: "Test.Stopped", code: 7)) }
    }
}

/// Cancels the migration it runs in, through the manager's progress.
final class CancellingPolicy: NSEntityMigrationPolicy {
    override func createDestinationInstances(forSource sInstance: NSManagedObject, in mapping: NSEntityMapping, manager: NSMigrationManager) throws {
        try super.createDestinationInstances(forSource: sInstance, in: mapping, manager: manager)
        manager.progress.cancel()
    }
}
