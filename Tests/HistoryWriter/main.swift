// HistoryWriter: a second process for the remote-change tests. It opens a SQLite store with
// persistent history, applies commands, one save per command, and exits.
//
//   HistoryWriter <model.xcdatamodeld> <store.sqlite> <author> <command>...
//   command: insert:<Entity>:<key>=<value>[,<key>=<value>…]
//            update:<Entity>:<key>=<value>:<key>=<value>[,…]   (match, then new values)
//            delete:<Entity>:<key>=<value>
// Values are strings, or integers when the attribute is an integer. Prints one line per save.
import Foundation
import OpenCoreData

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("HistoryWriter: \(message)\n".utf8))
    exit(1)
}

let arguments = CommandLine.arguments
guard arguments.count >= 5 else {
    fail("usage: HistoryWriter <model.xcdatamodeld> <store.sqlite> <author> <command>...")
}

func values(_ text: Substring, entity: NSEntityDescription) -> [String: Any] {
    var result: [String: Any] = [:]
    for pair in text.split(separator: ",") {
        let parts = pair.split(separator: "=", maxSplits: 1)
        guard parts.count == 2 else { fail("bad assignment '\(pair)'") }
        let key = String(parts[0])
        guard let attribute = entity.attributesByName[key] else { fail("\(entity.name ?? "?") has no attribute '\(key)'") }
        switch attribute.attributeType {
        case .integer16AttributeType, .integer32AttributeType, .integer64AttributeType:
            guard let number = Int(parts[1]) else { fail("'\(parts[1])' is not an integer") }
            result[key] = number
        default:
            result[key] = String(parts[1])
        }
    }
    return result
}

do {
    let model = try NSManagedObjectModel.load(contentsOf: URL(fileURLWithPath: arguments[1]))
    let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
    try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: URL(fileURLWithPath: arguments[2]), options: [
        NSPersistentHistoryTrackingKey: true as NSNumber,
    ])
    let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
    context.persistentStoreCoordinator = coordinator
    context.transactionAuthor = arguments[3]
    context.name = "writer"
    try context.performAndWait {
        for command in arguments.dropFirst(4) {
            let parts = command.split(separator: ":")
            guard parts.count >= 3, let entity = model.entitiesByName[String(parts[1])] else { fail("bad command '\(command)'") }
            let match = values(parts[2], entity: entity)
            func matching() throws -> [NSManagedObject] {
                guard match.count == 1, let (key, value) = match.first else { fail("match on exactly one attribute: '\(command)'") }
                let request = NSFetchRequest<NSManagedObject>(entityName: entity.name!)
                request.predicate = value is Int ? NSPredicate(format: "%K == %d", key, value as! Int) : NSPredicate(format: "%K == %@", key, "\(value)")
                return try context.fetch(request)
            }
            switch parts[0] {
            case "insert":
                let object = NSManagedObject(entity: entity, insertInto: context)
                for (key, value) in match { object.setValue(value, forKey: key) }
            case "update":
                guard parts.count == 4 else { fail("update needs a match and new values: '\(command)'") }
                for object in try matching() { for (key, value) in values(parts[3], entity: entity) { object.setValue(value, forKey: key) } }
            case "delete":
                for object in try matching() { context.delete(object) }
            default:
                fail("unknown command '\(parts[0])'")
            }
            try context.save()
            print("saved \(command)")
        }
    }
} catch {
    fail("\(error)")
}
