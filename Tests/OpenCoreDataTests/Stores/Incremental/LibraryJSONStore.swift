import Foundation
import OpenCoreData

/// A small `NSIncrementalStore` written as an app developer writes one: authors and books kept in
/// a JSON file, every object read on demand (faults fire `newValuesForObject`), integer reference
/// objects, versions bumped on each saved change. It counts the calls Core Data makes.
final class LibraryJSONStore: NSIncrementalStore {
    static let storeType = "LibraryJSONTest"

    /// One stored object: attribute values, to-one references (Int) and to-many references ([Int]) by name.
    struct Row {
        var values: [String: Any]
        var version: UInt64
    }

    private var rows: [String: [Int: Row]] = [:]
    private var nextReference = 1
    /// How many times each method was called, by name.
    private(set) var calls: [String: Int] = [:]
    /// The IDs contexts use now (registered minus unregistered).
    private(set) var inUse: [NSManagedObjectID: Int] = [:]

    /// Set by the store's own initializer, which the coordinator must call.
    let madeByOwnInitializer: Bool

    override init(persistentStoreCoordinator root: NSPersistentStoreCoordinator?, configurationName name: String?, at url: URL, options: [AnyHashable: Any]? = nil) {
        madeByOwnInitializer = true
        super.init(persistentStoreCoordinator: root, configurationName: name, at: url, options: options)
    }

    static func register() {
        NSPersistentStoreCoordinator.registerStoreClass(LibraryJSONStore.self, forStoreType: storeType)
    }

    override var type: String { Self.storeType }

    override func loadMetadata() throws {
        calls["loadMetadata", default: 0] += 1
        guard let url, let data = FileManager.default.contents(atPath: url.path) else {
            metadata = [NSStoreUUIDKey: Self.identifierForNewStore(at: url ?? URL(fileURLWithPath: "/dev/null")) as! String, NSStoreTypeKey: Self.storeType]
            return
        }
        guard let root = try JSONSerialization.jsonObject(with: data) as? [String: Any],
              let uuid = root["uuid"] as? String, let next = root["next"] as? Int,
              let entities = root["rows"] as? [String: [String: [String: Any]]] else {
            throw NSError(domain: NSCocoaErrorDomain, code: 259, userInfo: [NSLocalizedDescriptionKey: "Not a library file."])
        }
        metadata = [NSStoreUUIDKey: uuid, NSStoreTypeKey: Self.storeType]
        nextReference = next
        for (entity, byReference) in entities {
            for (reference, stored) in byReference {
                rows[entity, default: [:]][Int(reference)!] = Row(values: stored["values"] as? [String: Any] ?? [:], version: (stored["version"] as? NSNumber)?.uint64Value ?? 1)
            }
        }
    }

    override func execute(_ request: NSPersistentStoreRequest, with context: NSManagedObjectContext?) throws -> Any {
        switch request {
        case let fetch as NSFetchRequest<NSFetchRequestResult>:
            calls["fetch", default: 0] += 1
            return try self.fetch(fetch, in: context!)
        case let save as NSSaveChangesRequest:
            calls["save", default: 0] += 1
            for object in save.insertedObjects ?? [] {
                rows[object.entity.name!, default: [:]][reference(object)] = Row(values: encode(object), version: 1)
            }
            for object in save.updatedObjects ?? [] {
                let version = rows[object.entity.name!]?[reference(object)]?.version ?? 0
                rows[object.entity.name!, default: [:]][reference(object)] = Row(values: encode(object), version: version + 1)
            }
            for object in save.deletedObjects ?? [] {
                rows[object.entity.name!]?[reference(object)] = nil
            }
            try write()
            return [Any]()
        default:
            throw NSError(domain: NSCocoaErrorDomain, code: 134091, userInfo: [NSLocalizedDescriptionKey: "Unsupported request \(request)."])
        }
    }

    override func newValuesForObject(with objectID: NSManagedObjectID, with context: NSManagedObjectContext) throws -> NSIncrementalStoreNode {
        calls["newValuesForObject", default: 0] += 1
        guard let row = rows[objectID.entity.name!]?[referenceObject(for: objectID) as! Int] else {
            throw NSError(domain: NSCocoaErrorDomain, code: 133000, userInfo: [NSLocalizedDescriptionKey: "No such object."])
        }
        var values: [String: Any] = [:]
        for (name, attribute) in objectID.entity.attributesByName where !attribute.isTransient {
            values[name] = row.values[name] ?? NSNull()
        }
        for (name, relationship) in objectID.entity.relationshipsByName where !relationship.isToMany {
            values[name] = (row.values[name] as? Int).map { newObjectID(for: relationship.destinationEntity!, referenceObject: $0) } ?? NSNull()
        }
        return NSIncrementalStoreNode(objectID: objectID, withValues: values, version: row.version)
    }

    override func newValue(forRelationship relationship: NSRelationshipDescription, forObjectWith objectID: NSManagedObjectID,
                           with context: NSManagedObjectContext?) throws -> Any {
        calls["newValueForRelationship", default: 0] += 1
        let row = rows[objectID.entity.name!]?[referenceObject(for: objectID) as! Int]
        if relationship.isToMany {
            return (row?.values[relationship.name] as? [Int] ?? []).map { newObjectID(for: relationship.destinationEntity!, referenceObject: $0) }
        }
        return (row?.values[relationship.name] as? Int).map { newObjectID(for: relationship.destinationEntity!, referenceObject: $0) } ?? NSNull()
    }

    override func obtainPermanentIDs(for array: [NSManagedObject]) throws -> [NSManagedObjectID] {
        calls["obtainPermanentIDs", default: 0] += 1
        return array.map { object in
            defer { nextReference += 1 }
            return newObjectID(for: object.entity, referenceObject: nextReference)
        }
    }

    override func managedObjectContextDidRegisterObjects(with objectIDs: [NSManagedObjectID]) {
        for id in objectIDs { inUse[id, default: 0] += 1 }
    }

    override func managedObjectContextDidUnregisterObjects(with objectIDs: [NSManagedObjectID]) {
        for id in objectIDs {
            inUse[id, default: 0] -= 1
            if inUse[id] == 0 { inUse[id] = nil }
        }
    }

    /// Changes a stored row behind the contexts' backs, as another program writing the file would.
    func changeStored(_ entity: String, _ reference: Int, _ key: String, to value: Any) {
        rows[entity]?[reference]?.values[key] = value
        rows[entity]?[reference]?.version += 1
    }

    // MARK: Helpers

    private func fetch(_ request: NSFetchRequest<NSFetchRequestResult>, in context: NSManagedObjectContext) throws -> Any {
        let entity = request.entity!
        var objects = (rows[entity.name!] ?? [:]).keys.sorted().map { context.object(with: newObjectID(for: entity, referenceObject: $0)) }
        if let predicate = request.predicate { objects = objects.filter { predicate.evaluate(with: $0) } }
        if let descriptors = request.sortDescriptors, !descriptors.isEmpty {
            objects.sort { lhs, rhs in
                for descriptor in descriptors {
                    let order = descriptor.compare(lhs, to: rhs)
                    if order != .orderedSame { return order == .orderedAscending }
                }
                return false
            }
        }
        if request.fetchOffset > 0 { objects = Array(objects.dropFirst(request.fetchOffset)) }
        if request.fetchLimit > 0 { objects = Array(objects.prefix(request.fetchLimit)) }
        switch request.resultType {
        case .managedObjectResultType: return objects
        case .managedObjectIDResultType: return objects.map(\.objectID)
        case .countResultType: return [NSNumber(value: objects.count)]
        default:
            let keys = (request.propertiesToFetch ?? []).compactMap { ($0 as? NSPropertyDescription)?.name ?? ($0 as? String) }
            return objects.map { object in
                var dictionary: [String: Any] = [:]
                for key in keys { dictionary[key] = object.value(forKey: key) }
                return dictionary
            }
        }
    }

    private func reference(_ object: NSManagedObject) -> Int {
        referenceObject(for: object.objectID) as! Int
    }

    private func encode(_ object: NSManagedObject) -> [String: Any] {
        var values: [String: Any] = [:]
        for (name, attribute) in object.entity.attributesByName where !attribute.isTransient {
            switch object.value(forKey: name) {
            case let number as Int64: values[name] = Int(number)
            case let value?: values[name] = value
            case nil: break
            }
        }
        for (name, relationship) in object.entity.relationshipsByName {
            if relationship.isToMany {
                values[name] = ((object.value(forKey: name) as? Set<NSManagedObject>) ?? []).map(reference).sorted()
            } else if let target = object.value(forKey: name) as? NSManagedObject {
                values[name] = reference(target)
            }
        }
        return values
    }

    private func write() throws {
        guard let url else { return }
        var entities: [String: [String: [String: Any]]] = [:]
        for (entity, byReference) in rows {
            for (reference, row) in byReference {
                entities[entity, default: [:]][String(reference)] = ["values": row.values, "version": Int(row.version)]
            }
        }
        let root: [String: Any] = ["uuid": identifier!, "next": nextReference, "rows": entities]
        try JSONSerialization.data(withJSONObject: root).write(to: url, options: .atomic)
    }
}

/// The library model: Author (name, born) ←→> Book (title, year, genre).
enum LibraryModel {
    static func make() -> NSManagedObjectModel {
        let author = NSEntityDescription(name: "Author")
        let book = NSEntityDescription(name: "Book")
        let books = NSRelationshipDescription(name: "books", destination: book, toMany: true, deleteRule: .cascadeDeleteRule)
        let writer = NSRelationshipDescription(name: "author", destination: author)
        books.inverseRelationship = writer
        writer.inverseRelationship = books
        author.properties = [NSAttributeDescription(name: "name", type: .stringAttributeType),
                             NSAttributeDescription(name: "born", type: .integer64AttributeType), books]
        book.properties = [NSAttributeDescription(name: "title", type: .stringAttributeType),
                           NSAttributeDescription(name: "year", type: .integer64AttributeType),
                           NSAttributeDescription(name: "genre", type: .stringAttributeType), writer]
        let model = NSManagedObjectModel()
        model.entities = [author, book]
        return model
    }

    /// Two authors with two and one books, saved.
    static func seed(_ context: NSManagedObjectContext) throws {
        for (name, born, titles) in [("Ursula", Int64(1929), [("Earthsea", Int64(1968)), ("Dispossessed", Int64(1974))]),
                                     ("Octavia", Int64(1947), [("Kindred", Int64(1979))])] {
            let author = NSEntityDescription.insertNewObject(forEntityName: "Author", into: context)
            author.setValue(name, forKey: "name")
            author.setValue(born, forKey: "born")
            for (title, year) in titles {
                let book = NSEntityDescription.insertNewObject(forEntityName: "Book", into: context)
                book.setValue(title, forKey: "title")
                book.setValue(year, forKey: "year")
                book.setValue(year < 1970 ? "fantasy" : "sf", forKey: "genre")
                book.setValue(author, forKey: "author")
            }
        }
        try context.save()
    }
}
