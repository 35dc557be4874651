import Foundation
import OpenCoreData

/// A small `NSAtomicStore` written as an app developer writes one: the library model's authors
/// and books kept in a property-list file, integer reference objects, nodes made and updated by
/// the subclass with relationships as nodes. It counts the calls Core Data makes, and can be told
/// to fail its next `save()`.
final class ShelfPlistStore: NSAtomicStore {
    static let storeType = "ShelfPlistTest"

    private var nextReference = 1
    /// How many times each method was called, by name.
    private(set) var calls: [String: Int] = [:]
    /// The object IDs of the nodes `willRemoveCacheNodes(_:)` was told of.
    private(set) var removed: [NSManagedObjectID] = []
    /// When set, the next `save()` throws this error instead of writing.
    var failNextSave: NSError?

    static func register() {
        NSPersistentStoreCoordinator.registerStoreClass(ShelfPlistStore.self, forStoreType: storeType)
    }

    override var type: String { Self.storeType }

    /// The file's root: metadata, the next reference, and the objects.
    private static func root(at url: URL) throws -> [String: Any]? {
        guard let data = FileManager.default.contents(atPath: url.path), !data.isEmpty else { return nil }
        guard let root = try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any] else {
            throw NSError(domain: NSCocoaErrorDomain, code: 259, userInfo: [NSLocalizedDescriptionKey: "Not a shelf file."])
        }
        return root
    }

    override class func metadataForPersistentStore(with url: URL) throws -> [String: Any] {
        guard let metadata = try root(at: url)?["metadata"] as? [String: Any] else {
            throw NSError(domain: NSCocoaErrorDomain, code: 260, userInfo: [NSLocalizedDescriptionKey: "No shelf file."])
        }
        return metadata
    }

    override class func setMetadata(_ metadata: [String: Any]?, forPersistentStoreAt url: URL) throws {
        guard var root = try root(at: url) else { throw NSError(domain: NSCocoaErrorDomain, code: 260) }
        root["metadata"] = metadata ?? [:]
        try PropertyListSerialization.data(fromPropertyList: root, format: .binary, options: 0).write(to: url, options: .atomic)
    }

    override func load() throws {
        calls["load", default: 0] += 1
        guard let url, let root = try Self.root(at: url) else { return }
        metadata = root["metadata"] as? [String: Any] ?? [:]
        nextReference = root["next"] as? Int ?? 1
        let objects = root["objects"] as? [[String: Any]] ?? []
        let entities = persistentStoreCoordinator!.managedObjectModel.entitiesByName
        var byReference: [Int: NSAtomicStoreCacheNode] = [:]
        for object in objects {
            let entity = entities[object["entity"] as! String]!
            let reference = object["ref"] as! Int
            let node = NSAtomicStoreCacheNode(objectID: objectID(for: entity, withReferenceObject: reference))
            for (key, value) in object["values"] as? [String: Any] ?? [:] { node.setValue(value, forKey: key) }
            byReference[reference] = node
        }
        for object in objects {
            let node = byReference[object["ref"] as! Int]!
            for (key, value) in object["relationships"] as? [String: Any] ?? [:] {
                if let many = value as? [Int] {
                    node.setValue(Set(many.compactMap { byReference[$0] }), forKey: key)
                } else if let one = value as? Int {
                    node.setValue(byReference[one], forKey: key)
                }
            }
        }
        addCacheNodes(Set(byReference.values))
    }

    override func save() throws {
        calls["save", default: 0] += 1
        if let error = failNextSave {
            failNextSave = nil
            throw error
        }
        var objects: [[String: Any]] = []
        for node in cacheNodes() {
            let entity = node.objectID.entity
            var values: [String: Any] = [:]
            var relationships: [String: Any] = [:]
            for (name, attribute) in entity.attributesByName {
                guard let value = node.value(forKey: name) else { continue }
                values[name] = attribute.attributeType == .integer64AttributeType ? (value as! Int64) as NSNumber : value
            }
            for (name, relationship) in entity.relationshipsByName {
                if relationship.isToMany {
                    let members = node.value(forKey: name) as? Set<NSAtomicStoreCacheNode> ?? []
                    relationships[name] = members.map { referenceObject(for: $0.objectID) as! Int }
                } else if let destination = node.value(forKey: name) as? NSAtomicStoreCacheNode {
                    relationships[name] = referenceObject(for: destination.objectID) as! Int
                }
            }
            objects.append(["entity": entity.name!, "ref": referenceObject(for: node.objectID) as! Int,
                            "values": values, "relationships": relationships])
        }
        let root: [String: Any] = ["metadata": metadata!, "next": nextReference, "objects": objects]
        try PropertyListSerialization.data(fromPropertyList: root, format: .binary, options: 0).write(to: url!, options: .atomic)
    }

    override func newReferenceObject(for managedObject: NSManagedObject) -> Any {
        calls["newReferenceObject", default: 0] += 1
        defer { nextReference += 1 }
        return nextReference
    }

    override func newCacheNode(for managedObject: NSManagedObject) -> NSAtomicStoreCacheNode {
        calls["newCacheNode", default: 0] += 1
        let node = NSAtomicStoreCacheNode(objectID: managedObject.objectID)
        fill(node, from: managedObject)
        return node
    }

    override func updateCacheNode(_ node: NSAtomicStoreCacheNode, from managedObject: NSManagedObject) {
        calls["updateCacheNode", default: 0] += 1
        fill(node, from: managedObject)
    }

    override func willRemoveCacheNodes(_ cacheNodes: Set<NSAtomicStoreCacheNode>) {
        removed += cacheNodes.map(\.objectID)
    }

    /// Attributes as values, relationships as the destinations' nodes (those that have one yet).
    private func fill(_ node: NSAtomicStoreCacheNode, from object: NSManagedObject) {
        for (name, _) in object.entity.attributesByName { node.setValue(object.value(forKey: name), forKey: name) }
        for (name, relationship) in object.entity.relationshipsByName {
            if relationship.isToMany {
                let members = object.value(forKey: name) as? Set<NSManagedObject> ?? []
                node.setValue(Set(members.compactMap { cacheNode(for: $0.objectID) }), forKey: name)
            } else {
                node.setValue((object.value(forKey: name) as? NSManagedObject).flatMap { cacheNode(for: $0.objectID) }, forKey: name)
            }
        }
    }
}

/// An `NSAtomicStore` that overrides only what Apple requires of every subclass to read and
/// write (here: nothing kept, as an in-memory store), leaving nodes to the framework's copying.
final class MemoryOnlyAtomicStore: NSAtomicStore {
    static let storeType = "MemoryOnlyAtomicTest"
    override var type: String { Self.storeType }
    override func load() throws {}
    override func save() throws {}
}

/// An `NSAtomicStore` subclass that forgot to override `load()`.
final class IncompleteAtomicStore: NSAtomicStore {
    static let storeType = "IncompleteAtomicTest"
}
