import Foundation
import OpenCoreData
import Synchronization
import Testing

/// A picture stored by the UnCloudNotes model's "ImageTransformer" (the app stores a UIImage).
struct NotePicture: Codable, Equatable {
    var width: Double
    var height: Double
}

/// Stores a `NotePicture` as JSON data, as the app's ImageTransformer stores PNG data.
final class NotePictureTransformer: ValueTransformer, @unchecked Sendable {
    override func transformedValue(_ value: Any?) -> Any? {
        (value as? NotePicture).flatMap { try? JSONEncoder().encode($0) }
    }

    override func reverseTransformedValue(_ value: Any?) -> Any? {
        (value as? Data).flatMap { try? JSONDecoder().decode(NotePicture.self, from: $0) }
    }

    static func register() {
        ValueTransformer.setValueTransformer(NotePictureTransformer(), forName: NSValueTransformerName("ImageTransformer"))
    }
}

/// The policy the UnCloudNotes v3→v4 mapping model names: an attachment becomes an image
/// attachment with its picture's size and a caption from its note's body.
final class AttachmentToImageAttachmentMigrationPolicyV3toV4: NSEntityMigrationPolicy {
    /// The migration progress each manager reported as this policy ran, by manager: other suites
    /// run this mapping model at the same time.
    private static let progress = Mutex<[ObjectIdentifier: [Float]]>([:])

    /// What `manager` reported, in order (the manager must still be alive, so its identifier is its own).
    static func progressSeen(by manager: NSMigrationManager) -> [Float] {
        progress.withLock { $0[ObjectIdentifier(manager)] ?? [] }
    }

    override func createDestinationInstances(forSource sInstance: NSManagedObject, in mapping: NSEntityMapping, manager: NSMigrationManager) throws {
        let reported = manager.migrationProgress
        Self.progress.withLock { $0[ObjectIdentifier(manager), default: []].append(reported) }
        guard let entity = NSEntityDescription.entity(forEntityName: "ImageAttachment", in: manager.destinationContext) else {
            throw NSError(domain: NSCocoaErrorDomain, code: NSEntityMigrationPolicyError)
        }
        let attachment = NSManagedObject(entity: entity, insertInto: manager.destinationContext)
        for propertyMapping in mapping.attributeMappings ?? [] {
            guard let name = propertyMapping.name, let expression = propertyMapping.valueExpression else { continue }
            let context: NSMutableDictionary = ["source": sInstance]
            attachment.setValue(expression.expressionValue(with: sInstance, context: context), forKey: name)
        }
        if let picture = sInstance.value(forKey: "image") as? NotePicture {
            attachment.setValue(Float(picture.width), forKey: "width")
            attachment.setValue(Float(picture.height), forKey: "height")
        }
        let body = sInstance.value(forKeyPath: "note.body") as? String ?? ""
        attachment.setValue(String(body.prefix(80)), forKey: "caption")
        manager.associate(sourceInstance: sInstance, withDestinationInstance: attachment, for: mapping)
    }
}

/// The four-version UnCloudNotes model from "Core Data by Tutorials", with its two mapping models:
/// v1→v2 is inferred, v2→v3 moves images into Attachment objects, v3→v4 turns attachments into
/// image attachments through a custom policy.
@Suite(.serialized) struct UnCloudNotesMigrationTests {
    static let bundle = TestSupport.modelURL("uncloudnotes", "UnCloudNotesDataModel")

    static func version(_ number: Int) throws -> NSManagedObjectModel {
        let folder = number == 1 ? "UnCloudNotesDataModel.xcdatamodel" : "UnCloudNotesDataModel v\(number).xcdatamodel"
        return try NSManagedObjectModel.load(contentsOf: bundle.appendingPathComponent(folder))
    }

    /// A store at `version` holding `count` notes (every other one with a picture from v2 on).
    static func makeStore(version number: Int, notes count: Int, in directory: URL) throws -> URL {
        NotePictureTransformer.register()
        let url = directory.appendingPathComponent("UnCloudNotes.sqlite")
        let model = try version(number)
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url, options: nil)
        let context = TestSupport.context(coordinator)
        for index in 0..<count {
            let note = NSManagedObject(entity: model.entitiesByName["Note"]!, insertInto: context)
            note.setValue("Note \(index)", forKey: "title")
            note.setValue("Body of note \(index): " + String(repeating: "lorem ipsum ", count: 10), forKey: "body")
            note.setValue(Date(timeIntervalSinceReferenceDate: Double(index) * 3600), forKey: "dateCreated")
            note.setValue(Int64(index), forKey: "displayIndex")
            if number == 2 && index % 2 == 0 {
                note.setValue(NotePicture(width: Double(100 + index), height: Double(50 + index)), forKey: "image")
            }
        }
        try context.save()
        for store in coordinator.persistentStores { try coordinator.remove(store) }
        return url
    }

    /// One step of the tutorial's progressive migration: the mapping model from the bundle, or the
    /// inferred one, run by a migration manager into a new file that then replaces the store.
    @discardableResult
    static func migrate(_ url: URL, from source: NSManagedObjectModel, to destination: NSManagedObjectModel, searching directory: URL) throws -> NSMigrationManager {
        let mapping = try NSMappingModel(from: [Bundle(url: directory)!], forSourceModel: source, destinationModel: destination)
            ?? NSMappingModel.inferredMappingModel(forSourceModel: source, destinationModel: destination)
        let manager = NSMigrationManager(sourceModel: source, destinationModel: destination)
        let target = url.deletingLastPathComponent().appendingPathComponent("migrated.sqlite")
        try manager.migrateStore(from: url, type: .sqlite, mapping: mapping, to: target, type: .sqlite)
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: destination)
        try coordinator.replacePersistentStore(at: url, withPersistentStoreFrom: target, ofType: NSSQLiteStoreType)
        try coordinator.destroyPersistentStore(at: target, ofType: NSSQLiteStoreType)
        return manager
    }

    static func notes(in url: URL, model: NSManagedObjectModel) throws -> (NSManagedObjectContext, [NSManagedObject]) {
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url, options: nil)
        let context = TestSupport.context(coordinator)
        let request = NSFetchRequest<NSManagedObject>(entityName: "Note")
        request.sortDescriptors = [NSSortDescriptor(key: "displayIndex", ascending: true)]
        return (context, try context.fetch(request))
    }

    @Test func theMappingModelsLoadAsXcodeWroteThem() throws {
        let v2to3 = try #require(NSMappingModel(contentsOf: TestSupport.fixtures.appendingPathComponent("uncloudnotes/UnCloudNotesMappingModel_v2_to_v3.xcmappingmodel")))
        #expect(v2to3.entityMappings.map(\.name) == ["NoteToAttachment", "NoteToNote"])
        let toAttachment = try #require(v2to3.entityMappingsByName["NoteToAttachment"])
        #expect(toAttachment.sourceEntityName == "Note")
        #expect(toAttachment.destinationEntityName == "Attachment")
        #expect(toAttachment.mappingType == .customEntityMappingType)
        #expect(toAttachment.attributeMappings?.compactMap(\.name) == ["dateCreated", "image"])
        #expect(toAttachment.relationshipMappings?.compactMap(\.name) == ["note"])
        #expect(v2to3.entityMappingsByName["NoteToNote"]?.attributeMappings?.compactMap(\.name) == ["body", "dateCreated", "displayIndex", "title"])

        let v3to4 = try #require(NSMappingModel(contentsOf: TestSupport.fixtures.appendingPathComponent("uncloudnotes/UnCloudNotesMappingModel_v3_to_v4.xcmappingmodel")))
        #expect(v3to4.entityMappings.map(\.name) == ["NoteToNote", "AttachmentToImageAttachment"], "in Xcode's order; the orphaned AttachmentToAttachment is not part of the model")
        #expect(v3to4.entityMappingsByName["AttachmentToImageAttachment"]?.entityMigrationPolicyClassName == "UnCloudNotes.AttachmentToImageAttachmentMigrationPolicyV3toV4")

        let directory = TestSupport.fixtures.appendingPathComponent("uncloudnotes")
        let found = try #require(NSMappingModel(from: [Bundle(url: directory)!], forSourceModel: Self.version(3), destinationModel: Self.version(4)))
        #expect(found.entityMappingsByName["AttachmentToImageAttachment"] != nil, "found by the model versions it was made for")
        #expect(try NSMappingModel(from: [Bundle(url: directory)!], forSourceModel: Self.version(1), destinationModel: Self.version(2)) == nil)
        #expect(NSMappingModel(contentsOf: directory.appendingPathComponent("missing.xcmappingmodel")) == nil)
    }

    @Test func aVersionOneStoreMigratesStepByStepToVersionFour() throws {
        AttachmentToImageAttachmentMigrationPolicyV3toV4.register()
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = try Self.makeStore(version: 1, notes: 30, in: directory)
        let fixtures = TestSupport.fixtures.appendingPathComponent("uncloudnotes")
        for step in 1...3 {
            try Self.migrate(url, from: Self.version(step), to: Self.version(step + 1), searching: fixtures)
        }
        let (context, notes) = try Self.notes(in: url, model: Self.version(4))
        #expect(notes.count == 30)
        for (index, note) in notes.enumerated() {
            #expect(note.value(forKey: "title") as? String == "Note \(index)")
            #expect((note.value(forKey: "body") as? String)?.hasPrefix("Body of note \(index): ") == true)
            #expect(note.value(forKey: "dateCreated") as? Date == Date(timeIntervalSinceReferenceDate: Double(index) * 3600))
            #expect(note.value(forKey: "displayIndex") as? Int64 == Int64(index))
        }
        #expect(try context.count(for: NSFetchRequest<NSManagedObject>(entityName: "Attachment")) == 0)
        let metadata = try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: NSSQLiteStoreType, at: url)
        #expect(try Self.version(4).isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
    }

    @Test func picturesBecomeImageAttachmentsThroughTheMappingModelsAndTheCustomPolicy() throws {
        AttachmentToImageAttachmentMigrationPolicyV3toV4.register()
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = try Self.makeStore(version: 2, notes: 12, in: directory)
        let fixtures = TestSupport.fixtures.appendingPathComponent("uncloudnotes")
        try Self.migrate(url, from: Self.version(2), to: Self.version(3), searching: fixtures)

        let (v3Context, v3Notes) = try Self.notes(in: url, model: Self.version(3))
        #expect(v3Notes.count == 12)
        let v3Attachments = try v3Context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Attachment"))
        #expect(v3Attachments.count == 6, "only the notes with an image (the source filter image != nil)")
        for attachment in v3Attachments {
            let note = try #require(attachment.value(forKey: "note") as? NSManagedObject)
            let index = try #require(note.value(forKey: "displayIndex") as? Int64)
            #expect(attachment.value(forKey: "image") as? NotePicture == NotePicture(width: Double(100 + index), height: Double(50 + index)))
            #expect(attachment.value(forKey: "dateCreated") as? Date == note.value(forKey: "dateCreated") as? Date)
        }
        #expect(v3Notes.filter { ($0.value(forKey: "attachments") as? Set<NSManagedObject>)?.count == 1 }.count == 6, "the inverse is set")
        for store in v3Context.persistentStoreCoordinator!.persistentStores { try v3Context.persistentStoreCoordinator!.remove(store) }

        let manager = try Self.migrate(url, from: Self.version(3), to: Self.version(4), searching: fixtures)
        let (context, notes) = try Self.notes(in: url, model: Self.version(4))
        #expect(notes.count == 12)
        let attachments = try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "ImageAttachment"))
        #expect(attachments.count == 6)
        for attachment in attachments {
            #expect(attachment.entity.name == "ImageAttachment")
            let note = try #require(attachment.value(forKey: "note") as? NSManagedObject)
            let index = try #require(note.value(forKey: "displayIndex") as? Int64)
            #expect(attachment.value(forKey: "width") as? Float == Float(100 + index))
            #expect(attachment.value(forKey: "height") as? Float == Float(50 + index))
            #expect(attachment.value(forKey: "caption") as? String == String((note.value(forKey: "body") as! String).prefix(80)))
            #expect(attachment.value(forKey: "image") as? NotePicture != nil)
        }
        let seen = AttachmentToImageAttachmentMigrationPolicyV3toV4.progressSeen(by: manager)
        #expect(seen.count == 6)
        #expect(seen == seen.sorted() && seen.first! < seen.last!, "the manager reports its progress as it goes")
    }
}
