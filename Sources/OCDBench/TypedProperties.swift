// The object graph read and written the way apps do it: through a managed object subclass's
// typed `@Managed` properties (`row.a0`), not `value(forKey:) as! Int64`.
import Foundation
import OpenCoreData

/// The benchmark entity as a class, as Xcode generates it with scalar types on.
final class TypedRow: NSManagedObject {
    @Managed var a0: Int64
    @Managed var a1: Int64
    @Managed var a2: Int64
    @Managed var a3: Int64
    @Managed var a4: Int64
    @Managed var a5: Int64
    @Managed var a6: Int64
    @Managed var a7: Int64
    @Managed var a8: Int64
    @Managed var a9: Int64
}

/// The benchmark model with `Row` backed by `TypedRow` (the same store schema and hashes).
func makeTypedModel() -> NSManagedObjectModel {
    let entity = NSEntityDescription(name: "Row", className: "TypedRow")
    entity.properties = columns.map { NSAttributeDescription(name: $0, type: .integer64AttributeType) }
    let model = NSManagedObjectModel()
    model.entities = [entity]
    return model
}

func openTypedStore(_ url: URL) throws -> NSPersistentStoreCoordinator {
    try openStore(url, model: makeTypedModel())
}

/// Fetches every row and reads its ten values through the typed properties (phases: see
/// `TypedPhases.fetch`; freeing the objects is freeing the context).
func fetchTyped(_ url: URL) throws -> Int64 {
    var context: NSManagedObjectContext? = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
    context?.persistentStoreCoordinator = try openTypedStore(url)
    PhaseClock.current.start()
    let sum = try context!.performAndWait {
        let rows = try context!.fetch(NSFetchRequest<TypedRow>(entityName: "Row"))
        PhaseClock.current.mark()
        var sum: Int64 = 0
        for row in rows {
            sum &+= row.a0 &+ row.a1 &+ row.a2 &+ row.a3 &+ row.a4
            sum &+= row.a5 &+ row.a6 &+ row.a7 &+ row.a8 &+ row.a9
        }
        PhaseClock.current.mark()
        return sum
    }
    context = nil
    PhaseClock.current.mark()
    return sum
}

/// Inserts `rows` objects, setting the ten values through the typed properties, and saves once
/// (phases: see `TypedPhases.insert`; the save's own `processPendingChanges()` is the second).
func insertTyped(_ url: URL, rows: Int) throws -> Int64 {
    removeStore(url)
    var context: NSManagedObjectContext? = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
    context?.persistentStoreCoordinator = try openTypedStore(url)
    PhaseClock.current.start()
    try context!.performAndWait {
        for pk in 1...rows {
            let row = TypedRow(context: context!)
            let base = Int64(pk &* 31)
            row.a0 = base; row.a1 = base &+ 1; row.a2 = base &+ 2; row.a3 = base &+ 3; row.a4 = base &+ 4
            row.a5 = base &+ 5; row.a6 = base &+ 6; row.a7 = base &+ 7; row.a8 = base &+ 8; row.a9 = base &+ 9
        }
        PhaseClock.current.mark()
        context!.processPendingChanges()
        PhaseClock.current.mark()
        try context!.save()
        PhaseClock.current.mark()
    }
    context = nil
    PhaseClock.current.mark()
    return Int64(rows)
}
