import Foundation
import OrderedCollections

/// The current event: the changes since the context last posted
/// `NSManagedObjectContextObjectsDidChange` (`processPendingChanges()`).
///
/// Before an object's first change of an event, the context keeps its values as they were (its
/// *baseline*); `changedValuesForCurrentEvent()` compares the object with it. An object inserted
/// in the event needs none: its baseline is its entity's default values. Every change passes
/// through `snapshotBeforeChange()`, which costs one test of a bit of the object's flags once the
/// baseline is known, so inserting and setting many objects records nothing per change.
extension NSManagedObjectContext {
    /// An object's values at the start of the current event, kept from its first change in it.
    struct EventBaseline {
        /// The object, held until the event ends.
        let object: NSManagedObject
        /// Its values by slot; a loaded to-many relationship as `ToManySnapshot`, an unloaded one nil.
        var values: SlotValues
    }

    /// The event being posted: what `changedValuesForCurrentEvent()` describes inside an observer
    /// of `NSManagedObjectContextObjectsDidChange`.
    struct PostedEvent {
        let baselines: [ObjectIdentifier: EventBaseline]
        let startedUnchanged: [NSManagedObject]
        let inserted: Set<NSManagedObject>
    }

    /// Records an object's values before its first change of the event: nothing for an object
    /// inserted in it, a mark for one without unsaved changes (its committed values are its
    /// baseline), a copy of the values for others (and, for one inserted in an earlier event, a
    /// place among the event's updated objects).
    func recordEventBaseline(of object: NSManagedObject) {
        guard object.lives(in: self), !object.eventBaselineFlag else { return }
        object.eventBaselineFlag = true
        if object.insertedFlag {
            if pendingInserted.contains(object) { return }
            // Inserted in an earlier event: the event lists it as updated (it stays inserted).
            pendingUpdated.append(object)
        }
        if !object.insertedFlag && !object.updatedFlag && !object.deletedFlag && object.committedValues != nil {
            object.eventStartedUnchangedFlag = true
            eventStartedUnchanged.append(object)
            return
        }
        eventBaselines[ObjectIdentifier(object)] = EventBaseline(object: object, values: object.valuesWithToManySnapshots())
    }

    /// Completes a baseline recorded before a to-many relationship was loaded, with what the
    /// relationship holds as it loads (before the change it is loaded for).
    func recordLoadedToMany(_ set: RelationshipSet, at slot: Int, of object: NSManagedObject) {
        let key = ObjectIdentifier(object)
        guard var baseline = eventBaselines[key], slot < baseline.values.count, baseline.values[slot] == nil else { return }
        baseline.values[slot] = ToManySnapshot(members: set.members, committedIDs: set.committedIDs)
        eventBaselines[key] = baseline
    }

    /// Ends the current event's baselines; returns them. The objects that started it unchanged
    /// keep `eventStartedUnchangedFlag` (what their baseline is while the event is posted) until
    /// the caller clears it.
    func endEventBaselines() -> (baselines: [ObjectIdentifier: EventBaseline], startedUnchanged: [NSManagedObject]) {
        for object in pendingInserted { object.eventBaselineFlag = false }
        let baselines = eventBaselines
        let startedUnchanged = eventStartedUnchanged
        guard !baselines.isEmpty || !startedUnchanged.isEmpty else { return (baselines, startedUnchanged) }
        for baseline in baselines.values { baseline.object.eventBaselineFlag = false }
        for object in startedUnchanged { object.eventBaselineFlag = false }
        eventBaselines = [:]
        eventStartedUnchanged = []
        return (baselines, startedUnchanged)
    }

    /// An object's values at the start of the current event; nil when it has not changed in it.
    /// Inside an observer of the event's notification, the posted event's.
    func eventBaseline(of object: NSManagedObject) -> SlotValues? {
        let key = ObjectIdentifier(object)
        if let baseline = eventBaselines[key] { return baseline.values }
        if object.eventBaselineFlag && object.insertedFlag { return Self.insertionBaseline(of: object) }
        if object.eventStartedUnchangedFlag { return committedBaseline(of: object) }
        guard let postedEvent else { return nil }
        if let baseline = postedEvent.baselines[key] { return baseline.values }
        return postedEvent.inserted.contains(object) ? Self.insertionBaseline(of: object) : nil
    }

    /// The baseline of an object that started the event without unsaved changes: its committed
    /// values, to-many relationships as their committed members.
    private func committedBaseline(of object: NSManagedObject) -> SlotValues? {
        guard var values = object.committedValues else { return nil }
        for slot in object.entity.toManySlots where slot < values.count {
            if let set = object.values[slot] as? RelationshipSet, let ids = set.committedIDs {
                values[slot] = ToManySnapshot(members: OrderedSet(ids.map { self.object(with: $0) }), committedIDs: ids)
            } else {
                values[slot] = nil
            }
        }
        return values
    }

    /// The baseline of an object inserted in the event: its entity's default values, and no
    /// destinations.
    private static func insertionBaseline(of object: NSManagedObject) -> SlotValues {
        var values = object.entity.defaultValues
        for slot in object.entity.toManySlots where slot < values.count {
            values[slot] = ToManySnapshot(members: [], committedIDs: [])
        }
        return values
    }

    /// The objects changed in the current event (inside an observer, the posted one) with their
    /// baselines, to be read for attributes and to-one relationships only (an unchanged object's
    /// committed values keep its to-many relationships elsewhere); nil for an object inserted in it.
    func objectsChangedInEvent() -> [(NSManagedObject, SlotValues?)] {
        if let postedEvent, eventBaselines.isEmpty, eventStartedUnchanged.isEmpty, pendingInserted.isEmpty {
            return postedEvent.baselines.values.map { ($0.object, $0.values) }
                + postedEvent.startedUnchanged.map { ($0, $0.committedValues) }
                + postedEvent.inserted.map { ($0, nil) }
        }
        return eventBaselines.values.map { ($0.object, $0.values) }
            + eventStartedUnchanged.map { ($0, $0.committedValues) }
            + pendingInserted.map { ($0, nil) }
    }

    /// Records what the current event and undo need before `object` changes (its inverse
    /// relationships changed by another object's change, a delete and its rules).
    @inline(__always)
    func snapshotBeforeChange(_ object: NSManagedObject) {
        if !object.eventBaselineFlag { recordEventBaseline(of: object) }
        snapshotForUndo(object)
    }
}

extension NSManagedObject {
    /// Records what the current event and undo need before the object changes: its baseline once
    /// an event (a test of one bit after that), and an undo snapshot when undo is recorded
    /// anywhere (a read of a global count when not, not of the weak context reference).
    @inline(__always)
    final func snapshotBeforeChange() {
        if !eventBaselineFlag { recordEventBaseline() }
        if ContextUndoRecorder.liveCount.load(ordering: .relaxed) != 0 { managedObjectContext?.snapshotForUndo(self) }
    }

    @inline(never)
    private func recordEventBaseline() {
        managedObjectContext?.recordEventBaseline(of: self)
    }

    /// The persistent properties whose values differ from `baseline`, with the baseline's values.
    func changes(since baseline: SlotValues, in context: NSManagedObjectContext) -> [String: Any] {
        guard values.count == baseline.count else { return [:] }
        lazy var changedInEvent = context.objectsChangedInEvent()
        var changes: [String: Any] = [:]
        for property in entity.frozenProperties where !property.isTransient {
            let slot = property.slot
            let old = baseline[slot]
            if let relationship = property as? NSRelationshipDescription {
                if relationship.isToMany {
                    guard let set = values[slot] as? RelationshipSet,
                          let before = toManyAtEventStart(relationship, now: set.members, recorded: old as? ToManySnapshot, changedInEvent: changedInEvent) else { continue }
                    let same = relationship.isOrdered ? before == set.members : before.unordered == set.members.unordered
                    guard !same else { continue }
                    changes[property.name] = relationship.isOrdered ? NSOrderedSet(array: Array(before)) as Any : Set(before) as Any
                } else {
                    let oldID = Self.destinationID(old)
                    guard oldID != toOneDestinationID(relationship) else { continue }
                    changes[property.name] = (old as? NSManagedObject) ?? oldID.map { context.object(with: $0) } ?? NSNull()
                }
            } else if !ValueComparison.isEqual(values[slot], old) {
                changes[property.name] = old ?? NSNull()
            }
        }
        return changes
    }

    /// A loaded to-many relationship's members at the start of the event. With a to-one inverse
    /// they follow from the members now and the destinations' own baselines (a member's inverse
    /// is the truth, whenever the relationship was loaded); otherwise they are the members recorded
    /// before the object's first change, nil when it was not loaded then.
    private func toManyAtEventStart(_ relationship: NSRelationshipDescription, now: OrderedSet<NSManagedObject>, recorded: ToManySnapshot?,
                                    changedInEvent: @autoclosure () -> [(NSManagedObject, SlotValues?)]) -> OrderedSet<NSManagedObject>? {
        guard let inverse = relationship.inverseRelationship, !inverse.isToMany, let destination = relationship.destinationEntity else {
            return recorded?.members
        }
        var members = now
        for (candidate, baseline) in changedInEvent() where candidate.entity.isKindOf(entity: destination) {
            let pointedHere = baseline.map { Self.destinationID($0[inverse.slot]) == objectID } ?? false
            let pointsHere = !candidate.deletedFlag && candidate.values.count > inverse.slot && candidate.toOneDestinationID(inverse) == objectID
            if pointedHere && !pointsHere {
                members.append(candidate)
            } else if pointsHere && !pointedHere {
                members.remove(candidate)
            }
        }
        return members
    }
}
