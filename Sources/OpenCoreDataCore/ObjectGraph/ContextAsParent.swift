import Foundation
import OrderedCollections

/// A parent context seen by its child as the place fetches come from and saves go to.
///
/// Every call runs on the parent's queue (`performAndWait`), so a child on another queue is safe.
final class ContextAsParent: ParentStore {
    let context: NSManagedObjectContext

    init(context: NSManagedObjectContext) { self.context = context }

    var managedObjectModel: NSManagedObjectModel {
        context.persistentStoreCoordinator!.managedObjectModel
    }

    func fetchRows(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription) throws -> FetchedRows {
        try context.performAndWait {
            let objects = try context.fetch(translated(request).asObjectRequest())
            return FetchedRows(objects.lazy.compactMap { ($0 as? NSManagedObject).map { FetchedRow($0.objectID, Self.row(of: $0)) } })
        }
    }

    func countRows(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription) throws -> Int {
        try context.performAndWait { try context.count(for: translated(request)) }
    }

    func fetchDictionaries(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription) throws -> [[String: Any]] {
        try context.performAndWait {
            try context.fetch(translated(request)).compactMap { ($0 as? NSDictionary) as? [String: Any] }
        }
    }

    /// The child's request with the child's objects in its predicate replaced by the parent's
    /// objects of the same IDs: the parent judges its changed objects in memory, where an object
    /// equals only itself. (On the parent's queue.)
    private func translated(_ request: NSFetchRequest<NSFetchRequestResult>) -> NSFetchRequest<NSFetchRequestResult> {
        guard let predicate = request.predicate else { return request }
        let rewritten = predicate.rewritingLeaves { leaf, _ in
            guard case .constant(let value?) = leaf.node, let own = parentObjects(for: value) else { return nil }
            return NSExpression(forConstantValue: own)
        }
        if rewritten === predicate { return request }
        let copy = request.copied()
        copy.predicate = rewritten
        return copy
    }

    /// A constant with the managed objects of other contexts in it (alone, or in an array or set)
    /// replaced by the parent's, or nil when it holds none.
    private func parentObjects(for value: Any) -> Any? {
        func own(_ element: Any) -> Any? {
            guard let object = element as? NSManagedObject, object.managedObjectContext !== context else { return nil }
            // An object the child inserted and hasn't saved is not the parent's: no fault for it
            // here (the child's save registers it), and nothing here points at it.
            if object.objectID.isTemporaryID { return context.registeredObject(for: object.objectID) }
            return context.object(with: object.objectID)
        }
        if let single = own(value) { return single }
        if let objects = value as? Set<NSManagedObject> {
            guard objects.contains(where: { own($0) != nil }) else { return nil }
            return Set(objects.map { own($0) as? NSManagedObject ?? $0 })
        }
        if let elements = value as? [Any] {
            guard elements.contains(where: { own($0) != nil }) else { return nil }
            return elements.map { own($0) ?? $0 }
        }
        return nil
    }

    func loadRow(_ objectID: NSManagedObjectID) throws -> StoredRow? {
        try context.performAndWait {
            if let object = context.registeredObject(for: objectID) {
                if object.isDeleted { return nil }
                if let row = Self.row(of: object) { return row }
            }
            return try context.asRequester { try context.parentStore?.loadRow(objectID) }
        }
    }

    func loadRows(_ objectIDs: [NSManagedObjectID]) throws -> [ObjectKey: StoredRow] {
        var rows: [ObjectKey: StoredRow] = [:]
        for id in objectIDs { rows[id.key] = try loadRow(id) }
        return rows
    }

    func loadToManyIDs(_ objectIDs: [NSManagedObjectID], relationship: NSRelationshipDescription) throws -> [ObjectKey: [NSManagedObjectID]] {
        var result: [ObjectKey: [NSManagedObjectID]] = [:]
        for id in objectIDs { result[id.key] = try loadToManyIDs(id, relationship: relationship) }
        return result
    }

    func loadToManyIDs(_ objectID: NSManagedObjectID, relationship: NSRelationshipDescription) throws -> [NSManagedObjectID] {
        context.performAndWait {
            context.object(with: objectID).relationshipSet(for: relationship).members.map(\.objectID)
        }
    }

    func applyChanges(_ changes: SaveChanges, from child: NSManagedObjectContext) throws -> PermanentIDs {
        context.performAndWait {
            // A child's save is not an edit of the parent's undo history.
            context.withoutUndoRecording {
                for record in changes.inserted { context.adoptInsertedFromChild(record) }
                for record in changes.inserted + changes.updated { apply(record) }
                for record in changes.deleted { context.delete(context.object(with: record.objectID)) }
                // The child's conflict checks become the parent's, for its save to the store.
                for record in changes.checked { context.detectConflicts(for: context.object(with: record.objectID)) }
            }
            context.processPendingChanges()
        }
        return [:]
    }

    private func apply(_ record: SaveRecord) {
        let object = context.object(with: record.objectID)
        object.fireFaultIfNeeded()
        // The event's baseline, as for any change: an object the parent inserted in an earlier
        // event is then listed as updated (observers showing it re-judge it), and the event's
        // changed values are the child's changes.
        context.snapshotBeforeChange(object)
        for property in record.entity.frozenProperties where !property.isTransient {
            if let relationship = property as? NSRelationshipDescription {
                if relationship.isToMany {
                    guard let ids = record.toMany[relationship.slot] else { continue }
                    let set = object.relationshipSet(for: relationship)
                    set.members = OrderedSet(ids.map { context.object(with: $0) })
                } else {
                    object.values[relationship.slot] = (record.values[relationship.slot] as? NSManagedObjectID).map { context.object(with: $0) }
                }
            } else {
                object.values[property.slot] = record.values[property.slot]
            }
        }
        context.objectDidChange(object)
    }

    /// The values of a loaded object as a row (to-one as IDs), or nil for a fault without data.
    static func row(of object: NSManagedObject) -> StoredRow? {
        if object.isFault && object.committedValues == nil { return nil }
        var values = object.values
        for relationship in object.entity.frozenRelationships {
            values[relationship.slot] = relationship.isToMany ? nil : object.toOneDestinationID(relationship)
        }
        return StoredRow(values: values, version: object.storeVersion)
    }
}

extension NSFetchRequest where ResultType == NSFetchRequestResult {
    /// A copy that returns managed objects.
    func asObjectRequest() -> NSFetchRequest<NSFetchRequestResult> {
        let copy = copied()
        copy.resultType = .managedObjectResultType
        return copy
    }
}

extension NSManagedObjectContext {
    /// Registers, as inserted, an object a child context inserted (keeping its temporary ID).
    func adoptInsertedFromChild(_ record: SaveRecord) {
        if registeredObject(for: record.objectID) != nil { return }
        let object = NSManagedObject.makeFetched(entity: record.entity, objectID: record.objectID, context: self)
        object.managedObjectContext = nil
        object.allocateStorage()
        for relationship in record.entity.frozenRelationships where relationship.isToMany {
            object.values[relationship.slot] = RelationshipSet(committedIDs: [])
        }
        insertAdopted(object)
    }
}
