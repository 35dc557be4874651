import Foundation
import OrderedCollections

/// Saving: validation, the changes handed to the parent (a coordinator or a parent context) all at
/// once, conflicts resolved by the merge policy, then the context's own bookkeeping.
extension NSManagedObjectContext {
    /// Saves inserted, updated and deleted objects to the parent, all or nothing.
    ///
    /// Validation errors are thrown with Core Data's codes (1560 wrapping several); on any error
    /// nothing is written and the context keeps its changes, so they can be fixed and saved again.
    public func save() throws {
        checkQueue("save()")
        guard !isSaving else {
            coreDataMisuse("save() was called recursively, from willSave() or a notification of the same context.")
        }
        processPendingChanges()
        guard hasChanges else {
            postNotificationsOfEmptySave()
            return
        }
        isSaving = true
        defer { isSaving = false }
        postContextNotification(.NSManagedObjectContextWillSave)
        // The objects to save as they are now (a willSave may change others): copies of the
        // lists, which share their storage until a list changes (no array of 200,000 retains).
        let (insertedNow, updatedNow, deletedNow) = (inserted, updated, deleted)
        for object in insertedNow { object.willSave() }
        for object in updatedNow { object.willSave() }
        for object in deletedNow { object.willSave() }
        processPendingChanges()

        try validateForSave()
        // An incremental store's save request carries inserted objects with permanent IDs.
        if let coordinator = persistentStoreCoordinatorRoot, coordinator.hasIncrementalStores {
            try obtainPermanentIDs(for: Array(inserted).filter { $0.objectID.isTemporaryID })
        }
        let permanentIDs = try applyChangesResolvingConflicts(to: requireParent())
        finishSave(permanentIDs: permanentIDs)
    }

    /// A save with nothing to save posts the will-save and did-save notifications as Apple's Core
    /// Data does (test suites wait for them), with empty sets of objects and IDs, and writes nothing.
    private func postNotificationsOfEmptySave() {
        isSaving = true
        defer { isSaving = false }
        postContextNotification(.NSManagedObjectContextWillSave)
        let none = Set<NSManagedObject>()
        postContextNotification(.NSManagedObjectContextDidSave, userInfo: [
            NSInsertedObjectsKey: none, NSUpdatedObjectsKey: none, NSDeletedObjectsKey: none,
        ])
        let noIDs = Set<NSManagedObjectID>()
        postContextNotification(Self.didSaveObjectIDsNotification, userInfo: [
            NSInsertedObjectIDsKey: noIDs, NSUpdatedObjectIDsKey: noIDs, NSDeletedObjectIDsKey: noIDs,
        ])
    }

    /// How many times a save resolves conflicts and tries again before it gives up with 133020.
    private static let conflictResolutionAttempts = 8

    /// Hands the changes to the parent. When objects changed in the store since they were read,
    /// the merge policy resolves the conflicts (or throws) and the save is tried again.
    ///
    /// The first try runs as any save. Once it meets conflicts, the rows are read, the conflicts
    /// resolved and the save tried again with the stores' writes held (`holdingWrites`), as Apple's
    /// Core Data resolves under its lock: no other writer, in this process or another, can commit
    /// between the rows the merge policy saw and the save, so a busy writer can't make every
    /// retry conflict again. (Attempts can still repeat: a resolution may leave conflicts.)
    private func applyChangesResolvingConflicts(to parent: ParentStore) throws -> PermanentIDs {
        var attempt = try attemptSave(to: parent)
        if case .saved(let ids) = attempt { return ids }
        return try parent.holdingWrites {
            var attempts = 0
            while true {
                attempts += 1
                switch attempt {
                case .saved(let ids):
                    return ids
                case .versionConflicts(let conflicts):
                    let list = try mergeConflicts(for: conflicts.objectIDs, in: parent)
                    guard attempts < Self.conflictResolutionAttempts else { throw NSMergePolicy.mergeError(list) }
                    try effectiveMergePolicy.resolve(mergeConflicts: list)
                case .constraintConflicts(let conflicts):
                    let list = try constraintConflicts(for: conflicts.violations, in: parent)
                    guard attempts < Self.conflictResolutionAttempts else { throw NSMergePolicy.constraintError(list) }
                    try effectiveMergePolicy.resolve(mergeConflicts: list)
                }
                attempt = try attemptSave(to: parent)
            }
        }
    }

    /// How one try of a save ended: saved (with the permanent IDs), or conflicts to resolve.
    private enum SaveAttempt {
        case saved(PermanentIDs)
        case versionConflicts(StoreVersionConflicts)
        case constraintConflicts(StoreConstraintConflicts)
    }

    /// Builds the changes and hands them to the parent once; a store's version or uniqueness
    /// conflicts are returned, any other error thrown.
    private func attemptSave(to parent: ParentStore) throws -> SaveAttempt {
        let changes = makeSaveChanges()
        if changes.isEmpty { return .saved([:]) }
        do {
            return .saved(try asRequester { try parent.applyChanges(changes, from: self) })
        } catch let conflicts as StoreVersionConflicts {
            return .versionConflicts(conflicts)
        } catch let conflicts as StoreConstraintConflicts {
            return .constraintConflicts(conflicts)
        }
    }

    /// The merge policy in use: `mergePolicy` when it is a policy (or a policy type), otherwise the error policy.
    private var effectiveMergePolicy: NSMergePolicy {
        (mergePolicy as? NSMergePolicy) ?? (mergePolicy as? NSMergePolicyType).map { NSMergePolicy(merge: $0) } ?? .error
    }

    /// A conflict for each registered object whose row changed (or vanished) in the store.
    private func mergeConflicts(for objectIDs: [NSManagedObjectID], in parent: ParentStore) throws -> [NSMergeConflict] {
        let rows = try asRequester { try parent.loadRows(objectIDs) }
        return objectIDs.compactMap { id in
            guard let object = registry[id.key] else { return nil }
            let row = rows[id.key]
            return NSMergeConflict(source: object, newVersion: Int(row?.version ?? 0), oldVersion: Int(object.storeVersion),
                                   cachedSnapshot: object.committedValues.map { object.snapshot(of: $0) },
                                   persistedSnapshot: row.map { object.snapshot(of: $0.values) })
        }
    }

    /// A conflict for each uniqueness violation the store found, with the stored rows' values.
    private func constraintConflicts(for violations: [StoreConstraintConflicts.Violation], in parent: ParentStore) throws -> [NSConstraintConflict] {
        let rows = try asRequester { try parent.loadRows(violations.compactMap(\.storedObjectID)) }
        return violations.map { violation in
            let objects = violation.objectIDs.compactMap { registry[$0.key] }
            let row = violation.storedObjectID.flatMap { rows[$0.key] }
            let stored = violation.storedObjectID.map { registerFetched($0, row: row, asFault: false, refresh: false) }
            return NSConstraintConflict(constraint: violation.constraint, databaseObject: stored,
                                        databaseSnapshot: row.flatMap { row in stored.map { $0.snapshot(of: row.values) } },
                                        conflicting: objects, snapshots: objects.map { $0.snapshot(of: $0.values) },
                                        databaseVersion: row?.version ?? 0)
        }
    }

    /// Turns an inserted object into the registered object of a stored row (a constraint conflict
    /// resolved in favour of one row): the save updates that row instead of inserting a new one.
    /// A different object registered for the row is forgotten.
    func adoptStoredIdentity(_ storedID: NSManagedObjectID, for object: NSManagedObject, storedValues: SlotValues,
                             version: Int64, keepingOwnValues: Bool) {
        guard object.insertedFlag else { return }
        if let previous = registry[storedID.key], previous !== object {
            forgetChanges(of: previous)
            previous.managedObjectContext = nil
        }
        registry[object.objectKey] = nil
        inserted.remove(object)
        pendingInserted.remove(object)
        object.insertedFlag = false
        object.objectID = storedID
        registry[storedID.key] = object
        object.committedValues = storedValues
        object.storeVersion = version
        if !keepingOwnValues {
            for property in object.entity.frozenProperties where !property.isTransient {
                if let relationship = property as? NSRelationshipDescription, relationship.isToMany {
                    object.values[property.slot] = nil
                } else {
                    object.values[property.slot] = storedValues[property.slot]
                }
            }
        }
        object.updatedFlag = true
        updated.append(object)
    }

    /// After a merge policy discarded an object's changes: it is no longer updated.
    func forgetChanges(of object: NSManagedObject) {
        guard object.updatedFlag else { return }
        object.updatedFlag = false
        updated.remove(object)
        pendingUpdated.remove(object)
    }

    /// After a save found an object deleted from the store: the context forgets it and its changes.
    func forgetObjectDeletedInStore(_ object: NSManagedObject) {
        forgetChanges(of: object)
        registry[object.objectKey] = nil
        object.deletedFlag = true
        object.managedObjectContext = nil
    }

    private func validateForSave() throws {
        var errors: [NSError] = []
        // A fault whose row was gone is exempt from validation: nothing of it exists.
        for object in deleted where !object.inaccessibleFlag {
            do { try object.validateForDelete() } catch let error as NSError { errors.append(error) }
        }
        for object in inserted {
            do { try object.validateForInsert() } catch let error as NSError { errors.append(contentsOf: Self.flatten(error)) }
        }
        for object in updated {
            do { try object.validateForUpdate() } catch let error as NSError { errors.append(contentsOf: Self.flatten(error)) }
        }
        try ObjectValidation.throwCombined(errors)
    }

    private static func flatten(_ error: NSError) -> [NSError] {
        if error.code == NSValidationMultipleErrorsError, let details = error.userInfo[NSDetailedErrorsKey] as? [NSError] { return details }
        return [error]
    }

    private func makeSaveChanges() -> SaveChanges {
        var changes = SaveChanges()
        changes.inserted = inserted.map { record(for: $0) }
        changes.updated = updated.map { record(for: $0) }
        // A fault whose row was gone is discarded, not deleted again.
        changes.deleted = deleted.filter { !$0.inaccessibleFlag }.map { SaveRecord(objectID: $0.objectID, entity: $0.entity, values: $0.committedValues ?? $0.values, toMany: [:], version: $0.storeVersion) }
        // Changed and deleted objects are checked anyway, and new ones have no stored version.
        changes.checked = objectsToCheckForConflicts.values.filter { $0.lives(in: self) && !$0.hasChanges && !$0.objectID.isTemporaryID }
            .map { SaveRecord(objectID: $0.objectID, entity: $0.entity, values: SlotValues(), toMany: [:], version: $0.storeVersion) }
        changes.author = historyAuthor
        if let coordinatorStorage, coordinatorStorage.tracksPersistentHistory {
            for object in updated { changes.changedSlots[object.objectKey] = object.changedPersistentSlots() }
        }
        return changes
    }

    private func record(for object: NSManagedObject) -> SaveRecord {
        if object.entity.storesValuesVerbatim {
            return SaveRecord(objectID: object.objectID, entity: object.entity, values: object.values, toMany: [:], version: object.storeVersion)
        }
        var values = object.values
        var toMany: [Int: [NSManagedObjectID]] = [:]
        for relationship in object.entity.frozenRelationships {
            if relationship.isToMany {
                if let set = values[relationship.slot] as? RelationshipSet {
                    let ids = set.members.map(\.objectID)
                    if set.committedIDs != ids { toMany[relationship.slot] = ids }
                }
                values[relationship.slot] = nil
            } else {
                values[relationship.slot] = object.toOneDestinationID(relationship)
            }
        }
        for property in object.entity.frozenProperties where property.isTransient { values[property.slot] = nil }
        return SaveRecord(objectID: object.objectID, entity: object.entity, values: values, toMany: toMany, version: object.storeVersion)
    }

    private func finishSave(permanentIDs: PermanentIDs) {
        // A pinned context moves to the generation its save made before anything reads again
        // (`didSave()`, observers of the notifications).
        advanceQueryGeneration()
        // The saved objects: copies of the lists (shared storage), which outlive the clearing below.
        let insertedList = inserted
        let updatedList = updated
        let deletedList = deleted
        let savedInserted = notifiedInsertedSet.flatMap { $0.version == inserted.version ? $0.set : nil } ?? Set(sparselyFrom: insertedList)
        let savedUpdated = Set(sparselyFrom: updatedList)
        let savedDeleted = Set(sparselyFrom: deletedList)
        // One pass over the inserted objects, in the order they were inserted (which is memory
        // order): each takes its permanent ID (looked up by its temporary one, not by walking the
        // mapping in hash order); their IDs are kept for the notifications, the set of them filled
        // while each ID is in the cache. An object without relationships commits its values in
        // the same pass; the others wait until every new object has its permanent ID, which their
        // committed to-one slots record.
        if let first = insertedList.first.flatMap({ permanentIDs[$0.objectID.key] }), let last = insertedList.last.flatMap({ permanentIDs[$0.objectID.key] }) {
            registry.reserveCapacity(forPermanentKeysFrom: first, to: last, count: permanentIDs.count)
        }
        var insertedIDs: [NSManagedObjectID] = []
        insertedIDs.reserveCapacity(insertedList.count)
        var insertedIDSet = Set<NSManagedObjectID>(minimumCapacity: insertedList.count * 2)
        var relating: [NSManagedObject] = []
        for object in insertedList {
            takePermanentID(of: object, from: permanentIDs)
            insertedIDs.append(object.objectID)
            insertedIDSet.insert(object.objectID)
            if object.entity.storesValuesVerbatim { Self.commitSavedValues(of: object) } else { relating.append(object) }
        }
        for object in relating { Self.commitSavedValues(of: object) }
        for object in updatedList { Self.commitSavedValues(of: object) }
        reloadDerivedValues(of: insertedList, updatedList)
        for object in deletedList {
            registry[object.objectKey] = nil
            object.managedObjectContext = nil
        }
        clearChangeTracking()
        saveGeneration += 1
        for object in insertedList { object.didSave() }
        for object in updatedList { object.didSave() }
        for object in deletedList { object.didSave() }
        var userInfo: [AnyHashable: Any] = [
            NSInsertedObjectsKey: savedInserted,
            NSUpdatedObjectsKey: savedUpdated,
            NSDeletedObjectsKey: savedDeleted,
        ]
        if queryGenerationPin != nil, let token = queryGenerationToken { userInfo[NSManagedObjectContextQueryGenerationKey] = token }
        postContextNotification(.NSManagedObjectContextDidSave, userInfo: userInfo)
        let savedIDs = SavedObjectIDs(inserted: insertedIDs, updated: updatedList.map(\.objectID), deleted: deletedList.map(\.objectID))
        postContextNotification(Self.didSaveObjectIDsNotification, userInfo: [
            NSInsertedObjectIDsKey: insertedIDSet,
            NSUpdatedObjectIDsKey: Set(sparselyFrom: savedIDs.updated),
            NSDeletedObjectIDsKey: Set(sparselyFrom: savedIDs.deleted),
        ])
        if let parentContext {
            parentContext.childDidSave(savedIDs, from: self)
        } else {
            coordinatorStorage?.contextDidSave(savedIDs, from: self)
        }
    }

    /// Reads back the derived attributes of objects a save just wrote to the store, which
    /// computed them in the save's transaction (a child context's save to its parent derives
    /// nothing). A failed read leaves the values as they were: the save itself has succeeded.
    private func reloadDerivedValues(of lists: ManagedObjectList...) {
        guard parentContext == nil, let coordinator = coordinatorStorage, coordinator.managedObjectModel.hasDerivedAttributes else { return }
        let deriving = lists.joined().filter { !$0.entity.derivedSlots.isEmpty }
        guard !deriving.isEmpty else { return }
        let rows: [ObjectKey: StoredRow]
        do {
            rows = try asRequester { try coordinator.loadRows(deriving.map(\.objectID)) }
        } catch {
            CoreDataLog.logger.error("Could not read back the derived attributes of the saved objects: \(error)")
            return
        }
        for object in deriving {
            guard let row = rows[object.objectKey] else { continue }
            for slot in object.entity.derivedSlots {
                object.values[slot] = row.values[slot]
                object.committedValues?[slot] = row.values[slot]
            }
        }
    }

    /// Marks a saved inserted or updated object as unchanged, one version on (an inserted one at
    /// its row's first version, 1, even when undo brought it back after a saved deletion), with
    /// its current values as its committed ones (relationships as the store holds them: to-one
    /// as IDs).
    private static func commitSavedValues(of object: NSManagedObject) {
        object.storeVersion = object.insertedFlag ? 1 : object.storeVersion + 1
        object.insertedFlag = false
        object.updatedFlag = false
        if object.entity.storesValuesVerbatim {
            object.committedValues = object.values
            return
        }
        var committed = object.values
        for relationship in object.entity.frozenRelationships {
            if relationship.isToMany {
                if let set = committed[relationship.slot] as? RelationshipSet { set.committedIDs = set.members.map(\.objectID) }
                committed[relationship.slot] = nil
            } else {
                committed[relationship.slot] = object.toOneDestinationID(relationship)
            }
        }
        object.committedValues = committed
    }

    /// Forgets the inserted, updated and deleted sets, the changes not yet notified and the
    /// objects marked for conflict detection.
    func clearChangeTracking() {
        for object in endEventBaselines().startedUnchanged { object.eventStartedUnchangedFlag = false }
        notifiedInsertedSet = nil
        objectsToCheckForConflicts = [:]
        inserted.removeAll()
        updated.removeAll()
        deleted.removeAll()
        pendingInserted.removeAll()
        pendingUpdated.removeAll()
        pendingDeleted.removeAll()
        pendingRefreshed.removeAll()
    }
}
