import Foundation
import OpenCoreData
import Testing

/// A subclass that records every lifecycle hook Core Data calls.
final class Audited: NSManagedObject {
    @Managed var name: String?
    @Managed var count: Int64

    nonisolated(unsafe) static var log: [String] = []

    override func awakeFromInsert() { super.awakeFromInsert(); Self.log.append("awakeFromInsert") }
    override func awakeFromFetch() { super.awakeFromFetch(); Self.log.append("awakeFromFetch \(name ?? "")") }
    override func willSave() { super.willSave(); Self.log.append("willSave") }
    override func didSave() { super.didSave(); Self.log.append("didSave") }
    override func prepareForDeletion() { super.prepareForDeletion(); Self.log.append("prepareForDeletion") }
    override func validateForInsert() throws {
        try super.validateForInsert()
        if name == "invalid" {
            throw NSError(domain: NSCocoaErrorDomain, code: NSManagedObjectValidationError, userInfo: [NSValidationKeyErrorKey: "name"])
        }
    }
}

@MainActor
@Suite(.serialized) struct LifecycleTests {
    private func context() throws -> NSManagedObjectContext {
        let entity = NSEntityDescription(name: "Audited", className: "Audited", properties: [
            NSAttributeDescription(name: "name", type: .stringAttributeType),
            NSAttributeDescription(name: "count", type: .integer64AttributeType, isOptional: false, defaultValue: Int64(0)),
        ])
        let model = NSManagedObjectModel()
        model.entities = [entity]
        let (coordinator, _) = try TestSupport.coordinator(model)
        return TestSupport.context(coordinator)
    }

    @Test func hooksRunInCoreDataOrder() throws {
        let context = try context()
        Audited.log = []
        let object = Audited(context: context)
        object.name = "A"
        #expect(Audited.log == ["awakeFromInsert"])
        try context.save()
        #expect(Audited.log == ["awakeFromInsert", "willSave", "didSave"])

        let fresh = NSManagedObjectContext(concurrencyType: .mainQueueConcurrencyType)
        fresh.persistentStoreCoordinator = context.persistentStoreCoordinator
        Audited.log = []
        let fetched = try #require(try fresh.fetch(Audited.fetchRequest()).first as? Audited)
        #expect(Audited.log.isEmpty, "a fault is not awake yet")
        #expect(fetched.count == 0)
        #expect(Audited.log == ["awakeFromFetch A"])
        fresh.delete(fetched)
        #expect(Audited.log.last == "prepareForDeletion")
        try fresh.save()
        #expect(Audited.log.suffix(2) == ["willSave", "didSave"])
    }

    @Test func hooksRunForSubclassInstancesSavedAmongPlainObjects() throws {
        // A subclass instance saved among plain NSManagedObject instances gets each hook, in every
        // list (inserted, then updated, then deleted).
        let audited = NSEntityDescription(name: "Audited", className: "Audited", properties: [
            NSAttributeDescription(name: "name", type: .stringAttributeType),
            NSAttributeDescription(name: "count", type: .integer64AttributeType, isOptional: false, defaultValue: Int64(0)),
        ])
        let plain = NSEntityDescription(name: "Plain", properties: [NSAttributeDescription(name: "n", type: .integer64AttributeType)])
        let model = NSManagedObjectModel()
        model.entities = [audited, plain]
        let (coordinator, _) = try TestSupport.coordinator(model)
        let context = TestSupport.context(coordinator)
        Audited.log = []
        for number in 0..<3 { NSEntityDescription.insertNewObject(forEntityName: "Plain", into: context).setValue(Int64(number), forKey: "n") }
        let object = Audited(context: context)
        try context.save()
        #expect(Audited.log == ["awakeFromInsert", "willSave", "didSave"])
        _ = NSEntityDescription.insertNewObject(forEntityName: "Plain", into: context)
        object.count = 2
        try context.save()
        #expect(Audited.log.suffix(2) == ["willSave", "didSave"])
        context.delete(object)
        try context.save()
        #expect(Audited.log.suffix(3) == ["prepareForDeletion", "willSave", "didSave"])
    }

    @Test func overriddenValidationStopsTheSave() throws {
        let context = try context()
        let object = Audited(context: context)
        object.name = "invalid"
        let error = try #require(throws: NSError.self) { try context.save() }
        #expect(error.code == NSManagedObjectValidationError)
        object.name = "valid"
        try context.save()
        #expect(!object.objectID.isTemporaryID)
    }

    @Test func fetchRequestAndEntityFromTheClass() throws {
        let context = try context()
        _ = Audited(context: context)
        try context.save()
        #expect(Audited.entity().name == "Audited")
        let request = Audited.fetchRequest()
        #expect(request.entityName == "Audited")
        #expect(try context.count(for: request) == 1)
        #expect(NSEntityDescription.entity(forEntityName: "Audited", in: context) === Audited.entity())
    }

    @Test func permanentIDsObtainedEarlyAreKept() throws {
        let context = try context()
        let object = Audited(context: context)
        try context.obtainPermanentIDs(for: [object])
        let early = object.objectID
        #expect(!early.isTemporaryID)
        try context.save()
        #expect(object.objectID == early)
        let fresh = NSManagedObjectContext(concurrencyType: .mainQueueConcurrencyType)
        fresh.persistentStoreCoordinator = context.persistentStoreCoordinator
        #expect(try fresh.existingObject(with: early).objectID == early)
    }

    @Test func metadataChangesAreSaved() throws {
        let context = try context()
        let coordinator = try #require(context.persistentStoreCoordinator)
        let store = try #require(coordinator.persistentStores.first)
        var metadata = coordinator.metadata(for: store)
        metadata["AppVersion"] = "2.0"
        coordinator.setMetadata(metadata, for: store)
        _ = Audited(context: context)
        try context.save()
        let onDisk = try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: NSSQLiteStoreType, at: try #require(store.url))
        #expect(onDisk["AppVersion"] as? String == "2.0")
    }
}
