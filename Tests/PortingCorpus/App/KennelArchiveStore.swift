//
//  KennelArchiveStore.swift
//  Kennel
//
//  A custom atomic store in the style of Apple's atomic-store guide: the whole kennel kept in one
//  property-list file, read into cache nodes when the store is added and written back on save.
//

import Foundation
#if canImport(CoreData)
import CoreData
#else
import OpenCoreData
#endif

class KennelArchiveStore: NSAtomicStore {

    static let storeType = "KennelArchiveStore"

    private var nextReference = 1

    override var type: String {
        return KennelArchiveStore.storeType
    }

    // MARK: - Metadata

    override class func metadataForPersistentStore(with url: URL) throws -> [String: Any] {
        let data = try Data(contentsOf: url)
        let plist = try PropertyListSerialization.propertyList(from: data, options: [], format: nil) as? [String: Any]
        guard let metadata = plist?["metadata"] as? [String: Any] else {
            throw NSError(domain: NSCocoaErrorDomain, code: NSFileReadCorruptFileError, userInfo: [NSFilePathErrorKey: url.path])
        }
        return metadata
    }

    // MARK: - Loading

    override func load() throws {
        guard let url = url, let data = try? Data(contentsOf: url), !data.isEmpty else {
            // No file yet: a new store.
            return
        }
        guard let plist = try PropertyListSerialization.propertyList(from: data, options: [], format: nil) as? [String: Any],
              let storedMetadata = plist["metadata"] as? [String: Any],
              let records = plist["records"] as? [[String: Any]] else {
            throw NSError(domain: NSCocoaErrorDomain, code: NSFileReadCorruptFileError, userInfo: [NSFilePathErrorKey: url.path])
        }
        metadata = storedMetadata
        nextReference = plist["nextReference"] as? Int ?? 1

        let model = persistentStoreCoordinator!.managedObjectModel
        var nodesByReference: [Int: NSAtomicStoreCacheNode] = [:]
        for record in records {
            guard let entityName = record["entity"] as? String,
                  let entity = model.entitiesByName[entityName],
                  let reference = record["reference"] as? Int else { continue }
            let node = NSAtomicStoreCacheNode(objectID: objectID(for: entity, withReferenceObject: reference))
            let attributes = record["attributes"] as? [String: Any] ?? [:]
            for (name, value) in attributes {
                guard let attribute = entity.attributesByName[name] else { continue }
                node.setValue(modelValue(value, for: attribute), forKey: name)
            }
            nodesByReference[reference] = node
        }
        for record in records {
            guard let reference = record["reference"] as? Int,
                  let node = nodesByReference[reference] else { continue }
            let relationships = record["relationships"] as? [String: Any] ?? [:]
            for (name, value) in relationships {
                guard let relationship = node.objectID.entity.relationshipsByName[name] else { continue }
                if relationship.isToMany {
                    let destinations = (value as? [Int] ?? []).compactMap { nodesByReference[$0] }
                    if relationship.isOrdered {
                        node.setValue(NSOrderedSet(array: destinations), forKey: name)
                    } else {
                        node.setValue(NSSet(array: destinations), forKey: name)
                    }
                } else if let destination = value as? Int {
                    node.setValue(nodesByReference[destination], forKey: name)
                }
            }
        }
        addCacheNodes(Set(nodesByReference.values))
    }

    // MARK: - Saving

    override func newReferenceObject(for managedObject: NSManagedObject) -> Any {
        defer { nextReference += 1 }
        return nextReference
    }

    override func newCacheNode(for managedObject: NSManagedObject) -> NSAtomicStoreCacheNode {
        let node = NSAtomicStoreCacheNode(objectID: managedObject.objectID)
        updateCacheNode(node, from: managedObject)
        return node
    }

    override func updateCacheNode(_ node: NSAtomicStoreCacheNode, from managedObject: NSManagedObject) {
        for name in managedObject.entity.attributesByName.keys {
            node.setValue(managedObject.value(forKey: name), forKey: name)
        }
        for (name, relationship) in managedObject.entity.relationshipsByName {
            if relationship.isToMany {
                if relationship.isOrdered {
                    let objects = managedObject.value(forKey: name) as? NSOrderedSet ?? NSOrderedSet()
                    let nodes = objects.array.compactMap { ($0 as? NSManagedObject).flatMap { cacheNode(for: $0.objectID) } }
                    node.setValue(NSOrderedSet(array: nodes), forKey: name)
                } else {
                    let objects = managedObject.value(forKey: name) as? Set<NSManagedObject> ?? []
                    let nodes = objects.compactMap { cacheNode(for: $0.objectID) }
                    node.setValue(NSSet(array: nodes), forKey: name)
                }
            } else if let destination = managedObject.value(forKey: name) as? NSManagedObject {
                node.setValue(cacheNode(for: destination.objectID), forKey: name)
            } else {
                node.setValue(nil, forKey: name)
            }
        }
    }

    override func save() throws {
        var records: [[String: Any]] = []
        for node in cacheNodes() {
            let entity = node.objectID.entity
            var attributes: [String: Any] = [:]
            for (name, attribute) in entity.attributesByName {
                if let value = node.value(forKey: name) {
                    attributes[name] = plistValue(value, for: attribute)
                }
            }
            var relationships: [String: Any] = [:]
            for (name, relationship) in entity.relationshipsByName {
                let value = node.value(forKey: name)
                if relationship.isToMany {
                    var destinations: [NSAtomicStoreCacheNode] = []
                    if let ordered = value as? NSOrderedSet {
                        destinations = ordered.array.compactMap { $0 as? NSAtomicStoreCacheNode }
                    } else if let set = value as? NSSet {
                        destinations = set.allObjects.compactMap { $0 as? NSAtomicStoreCacheNode }
                    }
                    relationships[name] = destinations.map { reference(of: $0) }
                } else if let destination = value as? NSAtomicStoreCacheNode {
                    relationships[name] = reference(of: destination)
                }
            }
            records.append([
                "entity": entity.name!,
                "reference": reference(of: node),
                "attributes": attributes,
                "relationships": relationships,
            ])
        }
        let plist: [String: Any] = ["metadata": metadata!, "nextReference": nextReference, "records": records]
        let data = try PropertyListSerialization.data(fromPropertyList: plist, format: .binary, options: 0)
        try data.write(to: url!, options: .atomic)
    }

    // MARK: - Helpers

    private func reference(of node: NSAtomicStoreCacheNode) -> Int {
        return referenceObject(for: node.objectID) as! Int
    }

    /// Property lists have no UUIDs or decimal numbers: they are kept as strings.
    private func plistValue(_ value: Any, for attribute: NSAttributeDescription) -> Any {
        switch attribute.attributeType {
        case .UUIDAttributeType:
            return (value as? UUID)?.uuidString ?? "\(value)"
        case .decimalAttributeType:
            return (value as? NSDecimalNumber)?.stringValue ?? "\(value)"
        default:
            return value
        }
    }

    private func modelValue(_ value: Any, for attribute: NSAttributeDescription) -> Any? {
        switch attribute.attributeType {
        case .UUIDAttributeType:
            return (value as? String).flatMap { UUID(uuidString: $0) }
        case .decimalAttributeType:
            return (value as? String).map { NSDecimalNumber(string: $0) }
        default:
            return value
        }
    }
}
