import Foundation
import OrderedCollections

/// Relationship storage and inverse maintenance.
///
/// Invariant after every public mutation: if A's relationship R contains B (or points to B), then
/// B's inverse of R contains (or points to) A, for every loaded side.
extension NSManagedObject {
    /// The destination of a to-one relationship, resolving a stored object ID into an object.
    final func toOneDestination(_ relationship: NSRelationshipDescription) -> NSManagedObject? {
        let value = values[relationship.slot]
        // The two forms the slot holds, told by the existential's type word without the
        // runtime's dynamic cast (a few hundred instructions each, per to-one read).
        if let value {
            if let object = ExistentialFastPath.instance(value, boxedAs: NSManagedObject.self) { return object }
            if let id = ExistentialFastPath.instance(value, boxedAs: NSManagedObjectID.self) { return resolveDestination(id, relationship) }
        }
        switch value {
        case let object as NSManagedObject:
            return object
        case let id as NSManagedObjectID:
            return resolveDestination(id, relationship)
        default:
            return nil
        }
    }

    /// The object of a to-one destination's ID, kept in the slot in its place.
    private func resolveDestination(_ id: NSManagedObjectID, _ relationship: NSRelationshipDescription) -> NSManagedObject? {
        guard let context = managedObjectContext else { return nil }
        let object = context.object(with: id)
        values[relationship.slot] = object
        return object
    }

    /// The destination's ID of a to-one relationship, without resolving it.
    final func toOneDestinationID(_ relationship: NSRelationshipDescription) -> NSManagedObjectID? {
        Self.destinationID(values[relationship.slot])
    }

    /// The object ID a to-one slot's value (a destination object or its ID) stands for.
    static func destinationID(_ value: Any?) -> NSManagedObjectID? {
        switch value {
        case let object as NSManagedObject: object.objectID
        case let id as NSManagedObjectID: id
        default: nil
        }
    }

    /// The values with each loaded to-many relationship as a `ToManySnapshot` of its members, so
    /// that later changes to the live set don't reach them.
    final func valuesWithToManySnapshots() -> SlotValues {
        var snapshot = values
        for slot in entity.toManySlots where slot < snapshot.count {
            if let set = snapshot[slot] as? RelationshipSet {
                snapshot[slot] = ToManySnapshot(members: set.members, committedIDs: set.committedIDs)
            }
        }
        return snapshot
    }

    /// The loaded contents of a to-many relationship, loading them from the store if needed.
    final func relationshipSet(for relationship: NSRelationshipDescription) -> RelationshipSet {
        fireFaultIfNeeded()
        if let set = values[relationship.slot] as? RelationshipSet { return set }
        var members: OrderedSet<NSManagedObject> = []
        var ids: [NSManagedObjectID] = []
        // A temporary ID has no row in a store, but in a child context it may name an object
        // the parent inserted: the parent holds its relationships.
        if let context = managedObjectContext, !objectID.isTemporaryID || (context.parent != nil && !insertedFlag && !deletedFlag) {
            do {
                ids = try context.loadToManyIDs(of: objectID, relationship: relationship)
            } catch {
                // Core Data raises here too: a relationship read can't throw, and an empty set
                // would be a silent wrong answer.
                fatalError("CoreData could not fulfill the to-many fault '\(relationship.name)' of \(objectID): the store could not be read: \(error)")
            }
            members = OrderedSet(ids.map { context.object(with: $0) })
            // Objects of this context that now point here but whose change is not saved yet.
            if let inverse = relationship.inverseRelationship, !inverse.isToMany {
                for candidate in context.changedObjects(of: relationship.destinationEntity) {
                    let pointsHere = candidate.values.indices.contains(inverse.slot) && candidate.toOneDestinationID(inverse) == objectID
                    if pointsHere && !candidate.deletedFlag { members.append(candidate) } else if members.contains(candidate) && !candidate.faultFlag && !pointsHere { members.remove(candidate) }
                }
            }
        }
        let set = RelationshipSet(members: members, committedIDs: ids)
        values[relationship.slot] = set
        if eventBaselineFlag { managedObjectContext?.recordLoadedToMany(set, at: relationship.slot, of: self) }
        return set
    }

    /// Points a to-one relationship at an object (or nil), updating inverses.
    final func setToOne(_ relationship: NSRelationshipDescription, to newValue: NSManagedObject?) {
        let old = toOneDestination(relationship)
        if old === newValue { return }
        snapshotBeforeChange()
        willChangeValue(forKey: relationship.name)
        values[relationship.slot] = newValue
        didChangeValue(forKey: relationship.name)
        guard let inverse = relationship.inverseRelationship else { return }
        if let old { old.inverseRemove(self, via: inverse) }
        if let newValue { newValue.inverseAdd(self, via: inverse) }
    }

    /// Replaces the contents of a to-many relationship, updating inverses.
    final func setToMany(_ relationship: NSRelationshipDescription, to newMembers: OrderedSet<NSManagedObject>) {
        let set = relationshipSet(for: relationship)
        let old = set.members
        let removed = old.filter { !newMembers.contains($0) }
        let added = newMembers.filter { !old.contains($0) }
        if old == newMembers { return }
        snapshotBeforeChange()
        willChangeValue(forKey: relationship.name)
        set.members = newMembers
        didChangeValue(forKey: relationship.name)
        guard let inverse = relationship.inverseRelationship else { return }
        for object in removed { object.inverseRemove(self, via: inverse) }
        for object in added { object.inverseAdd(self, via: inverse) }
    }

    /// Adds and removes objects of a to-many relationship, keeping the order of the others.
    final func modifyToMany(_ relationship: NSRelationshipDescription, adding: [NSManagedObject], removing: [NSManagedObject]) {
        var members = relationshipSet(for: relationship).members
        for object in removing { members.remove(object) }
        for object in adding { members.append(object) }
        setToMany(relationship, to: members)
    }

    /// Makes the loaded inverse relationships of the objects this object points to, or pointed to
    /// when last saved, agree with its committed relationships: what `refresh(_:mergeChanges:)`
    /// does before discarding its changes, so that a discarded move or delete leaves no related
    /// object showing it.
    final func restoreCommittedInverses() {
        guard let context = managedObjectContext, !faultFlag else { return }
        let committed = committedValues
        for relationship in entity.frozenRelationships {
            guard let inverse = relationship.inverseRelationship else { continue }
            let currentIDs: [NSManagedObjectID]
            let committedIDs: [NSManagedObjectID]
            if relationship.isToMany {
                // Never loaded, or its saved contents unknown: nothing to put back.
                guard let set = values[relationship.slot] as? RelationshipSet, let ids = set.committedIDs else { continue }
                currentIDs = set.members.map(\.objectID)
                committedIDs = ids
            } else {
                currentIDs = toOneDestinationID(relationship).map { [$0] } ?? []
                committedIDs = Self.destinationID(committed?[relationship.slot]).map { [$0] } ?? []
            }
            // Only the differences are touched (an unchanged destination isn't even resolved),
            // except for a deleted object, which the delete rules took out of every destination.
            let committedSet = Set(committedIDs)
            let currentSet = Set(currentIDs)
            for id in currentIDs where !committedSet.contains(id) { context.object(with: id).inverseRemove(self, via: inverse) }
            for id in committedIDs where deletedFlag || !currentSet.contains(id) {
                let object = context.object(with: id)
                if !object.deletedFlag { object.inverseAdd(self, via: inverse) }
            }
        }
    }

    /// The unsaved changes of the loaded to-many relationships, as what was added and what was
    /// removed since the set was read: what `refresh(_:mergeChanges: true)` applies again over the
    /// store's latest members (see `reapplyToManyChanges(_:)`).
    final func unsavedToManyChanges() -> [ToManyChange] {
        guard !faultFlag else { return [] }
        var changes: [ToManyChange] = []
        for relationship in entity.frozenRelationships where relationship.isToMany {
            guard let set = values[relationship.slot] as? RelationshipSet, let committedIDs = set.committedIDs else { continue }
            let committed = Set(committedIDs)
            let added = Array(set.members.filter { !committed.contains($0.objectID) })
            let current = Set(set.members.map(\.objectID))
            let removed = committed.subtracting(current)
            if !added.isEmpty || !removed.isEmpty { changes.append(ToManyChange(relationship: relationship, added: added, removed: removed)) }
        }
        return changes
    }

    /// Applies to-many changes taken by `unsavedToManyChanges()` to the members the store holds now
    /// (loaded again, with this context's unsaved changes of to-one inverses): members added
    /// elsewhere stay, the local additions and removals are made again. The inverse sides already
    /// hold the local changes, so they are not touched.
    final func reapplyToManyChanges(_ changes: [ToManyChange]) {
        for change in changes {
            let set = relationshipSet(for: change.relationship)
            set.members.removeAll { change.removed.contains($0.objectID) }
            for object in change.added where !object.deletedFlag && object.managedObjectContext != nil { set.members.append(object) }
        }
    }

    /// Whether the object is deleted and its context has forgotten it: another context's deletion
    /// was merged (`deletedElsewhereFlag`), or it was inserted and deleted here before a save, as
    /// opposed to a deletion pending here. No row of it is or will be in the store.
    var isDeletedAndForgotten: Bool {
        guard deletedFlag, let context = managedObjectContext else { return false }
        return context.registry[objectKey] !== self
    }

    /// Takes objects another context deleted (by key) out of this object's loaded to-many sets,
    /// current and saved members alike. Keys, not IDs: members fetched without an ID object don't
    /// make one to be compared.
    final func dropMembers(_ deleted: Set<ObjectKey>) {
        for relationship in entity.frozenRelationships where relationship.isToMany {
            guard let set = values[relationship.slot] as? RelationshipSet else { continue }
            set.members.removeAll { deleted.contains($0.objectKey) }
            set.committedIDs?.removeAll { deleted.contains($0.key) }
        }
    }

    /// The to-many set an inverse change is about to touch, and whether it was loaded for it. A
    /// set loaded now folds in other objects' unsaved changes, so the object's event baseline is
    /// recorded before the load.
    private func inverseSet(_ inverse: NSRelationshipDescription) -> (RelationshipSet, loadedNow: Bool) {
        let loadedNow = !(values[inverse.slot] is RelationshipSet)
        if loadedNow { snapshotBeforeChange() }
        return (relationshipSet(for: inverse), loadedNow)
    }

    /// Records on this object (the destination) that `source` now points to it through `inverse`'s inverse.
    private func inverseAdd(_ source: NSManagedObject, via inverse: NSRelationshipDescription) {
        fireFaultIfNeeded()
        if inverse.isToMany {
            let (set, loadedNow) = inverseSet(inverse)
            guard !set.members.contains(source) else {
                // Loaded just now, with the source's unsaved change already in: still a change here.
                if loadedNow { managedObjectContext?.objectDidChange(self) }
                return
            }
            snapshotBeforeChange()
            set.members.append(source)
            managedObjectContext?.objectDidChange(self)
        } else {
            let previous = toOneDestination(inverse)
            if previous === source { return }
            snapshotBeforeChange()
            values[inverse.slot] = source
            managedObjectContext?.objectDidChange(self)
            // A one-to-one steal: the previous partner loses its link to this object.
            if let previous, let back = inverse.inverseRelationship {
                previous.inverseRemove(self, via: back)
            }
        }
    }

    /// Records on this object that `source` no longer points to it.
    private func inverseRemove(_ source: NSManagedObject, via inverse: NSRelationshipDescription) {
        fireFaultIfNeeded()
        if inverse.isToMany {
            let (set, loadedNow) = inverseSet(inverse)
            guard set.members.contains(source) else {
                // Loaded just now, with the source's unsaved change already in: still a change here.
                if loadedNow { managedObjectContext?.objectDidChange(self) }
                return
            }
            snapshotBeforeChange()
            set.members.remove(source)
            managedObjectContext?.objectDidChange(self)
        } else {
            guard toOneDestinationID(inverse) == source.objectID || toOneDestination(inverse) === source else { return }
            snapshotBeforeChange()
            values[inverse.slot] = nil
            managedObjectContext?.objectDidChange(self)
        }
    }
}

/// A to-many relationship's unsaved change: the objects added and the IDs removed since it was read.
struct ToManyChange {
    let relationship: NSRelationshipDescription
    let added: [NSManagedObject]
    let removed: Set<NSManagedObjectID>
}
