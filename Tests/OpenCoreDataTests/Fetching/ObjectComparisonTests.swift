import Foundation
import OpenCoreData
import Testing

/// A relationship or the object itself compared to objects (`group == %@`, `group IN %@`,
/// `self == %@`, `tags CONTAINS %@`), the predicates apps write most after attribute tests: every
/// store answers them by object identity, with the constant a managed object or its object ID.
@Suite struct ObjectComparisonTests {
    @Test(arguments: [NSSQLiteStoreType, NSInMemoryStoreType, NSBinaryStoreType])
    func objectsCompareByIdentityInEveryStore(storeType: String) throws {
        let (coordinator, _) = try TestSupport.coordinator(DifferentialTests.model(), type: storeType)
        let context = TestSupport.context(coordinator)
        try context.performAndWait {
            let groups = (0..<2).map { code -> NSManagedObject in
                let group = NSEntityDescription.insertNewObject(forEntityName: "Group", into: context)
                group.setValue(Int64(code), forKey: "code")
                return group
            }
            let items = (0..<4).map { id -> NSManagedObject in
                let item = NSEntityDescription.insertNewObject(forEntityName: "Item", into: context)
                item.setValue(Int64(id), forKey: "id")
                item.setValue(id < 3 ? groups[id % 2] : nil, forKey: "group")
                return item
            }
            let tag = NSEntityDescription.insertNewObject(forEntityName: "Tag", into: context)
            tag.setValue(items[1], forKey: "item")
            try context.save()

            func ids(_ format: String, _ argument: Any) throws -> [Int64] {
                let request = NSFetchRequest<NSManagedObject>(entityName: "Item")
                request.predicate = NSPredicate(format: format, argumentArray: [argument])
                request.sortDescriptors = [NSSortDescriptor(key: "id", ascending: true)]
                return try context.fetch(request).map { $0.value(forKey: "id") as! Int64 }
            }
            for constant in [groups[0], groups[0].objectID] as [Any] {
                #expect(try ids("group == %@", constant) == [0, 2], "\(storeType) \(type(of: constant))")
                #expect(try ids("group != %@", constant) == [1, 3], "\(storeType) \(type(of: constant))")
                #expect(try ids("group IN %@", [constant]) == [0, 2], "\(storeType) \(type(of: constant))")
            }
            #expect(try ids("self == %@", items[3]) == [3])
            #expect(try ids("self IN %@", [items[1].objectID, items[2]]) == [1, 2])
            #expect(try ids("tags CONTAINS %@", tag) == [1])
            #expect(try ids("ANY tags == %@", tag) == [1])
        }
    }
}
