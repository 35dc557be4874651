import Foundation
import OpenCoreData
import Testing

/// `NSPersistentCloudKitContainer` on Linux: a local container that checks its model against
/// CloudKit's rules as Apple's does, so CloudKit-bound code compiles, runs and fails alike.
@MainActor
@Suite struct CloudKitContainerTests {
    /// Notes and tags, many-to-many: what CloudKit accepts.
    private static func compatibleModel() -> NSManagedObjectModel {
        let note = NSEntityDescription(name: "Note")
        let tag = NSEntityDescription(name: "Tag")
        let (tags, notes) = TestSupport.relationships("tags", from: note, toMany: true, inverse: "notes", to: tag, inverseToMany: true)
        note.properties = [NSAttributeDescription(name: "title", type: .stringAttributeType),
                           NSAttributeDescription(name: "views", type: .integer64AttributeType, isOptional: false, defaultValue: Int64(0)), tags]
        tag.properties = [NSAttributeDescription(name: "name", type: .stringAttributeType), notes]
        let model = NSManagedObjectModel()
        model.entities = [note, tag]
        return model
    }

    private static func container(_ model: NSManagedObjectModel, cloudKit: Bool) -> (NSPersistentCloudKitContainer, URL) {
        let container = NSPersistentCloudKitContainer(name: "Notes", managedObjectModel: model)
        let url = TestSupport.temporaryDirectory().appendingPathComponent("Notes.sqlite")
        let description = NSPersistentStoreDescription(url: url)
        if cloudKit { description.cloudKitContainerOptions = NSPersistentCloudKitContainerOptions(containerIdentifier: "iCloud.com.example.Notes") }
        container.persistentStoreDescriptions = [description]
        return (container, url)
    }

    @Test func aCompatibleModelLoadsAndWorksLocally() throws {
        let (container, url) = Self.container(Self.compatibleModel(), cloudKit: true)
        var loadError: Error?
        container.loadPersistentStores { _, error in loadError = error }
        #expect(loadError == nil)
        #expect(container.persistentStoreDescriptions[0].cloudKitContainerOptions?.containerIdentifier == "iCloud.com.example.Notes")
        try container.initializeCloudKitSchema(options: [.dryRun])
        let note = NSEntityDescription.insertNewObject(forEntityName: "Note", into: container.viewContext)
        note.setValue("Hello", forKey: "title")
        try container.viewContext.save()
        #expect(FileManager.default.fileExists(atPath: url.path))
        #expect(container.canUpdateRecord(forManagedObjectWith: note.objectID))
        #expect(container.canDeleteRecord(forManagedObjectWith: note.objectID))
        #expect(container.canModifyManagedObjects(in: container.persistentStoreCoordinator.persistentStores[0]))
    }

    @Test func aModelCloudKitCantMirrorFailsToLoadAsOnADevice() throws {
        let model = TestSupport.makeCompanyModel()
        model.entitiesByName["Project"]?.uniquenessConstraints = [["title"]]
        let (container, url) = Self.container(model, cloudKit: true)
        var loadError: NSError?
        container.loadPersistentStores { _, error in loadError = error as NSError? }
        let error = try #require(loadError)
        #expect(error.domain == NSCocoaErrorDomain)
        #expect(error.code == 134060)
        let reason = try #require(error.userInfo[NSLocalizedFailureReasonErrorKey] as? String)
        for expected in ["Employee.name: must be optional or have a default value", "Department.teams: ordered relationships aren't supported",
                         "Manager.reports: the Deny delete rule isn't supported", "Project: unique constraints aren't supported"] {
            #expect(reason.contains(expected), "\(expected)")
        }
        #expect(container.persistentStoreCoordinator.persistentStores.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: url.path), "nothing was created")
        #expect(throws: NSError.self) { try container.initializeCloudKitSchema() }

        // The same model in a store that isn't mirrored loads as usual.
        let (local, _) = Self.container(model, cloudKit: false)
        var localError: Error?
        local.loadPersistentStores { _, error in localError = error }
        #expect(localError == nil)
        #expect(local.persistentStoreCoordinator.persistentStores.count == 1)
    }

    @Test func aDescriptionsTimeoutIsTheStoresLockTimeout() throws {
        let description = NSPersistentStoreDescription()
        #expect(description.timeout == 10)
        description.timeout = 2.5
        #expect(description.options[NSPersistentStoreTimeoutOption] as? TimeInterval == 2.5)
    }
}
