import Foundation
import Synchronization
import OrderedCollections

/// Undo for a context: each object is snapshotted before its first change in an event (attribute
/// sets, relationship changes and their inverses, inserts, deletes and their cascades all pass
/// through `snapshotBeforeChange`); at the end of the event (`processPendingChanges()`) the snapshots
/// become one undo operation that puts them back, and registers the state it replaced for redo.
extension NSManagedObjectContext {
    /// Asks the undo manager to reverse the last recorded event.
    public func undo() {
        checkQueue("undo()")
        guard let manager = undoManager else { return }
        processPendingChanges()
        manager.undo()
        processPendingChanges()
    }

    /// Asks the undo manager to repeat the last undone event.
    public func redo() {
        checkQueue("redo()")
        guard let manager = undoManager else { return }
        processPendingChanges()
        manager.redo()
        processPendingChanges()
    }

    func setUndoManager(_ manager: UndoManager?) {
        if let undoRecorder, undoRecorder.manager === manager { return }
        processPendingChanges()
        undoRecorder?.stopObserving()
        undoRecorder = manager.map { ContextUndoRecorder(manager: $0, context: self) }
    }

    /// Removes this context's actions from its undo manager (rollback and reset).
    func discardUndoHistory() {
        guard let undoRecorder else { return }
        undoRecorder.snapshots = [:]
        undoRecorder.manager.removeAllActions(withTarget: self)
    }

    /// Runs changes that are not the user's (refreshes, merges) without recording them for undo.
    func withoutUndoRecording<T>(_ body: () throws -> T) rethrows -> T {
        guard let undoRecorder else { return try body() }
        undoRecorder.suspendedDepth += 1
        defer { undoRecorder.suspendedDepth -= 1 }
        return try body()
    }

    /// Snapshots an object before its first change of the current event, when undo is recorded.
    @inline(__always)
    func snapshotForUndo(_ object: NSManagedObject) {
        if let undoRecorder { undoRecorder.capture(object, in: self) }
    }

    /// Turns the snapshots of the event that ends into one undo operation.
    func recordUndoForEvent() {
        guard let undoRecorder else { return }
        if !undoRecorder.snapshots.isEmpty {
            let before = Array(undoRecorder.snapshots.values)
            undoRecorder.snapshots = [:]
            undoRecorder.manager.registerUndo(withTarget: self) { context in context.revert(to: before) }
        }
        undoRecorder.manager.endEvent()
    }

    /// Puts objects back as snapshotted, and registers their current state as the way back.
    private func revert(to snapshots: [ObjectSnapshot]) {
        // Objects another context deleted since (a merge) stay deleted: undo covers this
        // context's changes, and bringing them back would show and save rows that are gone.
        let snapshots = snapshots.filter { !$0.object.deletedElsewhereFlag }
        let current = snapshots.map { ObjectSnapshot(of: $0.object, in: self) }
        for snapshot in snapshots { restore(snapshot) }
        undoRecorder?.manager.registerUndo(withTarget: self) { context in context.revert(to: current) }
    }

    /// Restores one object's values, change flags and registration.
    private func restore(_ snapshot: ObjectSnapshot) {
        let object = snapshot.object
        recordEventBaseline(of: object)
        let (wasInserted, wasDeleted) = (object.insertedFlag, object.deletedFlag)
        // A save since the snapshot may have written other members than those it saw stored.
        let savedSince = snapshot.saveGeneration != saveGeneration
        if snapshot.values.count == object.entity.slotKeys.count {
            if object.values.count != snapshot.values.count { object.allocateStorage() }
            for (slot, value) in snapshot.values.enumerated() {
                switch value {
                case let toMany as ToManySnapshot:
                    let members = toMany.members.filter { !$0.deletedElsewhereFlag }
                    if let set = object.values[slot] as? RelationshipSet {
                        set.members = members
                    } else {
                        object.values[slot] = RelationshipSet(members: members, committedIDs: savedSince ? nil : toMany.committedIDs)
                    }
                case nil where object.values[slot] is RelationshipSet:
                    continue  // Not loaded when snapshotted, and not changed since.
                default:
                    object.values[slot] = value
                }
            }
            object.faultFlag = false
        }
        var state = snapshot.state
        if savedSince { state = derivedState(of: object, existing: state.exists) }
        if state.isInserted, object.values.count == object.entity.slotKeys.count {
            // No row, so nothing of its relationships is stored: the save writes every member.
            for slot in object.entity.toManySlots { (object.values[slot] as? RelationshipSet)?.committedIDs = nil }
        }
        let key = object.objectKey
        if state.isRegistered {
            registry[key] = object
        } else if registry[key] === object {
            registry[key] = nil
        }
        object.managedObjectContext = state.isInContext ? self : nil
        object.insertedFlag = state.isInserted
        object.updatedFlag = state.isUpdated
        object.deletedFlag = state.isDeleted
        Self.setMembership(of: object, in: &inserted, state.isInserted)
        Self.setMembership(of: object, in: &updated, state.isUpdated)
        Self.setMembership(of: object, in: &deleted, state.isDeleted)
        pendingInserted.remove(object)
        pendingUpdated.remove(object)
        pendingDeleted.remove(object)
        if state.isInserted {
            pendingInserted.append(object)
        } else if state.isDeleted || !state.isRegistered {
            pendingDeleted.append(object)
        } else {
            pendingUpdated.append(object)
        }
        let event: NSSnapshotEventType = if wasInserted != state.isInserted {
            .undoInsertion
        } else if wasDeleted != state.isDeleted {
            .undoDeletion
        } else {
            .undoUpdate
        }
        object.awake(fromSnapshotEvents: event)
    }

    /// The flags an object gets when a save happened since its snapshot: whether it should exist,
    /// measured against what the store now holds. The store has a row for a registered object
    /// that isn't inserted: a saved deletion unregisters its object, and so does deleting an
    /// inserted one, which has no row (nor has an object undo brought back after its deletion
    /// was saved, until the next save).
    private func derivedState(of object: NSManagedObject, existing: Bool) -> ObjectSnapshot.State {
        let inStore = !object.insertedFlag && registry[object.objectKey] === object
            && object.committedValues != nil && !object.objectID.isTemporaryID
        if existing {
            let changed = inStore && !object.changedValues().isEmpty
            return .init(isRegistered: true, isInContext: true, isInserted: !inStore, isUpdated: changed, isDeleted: false)
        }
        if inStore {
            return .init(isRegistered: true, isInContext: true, isInserted: false, isUpdated: false, isDeleted: true)
        }
        return .init(isRegistered: false, isInContext: false, isInserted: false, isUpdated: false, isDeleted: false)
    }

    private static func setMembership(of object: NSManagedObject, in list: inout ManagedObjectList, _ member: Bool) {
        if member { list.append(object) } else { list.remove(object) }
    }
}

/// A context's link to its undo manager: the snapshots of the current event, and the checkpoint observer.
final class ContextUndoRecorder {
    let manager: UndoManager
    /// The objects changed in the current event, as they were before their first change.
    var snapshots: [ObjectIdentifier: ObjectSnapshot] = [:]
    /// Above zero while the context applies changes that undo does not record.
    var suspendedDepth = 0
    private var observer: NSObjectProtocol?

    /// How many recorders are live, in any context: an atomic read (relaxed) on every change, a
    /// hint that is exact on the queue that sets the context's undo manager (the one its objects
    /// are used on).
    static let liveCount = Atomic<Int>(0)

    private static func changeLiveCount(by delta: Int) {
        liveCount.add(delta, ordering: .relaxed)
    }

    init(manager: UndoManager, context: NSManagedObjectContext) {
        self.manager = manager
        Self.changeLiveCount(by: 1)
        // The manager's checkpoints (undo, redo, grouping) end the context's event first.
        observer = NotificationCenter.default.addObserver(forName: .NSUndoManagerCheckpoint, object: manager, queue: nil) { [weak context] _ in
            context?.processPendingChanges()
        }
    }

    func stopObserving() {
        guard let observer else { return }
        NotificationCenter.default.removeObserver(observer)
        self.observer = nil
        Self.changeLiveCount(by: -1)
    }

    /// Snapshots an object the first time it changes in the event; later, fills in the to-many
    /// relationships that were loaded since (they are loaded before they change).
    func capture(_ object: NSManagedObject, in context: NSManagedObjectContext) {
        guard suspendedDepth == 0, manager.isUndoRegistrationEnabled else { return }
        let key = ObjectIdentifier(object)
        guard var snapshot = snapshots[key] else {
            snapshots[key] = ObjectSnapshot(of: object, in: context)
            return
        }
        guard snapshot.values.count == object.values.count else { return }
        var filled = false
        for slot in object.entity.toManySlots where snapshot.values[slot] == nil {
            guard let set = object.values[slot] as? RelationshipSet else { continue }
            snapshot.values[slot] = ToManySnapshot(members: set.members, committedIDs: set.committedIDs)
            filled = true
        }
        if filled { snapshots[key] = snapshot }
    }
}

/// One object's values and change state at a moment, for undo and redo.
struct ObjectSnapshot {
    /// Where the object stood in its context.
    struct State {
        var isRegistered: Bool
        var isInContext: Bool
        var isInserted: Bool
        var isUpdated: Bool
        var isDeleted: Bool
        /// Whether the object is part of the object graph (registered and not deleted).
        var exists: Bool { isRegistered && !isDeleted }
    }

    let object: NSManagedObject
    /// The values by slot; loaded to-many relationships as `ToManySnapshot`.
    var values: SlotValues
    let state: State
    /// The context's save count when the snapshot was taken.
    let saveGeneration: Int

    init(of object: NSManagedObject, in context: NSManagedObjectContext) {
        let inContext = object.lives(in: context)
        if inContext { object.fireFaultIfNeeded() }
        self.object = object
        values = object.valuesWithToManySnapshots()
        state = State(
            isRegistered: context.registry[object.objectKey] === object, isInContext: inContext,
            isInserted: object.insertedFlag, isUpdated: object.updatedFlag, isDeleted: object.deletedFlag)
        saveGeneration = context.saveGeneration
    }
}

/// The members of a to-many relationship at the time of a snapshot.
struct ToManySnapshot {
    let members: OrderedSet<NSManagedObject>
    let committedIDs: [NSManagedObjectID]?
}
