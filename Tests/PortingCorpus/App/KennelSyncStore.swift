//
//  KennelSyncStore.swift
//  Kennel
//
//  A custom store in the style of the incremental-store tutorials: records kept in dictionaries
//  keyed by UUID strings (as a web service would key them), values handed to Core Data in nodes.
//

import Foundation
#if canImport(CoreData)
import CoreData
#else
import OpenCoreData
#endif

class KennelSyncStore: NSIncrementalStore {

    static let storeType = "KennelSyncStore"

    private var records: [String: [String: Any]] = [:]
    private var entityNames: [String: String] = [:]
    private var versions: [String: UInt64] = [:]
    private(set) var savesExecuted = 0

    override class func identifierForNewStore(at storeURL: URL) -> Any {
        return "KennelSyncStore-\(storeURL.lastPathComponent)"
    }

    override func loadMetadata() throws {
        guard let storeURL = url else {
            throw NSError(domain: "KennelSyncStore", code: 1, userInfo: [NSLocalizedDescriptionKey: "No URL"])
        }
        metadata = [
            NSStoreTypeKey: KennelSyncStore.storeType,
            NSStoreUUIDKey: KennelSyncStore.identifierForNewStore(at: storeURL),
        ]
    }

    override func execute(_ request: NSPersistentStoreRequest, with context: NSManagedObjectContext?) throws -> Any {
        if request.requestType == .fetchRequestType, let fetchRequest = request as? NSFetchRequest<NSFetchRequestResult> {
            return try executeFetch(fetchRequest, context: context!)
        } else if request.requestType == .saveRequestType, let saveRequest = request as? NSSaveChangesRequest {
            executeSave(saveRequest)
            return []
        }
        throw NSError(domain: "KennelSyncStore", code: 2, userInfo: [NSLocalizedDescriptionKey: "Unsupported request"])
    }

    private func executeFetch(_ fetchRequest: NSFetchRequest<NSFetchRequestResult>, context: NSManagedObjectContext) throws -> Any {
        let entity = fetchRequest.entity!
        var objects: [NSManagedObject] = []
        for (reference, entityName) in entityNames where entityName == entity.name {
            let objectID = newObjectID(for: entity, referenceObject: reference)
            objects.append(context.object(with: objectID))
        }
        if let predicate = fetchRequest.predicate {
            objects = objects.filter { predicate.evaluate(with: $0) }
        }
        if let sortDescriptors = fetchRequest.sortDescriptors {
            objects.sort { first, second in
                for descriptor in sortDescriptors {
                    let result = descriptor.compare(first, to: second)
                    if result != .orderedSame {
                        return result == .orderedAscending
                    }
                }
                return false
            }
        }
        switch fetchRequest.resultType {
        case .managedObjectIDResultType:
            return objects.map { $0.objectID }
        case .countResultType:
            return [objects.count]
        default:
            return objects
        }
    }

    private func executeSave(_ saveRequest: NSSaveChangesRequest) {
        savesExecuted += 1
        for object in saveRequest.insertedObjects ?? [] {
            let reference = referenceObject(for: object.objectID) as! String
            records[reference] = attributeValues(of: object)
            entityNames[reference] = object.entity.name
            versions[reference] = 1
        }
        for object in saveRequest.updatedObjects ?? [] {
            let reference = referenceObject(for: object.objectID) as! String
            records[reference] = attributeValues(of: object)
            versions[reference, default: 0] += 1
        }
        for object in saveRequest.deletedObjects ?? [] {
            let reference = referenceObject(for: object.objectID) as! String
            records[reference] = nil
            entityNames[reference] = nil
            versions[reference] = nil
        }
    }

    private func attributeValues(of object: NSManagedObject) -> [String: Any] {
        var values: [String: Any] = [:]
        for name in object.entity.attributesByName.keys {
            values[name] = object.value(forKey: name) ?? NSNull()
        }
        return values
    }

    override func newValuesForObject(with objectID: NSManagedObjectID, with context: NSManagedObjectContext) throws -> NSIncrementalStoreNode {
        let reference = referenceObject(for: objectID) as! String
        guard let values = records[reference] else {
            throw NSError(domain: NSCocoaErrorDomain, code: NSManagedObjectReferentialIntegrityError, userInfo: nil)
        }
        return NSIncrementalStoreNode(objectID: objectID, withValues: values, version: versions[reference] ?? 1)
    }

    override func newValue(forRelationship relationship: NSRelationshipDescription, forObjectWith objectID: NSManagedObjectID, with context: NSManagedObjectContext?) throws -> Any {
        return relationship.isToMany ? [NSManagedObjectID]() : NSNull()
    }

    override func obtainPermanentIDs(for array: [NSManagedObject]) throws -> [NSManagedObjectID] {
        return array.map { newObjectID(for: $0.entity, referenceObject: UUID().uuidString) }
    }
}
