import Foundation
import OpenCoreData
import Testing

/// Core Data's classes are NSObject subclasses, as on Apple's platforms, with Apple's equality:
/// contexts, coordinators and stores by identity; descriptions, models and requests by value.
@Suite("NSObject semantics")
struct NSObjectSemanticsTests {
    @Test("the stack's classes are NSObjects, compared by identity")
    func identityClasses() throws {
        let container = NSPersistentContainer(name: "Company", managedObjectModel: TestSupport.makeCompanyModel())
        container.persistentStoreDescriptions = [NSPersistentStoreDescription(url: URL(fileURLWithPath: "/dev/null"))]
        container.loadPersistentStores { _, error in #expect(error == nil) }
        let mainContext = container.viewContext
        let context = container.newBackgroundContext()
        #expect(context != mainContext)
        #expect(mainContext == container.viewContext)
        let objects: [NSObject] = [
            mainContext, container, container.persistentStoreCoordinator, container.managedObjectModel,
            try #require(container.persistentStoreCoordinator.persistentStores.first), container.persistentStoreDescriptions[0],
            NSMergePolicy.mergeByPropertyObjectTrump, NSFetchRequest<NSManagedObject>(entityName: "Company"),
            NSFetchedResultsController(fetchRequest: Self.request(), managedObjectContext: mainContext, sectionNameKeyPath: nil, cacheName: nil),
            NSMigrationManager(sourceModel: container.managedObjectModel, destinationModel: container.managedObjectModel),
            NSMappingModel(), NSEntityMapping(), NSPropertyMapping(), NSEntityMigrationPolicy(), ValueTransformer(),
        ]
        #expect(objects.count == 15)
        #expect(Set(objects.map(ObjectIdentifier.init)).count == 15)
        #expect(!mainContext.description.isEmpty && mainContext.hash == mainContext.hash)
    }

    static func request() -> NSFetchRequest<NSManagedObject> {
        let request = NSFetchRequest<NSManagedObject>(entityName: "Company")
        request.sortDescriptors = [NSSortDescriptor(key: "name", ascending: true)]
        request.predicate = NSPredicate(format: "name BEGINSWITH %@", "A")
        return request
    }

    @Test("two loads of one model version: equal entities, properties and models")
    func modelEquality() throws {
        let first = try TestSupport.model("uncloudnotes", "UnCloudNotesDataModel")
        let second = try TestSupport.model("uncloudnotes", "UnCloudNotesDataModel")
        #expect(first !== second)
        #expect(first.entitiesByName == second.entitiesByName)
        #expect(first == second)
        #expect(first.hash == second.hash)
        let note = try #require(first.entitiesByName.values.first)
        let again = try #require(second.entitiesByName[note.name ?? ""])
        #expect(note == again && note.hash == again.hash)
        #expect(Set(note.properties) == Set(again.properties))

        // A change anywhere makes them differ.
        let changed = try TestSupport.model("uncloudnotes", "UnCloudNotesDataModel")
        let attribute = try #require(changed.entitiesByName[note.name ?? ""]?.attributesByName.values.first)
        attribute.isOptional.toggle()
        #expect(changed.entitiesByName != first.entitiesByName)
        #expect(changed != first)
        // Another model is not equal.
        #expect(first != TestSupport.makeCompanyModel())
    }

    @Test("fetch requests are equal when they ask for the same results; copy() returns Any, as Apple's")
    func requestEquality() throws {
        let request = Self.request()
        #expect(request == Self.request())
        let copy = try #require(request.copy() as? NSFetchRequest<NSManagedObject>)
        #expect(copy == request && copy !== request)
        copy.fetchLimit = 5
        #expect(copy != request)
    }
}
