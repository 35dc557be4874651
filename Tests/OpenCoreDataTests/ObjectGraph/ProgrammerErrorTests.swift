import Foundation
import OpenCoreData
import Testing

/// Programmer errors that Core Data answers with an exception trap here, with a message.
@Suite struct ProgrammerErrorTests {
    @Test func unknownKeyTraps() async {
        await #expect(processExitsWith: .failure) {
            let entity = NSEntityDescription(name: "Thing", properties: [NSAttributeDescription(name: "name", type: .stringAttributeType)])
            let model = NSManagedObjectModel()
            model.entities = [entity]
            let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
            _ = try? coordinator.addPersistentStore(ofType: NSInMemoryStoreType, configurationName: nil, at: nil, options: nil)
            let context = NSManagedObjectContext(concurrencyType: .confinementConcurrencyType)
            context.persistentStoreCoordinator = coordinator
            let thing = NSEntityDescription.insertNewObject(forEntityName: "Thing", into: context)
            _ = thing.value(forKey: "nonexistent")
        }
    }

    @Test func insertingAnAbstractEntityTraps() async {
        await #expect(processExitsWith: .failure) {
            let entity = NSEntityDescription(name: "Shape", properties: [])
            entity.isAbstract = true
            let model = NSManagedObjectModel()
            model.entities = [entity]
            let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
            let context = NSManagedObjectContext(concurrencyType: .confinementConcurrencyType)
            context.persistentStoreCoordinator = coordinator
            _ = NSManagedObject(entity: entity, insertInto: context)
        }
    }
}
