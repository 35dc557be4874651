import Foundation
import OrderedCollections

/// How a context synchronizes its work, by Core Data's top-level name.
public typealias NSManagedObjectContextConcurrencyType = NSManagedObjectContext.ConcurrencyType

/// A scratch pad of managed objects: it fetches them, tracks their changes and saves them to its
/// parent (a persistent store coordinator or another context) all at once.
///
/// A context is not thread-safe: use it on its queue, through `perform` and `performAndWait`
/// (a main-queue context may also be used directly on the main thread).
/// Unchecked Sendable: confined to its queue (checked by concurrency debugging); only the
/// queue, the lock and the thread identity are read from other threads.
open class NSManagedObjectContext: NSObject, @unchecked Sendable {
    /// How a context synchronizes its work.
    public enum ConcurrencyType: UInt, Sendable {
        /// Deprecated by Apple: the context is used from the thread that created it.
        case confinementConcurrencyType = 0
        /// The context owns a private serial queue.
        case privateQueueConcurrencyType = 1
        /// The context works on the main queue.
        case mainQueueConcurrencyType = 2

        /// The context works on the main queue: `NSManagedObjectContext(.mainQueue)`.
        public static let mainQueue = ConcurrencyType.mainQueueConcurrencyType
        /// The context owns a private serial queue: `NSManagedObjectContext(.privateQueue)`.
        public static let privateQueue = ConcurrencyType.privateQueueConcurrencyType
    }

    /// When an asynchronous `perform` runs its block.
    public enum ScheduledTaskType: Sendable {
        /// As soon as possible.
        case immediate
        /// After the work already enqueued.
        case enqueued
    }

    /// How the context synchronizes.
    public let concurrencyType: ConcurrencyType
    /// A name shown in logs and recorded in persistent history.
    public var name: String?
    /// A dictionary for the app's own values about the context; the framework never reads it.
    public let userInfo = NSMutableDictionary()
    /// The author recorded in persistent history for this context's saves.
    public var transactionAuthor: String?
    /// Who this context's saves and batch requests are recorded as in persistent history.
    var historyAuthor: TransactionAuthor { TransactionAuthor(author: transactionAuthor, contextName: name) }
    /// Whether the context merges changes saved by its parent (or by sibling contexts of the coordinator) automatically.
    public var automaticallyMergesChangesFromParent: Bool = false
    /// How a save resolves conflicts with the store: an `NSMergePolicy` (or one of the legacy
    /// constants such as `NSMergeByPropertyObjectTrumpMergePolicy`); anything else acts as
    /// `NSErrorMergePolicy`, the default.
    public var mergePolicy: Any = NSMergePolicy.error
    /// How old cached values may be when a fault is fulfilled. There is no row cache here: faults
    /// and refreshes always read the store, which satisfies every interval.
    public var stalenessInterval: TimeInterval = -1
    /// Whether a fault whose row is gone from the store (deleted by another context or process)
    /// becomes a deleted object with empty values when it fires (the default), rather than trap;
    /// see `shouldHandleInaccessibleFault(_:for:triggeredByProperty:)`.
    public var shouldDeleteInaccessibleFaults: Bool = true
    /// Whether the context keeps strong references to all registered objects (it always does here).
    public var retainsRegisteredObjects: Bool = true
    /// Whether pending changes are processed at the end of each event (always, here).
    public var propagatesDeletesAtEndOfEvent: Bool = true

    @exclusivity(unchecked) var coordinatorStorage: NSPersistentStoreCoordinator?
    /// The parent context, for a child context.
    @exclusivity(unchecked) public private(set) var parentContext: NSManagedObjectContext?
    /// The entity `Team(context:)` found last: its class, the model it was found in, the entity.
    /// Inserting many objects of one class asks for it each time, and the model's own answer
    /// takes a lock and a hash.
    @exclusivity(unchecked) var lastEntityByClass: LastEntityByClass?

    /// See `lastEntityByClass`: immutable, so reading it takes no retain of its parts.
    final class LastEntityByClass {
        let type: ObjectIdentifier
        let model: NSManagedObjectModel
        let entity: NSEntityDescription

        init(type: ObjectIdentifier, model: NSManagedObjectModel, entity: NSEntityDescription) {
            self.type = type
            self.model = model
            self.entity = entity
        }
    }

    // Object graph state.
    let registry = ObjectRegistry()
    @exclusivity(unchecked) var inserted = ManagedObjectList(.inserted)
    @exclusivity(unchecked) var updated = ManagedObjectList(.updated)
    @exclusivity(unchecked) var deleted = ManagedObjectList(.deleted)
    // Changes since the last ObjectsDidChange notification.
    @exclusivity(unchecked) var pendingInserted = ManagedObjectList(.pendingInserted)
    @exclusivity(unchecked) var pendingUpdated = ManagedObjectList(.pendingUpdated)
    @exclusivity(unchecked) var pendingDeleted = ManagedObjectList(.pendingDeleted)
    /// Objects `refresh(_:mergeChanges:)` gave new values since the last ObjectsDidChange
    /// notification (its `NSRefreshedObjectsKey`); rare, so a plain table.
    @exclusivity(unchecked) var pendingRefreshed: [ObjectIdentifier: NSManagedObject] = [:]
    /// The values changed objects had at the start of the current event (see `EventBaseline`).
    @exclusivity(unchecked) var eventBaselines: [ObjectIdentifier: EventBaseline] = [:]
    /// The objects first changed in the current event with no unsaved changes before it: their
    /// committed values are their baseline.
    @exclusivity(unchecked) var eventStartedUnchanged: [NSManagedObject] = []
    /// The event whose `NSManagedObjectContextObjectsDidChange` is being posted, for observers
    /// that ask `changedValuesForCurrentEvent()`.
    var postedEvent: PostedEvent?
    /// The inserted objects' set last posted in `NSManagedObjectContextObjectsDidChange`, when it
    /// held all of them, with `inserted.version` then: the did-save notification posts the same
    /// set when nothing was inserted or removed since (building a set of many objects is costly).
    var notifiedInsertedSet: (version: Int, set: Set<NSManagedObject>)?
    /// The objects `detectConflicts(for:)` marked for the next save, by identity.
    var objectsToCheckForConflicts: [ObjectIdentifier: NSManagedObject] = [:]

    /// Records the context's changes for undo; nil (the default, as in Core Data) records nothing.
    ///
    /// Changes are collected per event, which here ends at `processPendingChanges()` (also run by
    /// `save()`, `undo()` and `redo()`): each event becomes one undo step.
    public var undoManager: UndoManager? {
        get { undoRecorder?.manager }
        set { setUndoManager(newValue) }
    }
    /// The undo bookkeeping of `undoManager`, nil when there is none (one check on hot paths).
    @exclusivity(unchecked) var undoRecorder: ContextUndoRecorder?
    /// Counts saves, so undo knows whether the flags it recorded still describe the store.
    @exclusivity(unchecked) var saveGeneration = 0
    /// Fetched properties evaluated in this context, until their objects are refreshed.
    @exclusivity(unchecked) var fetchedPropertyResults = FetchedPropertyCache()

    /// The weak reference to this context that its objects, its parent and its coordinator hold
    /// (see `NSManagedObject.managedObjectContext`).
    let link = WeakContext()
    private let queue: DispatchQueue?
    private let queueKey = DispatchSpecificKey<ObjectIdentifier>()
    /// The thread that created a confinement context (what concurrency debugging checks it against).
    let creatingThread: pthread_t?
    private let mainLock = NSRecursiveLock()
    var isSaving = false

    /// Creates a context with a concurrency type: `.mainQueue` or `.privateQueue`.
    public convenience init(_ type: ConcurrencyType) {
        self.init(concurrencyType: type)
    }

    /// Creates a context with a concurrency type.
    public init(concurrencyType: ConcurrencyType) {
        self.concurrencyType = concurrencyType
        if concurrencyType == .privateQueueConcurrencyType {
            let queue = DispatchQueue(label: "OpenCoreData.NSManagedObjectContext")
            self.queue = queue
        } else {
            self.queue = nil
        }
        creatingThread = concurrencyType == .confinementConcurrencyType ? pthread_self() : nil
        ConcurrencyDebugging.enableIfRequested()
        super.init()
        link.context = self
        queue?.setSpecific(key: queueKey, value: ObjectIdentifier(self))
    }

    deinit {
        undoRecorder?.stopObserving()
        persistentStoreCoordinatorRoot?.forget(self)
        // The objects this context alone keeps alive are freed in memory order.
        registry.removeAll()
    }

    // MARK: Parent

    /// The coordinator the context (or its root ancestor) uses. Setting it makes this a root context.
    public var persistentStoreCoordinator: NSPersistentStoreCoordinator? {
        get { coordinatorStorage ?? parentContext?.persistentStoreCoordinator }
        set {
            coreDataPrecondition(parentContext == nil, "A context has either a parent context or a coordinator, not both.")
            coordinatorStorage = newValue
            newValue?.managedObjectModel.freeze()
            newValue?.register(self)
        }
    }

    /// The parent context. Setting it makes this a child context whose saves go to the parent.
    public var parent: NSManagedObjectContext? {
        get { parentContext }
        set {
            coreDataPrecondition(coordinatorStorage == nil, "A context has either a parent context or a coordinator, not both.")
            parentContext = newValue
            newValue?.children.append(link)
        }
    }

    var children: [WeakContext] = []

    var persistentStoreCoordinatorRoot: NSPersistentStoreCoordinator? { coordinatorStorage }

    /// Where reads and saves go: the parent context or the coordinator; for a context pinned to a
    /// query generation, through a `GenerationReadingParent`.
    var parentStore: ParentStore? {
        if let parentContext { return ContextAsParent(context: parentContext) }
        guard let coordinatorStorage else { return nil }
        if queryGenerationPin != nil { return GenerationReadingParent(parent: coordinatorStorage, context: self) }
        return coordinatorStorage
    }

    /// Set while the context is pinned to a query generation (see `setQueryGenerationFrom(_:)`).
    var queryGenerationPin: QueryGenerationPin?

    func requireParent() throws -> ParentStore {
        guard let parentStore else {
            throw CoreDataError.make(.coreData, "The context has neither a persistent store coordinator nor a parent context.")
        }
        return parentStore
    }

    // MARK: Queue

    /// Runs a block asynchronously on the context's queue.
    ///
    /// A main-queue context's block runs on the main queue under the context's lock, the lock its
    /// `performAndWait` takes on other threads: the two never overlap.
    public func perform(_ block: @escaping @Sendable () -> Void) {
        switch concurrencyType {
        case .privateQueueConcurrencyType:
            queue!.async { self.withCurrent(block) }
        case .mainQueueConcurrencyType:
            DispatchQueue.main.async {
                self.mainLock.lock()
                defer { self.mainLock.unlock() }
                self.withCurrent(block)
            }
        case .confinementConcurrencyType:
            withCurrent(block)
        }
    }

    /// Runs a block on the context's queue and waits for it.
    ///
    /// On a main-queue context called off the main thread, the block runs on the calling thread
    /// under the context's lock: a Linux program's main thread may not be running the main queue.
    public func performAndWait<T>(_ block: () throws -> T) rethrows -> T {
        switch concurrencyType {
        case .privateQueueConcurrencyType:
            // Re-entrant: on the queue, or inside a block of this context further out on this
            // thread (a child's `performAndWait` inside this context's block, say, then asking
            // this context for rows), where a `sync` onto the queue would deadlock.
            if isOnOwnQueue { return try withCurrent(block) }
            return try queue!.sync { try withCurrent(block) }
        case .mainQueueConcurrencyType, .confinementConcurrencyType:
            mainLock.lock()
            defer { mainLock.unlock() }
            return try withCurrent(block)
        }
    }

    /// Runs a block on the context's queue and returns its result, for Swift concurrency.
    ///
    /// Typed throws stand in for Apple's `rethrows`: a block that can't throw makes a call that needs no `try`.
    public func perform<T, E: Error>(schedule: ScheduledTaskType = .immediate, _ block: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        switch concurrencyType {
        case .privateQueueConcurrencyType:
            let box = UncheckedResultBox<T, E>()
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                queue!.async {
                    box.result = self.withCurrent { () -> Result<T, E> in
                        do throws(E) { return .success(try block()) } catch { return .failure(error) }
                    }
                    continuation.resume()
                }
            }
            return try box.result!.get()
        default:
            let result = performAndWait { () -> Result<T, E> in
                do throws(E) { return .success(try block()) } catch { return .failure(error) }
            }
            return try result.get()
        }
    }

    private static let currentKey = "OpenCoreData.currentContext"

    /// The context whose `perform` block is running on this thread, if any.
    static var currentlyPerforming: NSManagedObjectContext? { performingChain?.context }

    /// The contexts whose `perform` blocks are running on this thread, innermost first.
    static var performingChain: PerformingContext? {
        Thread.current.threadDictionary[currentKey] as? PerformingContext
    }

    /// Whether the caller runs on the private queue (directly, or in a `sync` onto it).
    var isRunningOnPrivateQueue: Bool {
        DispatchQueue.getSpecific(key: queueKey) == ObjectIdentifier(self)
    }

    private func withCurrent<T>(_ block: () throws -> T) rethrows -> T {
        let dictionary = Thread.current.threadDictionary
        let previous = dictionary[Self.currentKey]
        dictionary[Self.currentKey] = PerformingContext(context: self, outer: previous as? PerformingContext)
        defer { dictionary[Self.currentKey] = previous }
        return try block()
    }

    // MARK: Registered objects

    /// Every object the context knows.
    public var registeredObjects: Set<NSManagedObject> {
        checkQueue("registeredObjects")
        return Set(registry.values)
    }
    /// Objects inserted since the last save.
    public var insertedObjects: Set<NSManagedObject> {
        checkQueue("insertedObjects")
        return Set(sparselyFrom: inserted)
    }
    /// Objects changed since the last save (not counting inserted ones).
    public var updatedObjects: Set<NSManagedObject> {
        checkQueue("updatedObjects")
        return Set(sparselyFrom: updated)
    }
    /// Objects deleted since the last save.
    public var deletedObjects: Set<NSManagedObject> {
        checkQueue("deletedObjects")
        return Set(sparselyFrom: deleted)
    }
    /// Whether anything was inserted, updated or deleted since the last save.
    public var hasChanges: Bool {
        checkQueue("hasChanges")
        return !inserted.isEmpty || !updated.isEmpty || !deleted.isEmpty
    }

    /// The registered object with an ID, or nil.
    public func registeredObject(for objectID: NSManagedObjectID) -> NSManagedObject? {
        checkQueue("registeredObject(for:)")
        return registry[objectID.key]
    }

    /// The object with an ID: the registered one, or a new fault for it (not checked against the store).
    public func object(with objectID: NSManagedObjectID) -> NSManagedObject {
        checkQueue("object(with:)")
        if let object = registry[objectID.key] { return object }
        let object = NSManagedObject.makeFetched(entity: objectID.entity, objectID: objectID, context: self)
        object.faultFlag = true
        registry[objectID.key] = object
        return object
    }

    /// The object with an ID, loaded; throws when it does not exist in the store.
    public func existingObject(with objectID: NSManagedObjectID) throws -> NSManagedObject {
        checkQueue("existingObject(with:)")
        if let object = registry[objectID.key], !object.faultFlag || object.committedValues != nil { return object }
        if objectID.isTemporaryID {
            throw CoreDataError.make(.coreData, "No object with the temporary ID \(objectID) is registered in this context.", userInfo: ["objectID": objectID])
        }
        guard let row = try asRequester({ try requireParent().loadRow(objectID) }) else {
            throw CoreDataError.make(.coreData, "The object \(objectID) does not exist in the store.", userInfo: ["objectID": objectID])
        }
        let object = registry[objectID.key] ?? NSManagedObject.makeFetched(entity: objectID.entity, objectID: objectID, context: self)
        registry[objectID.key] = object
        object.takeStoredRow(row)
        object.faultFlag = true
        object.fireFaultIfNeeded()
        return object
    }

    /// Makes room in the registry for the objects of fetched rows (in the store's order).
    func reserveRegistryCapacity(for rows: FetchedRows) {
        guard let first = rows.first, let last = rows.last else { return }
        registry.reserveCapacity(forPermanentKeysFrom: first.key, to: last.key, count: rows.count)
    }

    /// Registers an object fetched from the parent (reading its row in place when it sits in a
    /// batch), or updates a registered one that has no changes. `row` is lent by
    /// `FetchedRows.consume`: a row in a batch is read field by field, never copied (a copy would
    /// retain and release its references for every object made).
    func registerFetched(_ row: UnsafePointer<FetchedRow>, asFault: Bool, refresh: Bool) -> NSManagedObject {
        guard let batch = row.pointee.batchReference else {
            let fetched = row.pointee
            let key = fetched.key
            if let existing = registry[key] { return updateFetched(existing, row: fetched.row, asFault: asFault, refresh: refresh) }
            return registerNewFetched(NSManagedObject.makeFetched(fetched, context: self), key: key, row: fetched.row, asFault: asFault)
        }
        let entity = row.pointee.entityReference
        let primaryKey = row.pointee.primaryKey, storeNumber = row.pointee.storeNumber
        let key = FetchedRow.key(primaryKey: primaryKey, of: entity, storeNumber: storeNumber)
        let (object, registered) = registry.object(forPermanentKey: key) {
            entity._withUnsafeGuaranteedRef { NSManagedObject.makeFetched($0, primaryKey: primaryKey, storeNumber: storeNumber, context: self) }
        }
        guard registered else { return updateFetched(object, row: row.pointee.row, asFault: asFault, refresh: refresh) }
        batch._withUnsafeGuaranteedRef { object.useRow(Int(row.pointee.batchRow), of: $0, version: row.pointee.version) }
        object.faultFlag = true
        if !asFault { object.fireFaultIfNeeded() }
        return object
    }

    /// Registers an object fetched from the parent, or updates a registered one that has no changes.
    func registerFetched(_ objectID: NSManagedObjectID, row: StoredRow?, asFault: Bool, refresh: Bool) -> NSManagedObject {
        if let existing = registry[objectID.key] { return updateFetched(existing, row: row, asFault: asFault, refresh: refresh) }
        return registerNewFetched(NSManagedObject.makeFetched(entity: objectID.entity, objectID: objectID, context: self), key: objectID.key, row: row, asFault: asFault)
    }

    /// A registered object fetched again: takes the row when it has no changes and no values yet
    /// (or the request refreshes them).
    private func updateFetched(_ existing: NSManagedObject, row: StoredRow?, asFault: Bool, refresh: Bool) -> NSManagedObject {
        if let row, !existing.hasChanges, existing.committedValues == nil || refresh {
            existing.takeStoredRow(row)
        }
        if !asFault { existing.fireFaultIfNeeded() }
        return existing
    }

    /// Registers a new object for a fetched row.
    private func registerNewFetched(_ object: NSManagedObject, key: ObjectKey, row: StoredRow?, asFault: Bool) -> NSManagedObject {
        if let row {
            object.takeStoredRow(row)
        }
        object.faultFlag = true
        registry[key] = object
        if !asFault { object.fireFaultIfNeeded() }
        return object
    }

    // MARK: Insert, delete, change tracking

    /// Inserts a new object (one created with `init(entity:insertInto: nil)`).
    public func insert(_ object: NSManagedObject) {
        checkQueue("insert(_:)")
        insertObject(object, adopted: false)
    }

    /// A new temporary ID, numbered by the registry (see `ObjectRegistry`; no lock per object).
    private func makeTemporaryID(for entity: NSEntityDescription) -> NSManagedObjectID {
        NSManagedObjectID(temporaryFor: entity, number: registry.nextTemporaryNumber())
    }

    /// Registers an object a child context inserted: no default values, no `awakeFromInsert`.
    func insertAdopted(_ object: NSManagedObject) {
        insertObject(object, adopted: true)
    }

    private func insertObject(_ object: NSManagedObject, adopted: Bool) {
        if object.lives(in: self), object.insertedFlag { return }
        coreDataPrecondition(object.managedObjectContext == nil || object.lives(in: self),
                             "An NSManagedObject may only be in (or observed by) a single NSManagedObjectContext.")
        snapshotForUndo(object)
        if object.deletedFlag {
            // Re-inserting a deleted object undoes the delete.
            recordEventBaseline(of: object)
            object.deletedFlag = false
            deleted.remove(object)
            pendingDeleted.remove(object)
            return
        }
        object.managedObjectContext = self
        object.insertedFlag = true
        if object.values.count != object.entity.slotKeys.count {
            object.allocateStorage()
            if !adopted { object.applyDefaultValues() }
        }
        for relationship in object.entity.frozenRelationships where relationship.isToMany && !(object.values[relationship.slot] is RelationshipSet) {
            object.values[relationship.slot] = RelationshipSet(committedIDs: [])
        }
        if !object.hasIdentity { object.storedObjectID = makeTemporaryID(for: object.entity) }
        registry[object.objectKey] = object
        inserted.append(object)
        pendingInserted.append(object)
        object.eventBaselineFlag = true  // The event's baseline: the entity's default values.
        if !adopted { object.awakeFromInsert() }
    }

    /// Marks an object for deletion at the next save. Delete rules apply at once: Cascade deletes
    /// the destinations, Nullify removes the object from their inverses; Deny is checked at save.
    public func delete(_ object: NSManagedObject) {
        checkQueue("delete(_:)")
        guard object.lives(in: self), !object.deletedFlag else { return }
        object.fireFaultIfNeeded()
        snapshotBeforeChange(object)
        object.prepareForDeletion()
        if object.insertedFlag {
            // Deleting an unsaved object simply forgets it. Observers told of its insertion by an
            // earlier `processPendingChanges()` (a fetched results controller showing it) are told
            // it is deleted; one inserted in this event was never announced and goes unmentioned.
            object.insertedFlag = false
            inserted.remove(object)
            if pendingInserted.contains(object) {
                pendingInserted.remove(object)
            } else {
                pendingDeleted.append(object)
            }
            object.eventBaselineFlag = false
            object.deletedFlag = true
            applyDeleteRules(to: object)
            registry[object.objectKey] = nil
            return
        }
        object.deletedFlag = true
        updated.remove(object)
        object.updatedFlag = false
        deleted.append(object)
        pendingDeleted.append(object)
        applyDeleteRules(to: object)
    }

    /// Whether to turn a fault whose row is gone from the store into a deleted object with empty
    /// values (see `shouldDeleteInaccessibleFaults`) rather than trap. Override it to decide per
    /// object; this one answers `shouldDeleteInaccessibleFaults`. `property` is the property whose
    /// read fired the fault, when known (nil here).
    open func shouldHandleInaccessibleFault(_ fault: NSManagedObject, for oid: NSManagedObjectID, triggeredByProperty property: NSPropertyDescription?) -> Bool {
        shouldDeleteInaccessibleFaults
    }

    /// Turns a fault whose row is gone into a deleted object: its attributes nil (or 0 through a
    /// scalar accessor), its relationships empty, in `deletedObjects`, exempt from validation, and
    /// discarded (not written) by the next save, or by `reset()`.
    func deleteInaccessibleFault(_ object: NSManagedObject) {
        object.allocateStorage()
        object.inaccessibleFlag = true
        guard !object.deletedFlag else { return }
        object.deletedFlag = true
        deleted.append(object)
    }

    /// Applies Nullify and Cascade rules of a deleted object; Deny is checked at save.
    private func applyDeleteRules(to object: NSManagedObject) {
        for relationship in object.entity.frozenRelationships {
            let destinations: [NSManagedObject] = relationship.isToMany
                ? Array(object.relationshipSet(for: relationship).members)
                : object.toOneDestination(relationship).map { [$0] } ?? []
            switch relationship.deleteRule {
            case .cascadeDeleteRule:
                for destination in destinations where !destination.deletedFlag { delete(destination) }
                fallthrough
            case .nullifyDeleteRule:
                guard let inverse = relationship.inverseRelationship else { continue }
                for destination in destinations {
                    if inverse.isToMany {
                        let set = destination.relationshipSet(for: inverse)
                        guard set.members.contains(object) else { continue }
                        snapshotBeforeChange(destination)
                        set.members.remove(object)
                        objectDidChange(destination)
                    } else {
                        // A destination still a fault (a to-many member not yet read) holds no
                        // values to compare until it is fired.
                        destination.fireFaultIfNeeded()
                        guard destination.toOneDestinationID(inverse) == object.objectID else { continue }
                        snapshotBeforeChange(destination)
                        destination.values[inverse.slot] = nil
                        objectDidChange(destination)
                    }
                }
            case .denyDeleteRule, .noActionDeleteRule:
                continue
            }
        }
    }

    /// Records that a registered object changed. (An inserted object is tracked as inserted; one
    /// inserted in an earlier event joins the event's updated objects when its baseline is
    /// recorded, before its change: see `recordEventBaseline(of:)`.)
    func objectDidChange(_ object: NSManagedObject) {
        guard object.lives(in: self), !object.insertedFlag, !object.deletedFlag else { return }
        if !object.updatedFlag {
            object.updatedFlag = true
            updated.append(object)
        }
        pendingUpdated.append(object)
    }

    /// Registered objects of an entity (and its subentities) that are inserted or updated.
    func changedObjects(of entity: NSEntityDescription?) -> [NSManagedObject] {
        guard let entity else { return [] }
        return (inserted.elements + updated.elements).filter { $0.entity.isKindOf(entity: entity) }
    }

    /// Posts `NSManagedObjectContextObjectsDidChange` for the changes since the last call.
    public func processPendingChanges() {
        checkQueue("processPendingChanges()")
        recordUndoForEvent()
        let (baselines, startedUnchanged) = endEventBaselines()
        defer { for object in startedUnchanged { object.eventStartedUnchangedFlag = false } }
        guard !pendingInserted.isEmpty || !pendingUpdated.isEmpty || !pendingDeleted.isEmpty || !pendingRefreshed.isEmpty else { return }
        let insertedSet = Set(sparselyFrom: pendingInserted)
        // Every inserted object is in this notification: the save's notification can reuse the
        // set unless the inserted objects change before then (see `notifiedInsertedSet`).
        notifiedInsertedSet = pendingInserted.count == inserted.count ? (inserted.version, insertedSet) : nil
        var userInfo: [AnyHashable: Any] = [
            NSInsertedObjectsKey: insertedSet,
            NSUpdatedObjectsKey: Set(sparselyFrom: pendingUpdated.filter { !$0.deletedFlag && !pendingInserted.contains($0) }),
            NSDeletedObjectsKey: Set(sparselyFrom: pendingDeleted),
        ]
        if !pendingRefreshed.isEmpty {
            userInfo[NSRefreshedObjectsKey] = Set(pendingRefreshed.values.filter { $0.lives(in: self) && !$0.deletedFlag })
        }
        pendingInserted.removeAll()
        pendingUpdated.removeAll()
        pendingDeleted.removeAll()
        pendingRefreshed.removeAll()
        let outerEvent = postedEvent
        postedEvent = PostedEvent(baselines: baselines, startedUnchanged: startedUnchanged, inserted: insertedSet)
        defer { postedEvent = outerEvent }
        postContextNotification(.NSManagedObjectContextObjectsDidChange, userInfo: userInfo)
    }

    // MARK: Loading for faults

    /// The stored row of a fault's object: nil when the store no longer has it; a store that
    /// can't be read throws its error (never reported as a deleted object).
    func loadRowForFault(_ objectID: NSManagedObjectID) throws -> StoredRow? {
        try asRequester { try parentStore?.loadRow(objectID) }
    }

    /// The destinations of a to-many fault; a store that can't be read throws its error (never
    /// reported as an empty relationship).
    func loadToManyIDs(of objectID: NSManagedObjectID, relationship: NSRelationshipDescription) throws -> [NSManagedObjectID] {
        try asRequester { try parentStore?.loadToManyIDs(objectID, relationship: relationship) ?? [] }
    }

    // MARK: Rollback, reset, refresh

    /// Discards all unsaved changes: inserted objects are forgotten, others return to their committed
    /// values, and the undo manager's actions are removed.
    ///
    /// Observers hear of it at once (`NSManagedObjectContextObjectsDidChange`): inserted objects
    /// they were told of as deleted, the objects whose changes were discarded as refreshed, so a
    /// fetched results controller shows the committed state again.
    public func rollback() {
        checkQueue("rollback()")
        discardUndoHistory()
        // Announced and then deleted (forgotten) or still inserted: observers saw them inserted.
        let announcedInserted = inserted.elements.filter { !pendingInserted.contains($0) }
            + pendingDeleted.elements.filter { !deleted.contains($0) }
        for object in inserted {
            registry[object.objectKey] = nil
            object.insertedFlag = false
            object.managedObjectContext = nil
        }
        let restored = updated.elements + deleted.elements
        for object in restored {
            object.updatedFlag = false
            object.deletedFlag = false
            restoreCommitted(object)
        }
        // Relationship sets may refer to rolled-back objects: reload them lazily.
        for object in registry.values where !object.faultFlag {
            for relationship in object.entity.frozenRelationships where relationship.isToMany {
                if let set = object.values[relationship.slot] as? RelationshipSet, set.committedIDs != set.members.map(\.objectID) {
                    object.values[relationship.slot] = nil
                }
            }
        }
        let refreshed = Set(restored).union(pendingRefreshed.values.filter { $0.lives(in: self) })
        clearChangeTracking()
        for object in restored where !object.faultFlag { object.awake(fromSnapshotEvents: .rollback) }
        guard !announcedInserted.isEmpty || !refreshed.isEmpty else { return }
        postContextNotification(.NSManagedObjectContextObjectsDidChange, userInfo: [
            NSInsertedObjectsKey: Set<NSManagedObject>(),
            NSUpdatedObjectsKey: Set<NSManagedObject>(),
            NSDeletedObjectsKey: Set(announcedInserted),
            NSRefreshedObjectsKey: refreshed,
        ])
    }

    private func restoreCommitted(_ object: NSManagedObject) {
        if let committed = object.committedValues {
            object.values = committed
        } else {
            object.turnIntoFault()
        }
    }

    /// Forgets every registered object; they must not be used afterwards. The undo manager's actions,
    /// which refer to them, are removed.
    public func reset() {
        checkQueue("reset()")
        discardUndoHistory()
        fetchedPropertyResults.removeAll()
        for object in registry.removeAllValuesInAddressOrder() {
            object.managedObjectContext = nil
            object.values = SlotValues()
        }
        clearChangeTracking()
        advanceQueryGeneration()
        persistentStoreCoordinatorRoot?.contextDidForgetObjects(self)
        postContextNotification(.NSManagedObjectContextObjectsDidChange, userInfo: [NSInvalidatedAllObjectsKey: true])
    }

    /// Refreshes an object from the store: with `mergeChanges` false it becomes a fault and loses its
    /// changes; with true its unsaved changes are reapplied over the store's latest values.
    ///
    /// An object whose values this can change (unsaved changes discarded, or the store's values
    /// merged) is listed as refreshed in the next `NSManagedObjectContextObjectsDidChange`, so
    /// observers showing it judge it again. An unchanged object turned into a fault isn't: its
    /// values are the store's either way, and observers reading it would only fire it again.
    public func refresh(_ object: NSManagedObject, mergeChanges flag: Bool) {
        checkQueue("refresh(_:mergeChanges:)")
        guard object.lives(in: self), !object.insertedFlag else { return }
        if !object.faultFlag && (flag || object.hasChanges) { pendingRefreshed[ObjectIdentifier(object)] = object }
        refreshValues(of: object, mergeChanges: flag)
    }

    /// `refresh(_:mergeChanges:)` without announcing it (for callers that post their own notification).
    func refreshValues(of object: NSManagedObject, mergeChanges flag: Bool) {
        if flag {
            // Fetched properties are evaluated again when next read (`turnIntoFault` forgets them
            // on the other path).
            fetchedPropertyResults.forget(object)
            // Attributes and to-one relationships keep their local values; a to-many relationship
            // keeps its local additions and removals over the store's latest members, so members
            // another context added or removed stay as it saved them.
            let toManyChanges = object.hasChanges ? object.unsavedToManyChanges() : []
            var changes = object.hasChanges ? object.changedValues() : [:]
            for change in toManyChanges { changes[change.relationship.name] = nil }
            let row: StoredRow?
            do {
                row = try loadRowForFault(object.objectID)
            } catch {
                // The store can't be read now: the object keeps the values and changes it has
                // (nothing is lost), and the error is logged, as this method can't throw.
                CoreDataLog.logger.error("Could not refresh \(object.objectID) from the store: \(error)")
                return
            }
            if let row {
                object.takeStoredRow(row)
                withoutUndoRecording {
                    for (key, value) in changes { object.setPrimitiveValue(value is NSNull ? nil : value, forKey: key) }
                    object.reapplyToManyChanges(toManyChanges)
                }
                object.awake(fromSnapshotEvents: .refresh)
            }
        } else {
            if object.hasChanges { withoutUndoRecording { object.restoreCommittedInverses() } }
            if object.updatedFlag { updated.remove(object); object.updatedFlag = false }
            // A discarded delete not yet announced isn't announced; one announced is followed by
            // the refresh's announcement.
            if object.deletedFlag { deleted.remove(object); pendingDeleted.remove(object); object.deletedFlag = false }
            object.turnIntoFault()
        }
    }

    /// Refreshes every registered object (keeping unsaved changes).
    public func refreshAllObjects() {
        checkQueue("refreshAllObjects()")
        for object in registry.values where !object.insertedFlag {
            refresh(object, mergeChanges: object.hasChanges)
        }
    }

    // MARK: Merging

    /// Brings the changes a `NSManagedObjectContextDidSave` notification describes into this context.
    public func mergeChanges(fromContextDidSave notification: Notification) {
        checkQueue("mergeChanges(fromContextDidSave:)")
        let info = notification.userInfo ?? [:]
        func ids(_ key: String) -> [NSManagedObjectID] {
            ((info[key] as? Set<NSManagedObject>) ?? []).map(\.objectID) + ((info[key + "_objectIDs"] as? Set<NSManagedObjectID>) ?? [])
        }
        mergeSaved(SavedObjectIDs(inserted: ids(NSInsertedObjectsKey), updated: ids(NSUpdatedObjectsKey), deleted: ids(NSDeletedObjectsKey)))
    }

    /// Brings changes saved elsewhere (another context, a batch request, another process) into contexts.
    ///
    /// `changeNotificationData` holds arrays or sets of object IDs (or URIs) under `NSInsertedObjectsKey`,
    /// `NSUpdatedObjectsKey`, `NSDeletedObjectsKey` (or their `_objectIDs` forms).
    public class func mergeChanges(fromRemoteContextSave changeNotificationData: [AnyHashable: Any], into contexts: [NSManagedObjectContext]) {
        for context in contexts {
            context.performAndWait {
                func ids(_ key: String) -> [NSManagedObjectID] {
                    let raw = (changeNotificationData[key] ?? changeNotificationData[key + "_objectIDs"])
                    let items: [Any] = (raw as? [Any]) ?? (raw as? Set<NSManagedObjectID>).map { Array($0) } ?? []
                    return items.compactMap { item in
                        if let id = item as? NSManagedObjectID { return id }
                        if let url = item as? URL { return context.persistentStoreCoordinator?.managedObjectID(forURIRepresentation: url) }
                        return nil
                    }
                }
                context.mergeSaved(SavedObjectIDs(inserted: ids(NSInsertedObjectsKey), updated: ids(NSUpdatedObjectsKey), deleted: ids(NSDeletedObjectsKey)))
            }
        }
    }

    /// Applies another context's saved changes to the registered objects and notifies observers.
    func mergeSaved(_ ids: SavedObjectIDs) {
        // The changes made here since the last event are announced first, in their own
        // notification: observers (a fetched results controller) then meet the merged changes with
        // the graph as they were told it is (an unsaved insert deleted here is no longer theirs).
        processPendingChanges()
        advanceQueryGeneration()
        var refreshed: Set<NSManagedObject> = []
        var removed: Set<NSManagedObject> = []
        var insertedHere: Set<NSManagedObject> = []
        // Changes gathered from several saves (batch requests' results, history transactions) can
        // list an object as inserted or updated and also deleted: it is gone, and only its deletion
        // counts (an insert registered after it would announce a row that no longer exists).
        let deletedKeys = ids.deleted.isEmpty ? [] : Set(ids.deleted.lazy.map(\.key))
        for id in ids.updated where !deletedKeys.contains(id.key) {
            guard let object = registry[id.key] else { continue }
            refreshValues(of: object, mergeChanges: object.hasChanges)
            if !object.hasChanges {
                do {
                    if let row = try loadRowForFault(id) {
                        object.takeStoredRow(row)
                        object.faultFlag = false
                    }
                } catch {
                    // Left a fault: the next read of it fires the fault, which reports the error.
                    CoreDataLog.logger.error("Could not read the saved values of \(id): \(error)")
                    object.turnIntoFault()
                }
            }
            refreshed.insert(object)
        }
        for id in ids.deleted {
            guard let object = registry.removeValue(forKey: id.key) else { continue }
            inserted.remove(object)
            updated.remove(object)
            deleted.remove(object)
            object.deletedFlag = true
            object.deletedElsewhereFlag = true
            removed.insert(object)
        }
        for id in ids.inserted where !deletedKeys.contains(id.key) {
            insertedHere.insert(object(with: id))
        }
        // Relationship contents may have changed: reload them lazily. Objects with unsaved
        // changes keep their loaded sets, which lose the members deleted elsewhere (as the
        // store's delete rules took them out of the saved ones).
        for object in registry.values where !object.faultFlag {
            if object.hasChanges {
                if !deletedKeys.isEmpty { object.dropMembers(deletedKeys) }
                continue
            }
            for relationship in object.entity.frozenRelationships where relationship.isToMany {
                object.values[relationship.slot] = nil
            }
        }
        let userInfo: [AnyHashable: Any] = [
            NSInsertedObjectsKey: insertedHere,
            NSUpdatedObjectsKey: Set<NSManagedObject>(),
            NSRefreshedObjectsKey: refreshed,
            NSDeletedObjectsKey: removed,
        ]
        postContextNotification(.NSManagedObjectContextObjectsDidChange, userInfo: userInfo)
        postContextNotification(Self.didMergeChangesObjectIDsNotification, userInfo: [
            NSInsertedObjectIDsKey: Set(ids.inserted), NSUpdatedObjectIDsKey: Set(ids.updated), NSDeletedObjectIDsKey: Set(ids.deleted),
        ])
    }

    /// Called on a parent when a child saved into it.
    func childDidSave(_ ids: SavedObjectIDs, from child: NSManagedObjectContext) {
        for weak in children {
            guard let sibling = weak.context, sibling !== child, sibling.automaticallyMergesChangesFromParent else { continue }
            sibling.perform { sibling.mergeSaved(ids) }
        }
    }

    /// Called by the coordinator when another root context saved, or by a parent for children.
    func parentDidSave(_ ids: SavedObjectIDs) {
        perform { self.mergeSaved(ids) }
        for weak in children {
            guard let child = weak.context, child.automaticallyMergesChangesFromParent else { continue }
            child.parentDidSave(ids)
        }
    }

    /// Notifies children that merge automatically after this context saved to the store.
    func notifyChildrenOfSave(_ ids: SavedObjectIDs) {
        for weak in children {
            guard let child = weak.context, child.automaticallyMergesChangesFromParent else { continue }
            child.parentDidSave(ids)
        }
    }

    // MARK: Conflicts

    /// Makes the next save check an object it doesn't change: if the object changed or vanished
    /// in the store since it was read, the save meets a conflict, which the merge policy resolves
    /// or reports (133020 with the error policy), as for the objects it changes or deletes.
    /// Optimistic locking for objects the save depends on without changing them. The mark lasts
    /// until the next save succeeds, a rollback or a reset; objects not yet saved have nothing to
    /// check.
    public func detectConflicts(for object: NSManagedObject) {
        checkQueue("detectConflicts(for:)")
        coreDataPrecondition(object.lives(in: self), "detectConflicts(for:): \(object.objectID) is not in this context.")
        guard !object.objectID.isTemporaryID else { return }
        objectsToCheckForConflicts[ObjectIdentifier(object)] = object
    }

    // MARK: IDs

    /// Chooses the store a newly inserted object is saved in, when several of the coordinator's
    /// stores hold its entity (without a choice it goes to the first store that does). The choice
    /// goes with the object through parent contexts, and `obtainPermanentIDs(for:)` honours it.
    ///
    /// Traps, as Apple's framework raises, for an object that isn't a managed object inserted in
    /// this context and not yet saved, and for a store of another coordinator or one whose
    /// configuration doesn't include the object's entity.
    public func assign(_ object: Any, to store: NSPersistentStore) {
        checkQueue("assign(_:to:)")
        guard let object = object as? NSManagedObject else {
            coreDataMisuse("assign(_:to:) takes a managed object; got \(type(of: object)).")
        }
        coreDataPrecondition(object.lives(in: self) && object.insertedFlag,
                             "assign(_:to:): \(object.objectID) is not an object inserted in this context.")
        coreDataPrecondition(object.objectID.isTemporaryID,
                             "assign(_:to:): \(object.objectID) already has its store (obtainPermanentIDs); an object can't move to another.")
        coreDataPrecondition(persistentStoreCoordinator?.persistentStores.contains { $0 === store } == true,
                             "assign(_:to:): the store is not one of this context's coordinator's stores.")
        coreDataPrecondition(store.holds(object.entity),
                             "assign(_:to:): the store's configuration \(store.configurationName) doesn't include the entity \(object.entity.name ?? "?").")
        object.objectID.assignedStoreNumber = PersistentStoreRegistry.number(for: store.identifier)
    }

    /// Gives inserted objects permanent IDs now, before they are saved.
    public func obtainPermanentIDs(for objects: [NSManagedObject]) throws {
        checkQueue("obtainPermanentIDs(for:)")
        guard let coordinator = persistentStoreCoordinator else { return }
        let mapping = try asRequester { try coordinator.obtainPermanentIDs(for: objects.filter { $0.objectID.isTemporaryID }.map(\.objectID)) }
        for object in objects { takePermanentID(of: object, from: mapping) }
    }

    /// Gives an inserted object the permanent ID `mapping` holds for it, if any, and registers
    /// it under that ID instead of its temporary one.
    @inline(__always)
    func takePermanentID(of object: NSManagedObject, from mapping: PermanentIDs) {
        let temporary = object.objectKey
        guard let permanent = mapping[temporary] else { return }
        registry.removeValue(forKey: temporary)
        object.takePermanentKey(permanent, storeIdentifier: mapping.storeIdentifier(of: permanent))
        registry[permanent] = object
    }

    open override var description: String {
        "<NSManagedObjectContext \(name ?? "")>"
    }
}

/// The IDs of the objects one save inserted, updated and deleted.
struct SavedObjectIDs: Sendable {
    var inserted: [NSManagedObjectID]
    var updated: [NSManagedObjectID]
    var deleted: [NSManagedObjectID]
}

/// A weak reference to a context: its `link`, the one its objects, its parent's list of children
/// and its coordinator's list of contexts hold.
final class WeakContext {
    weak var context: NSManagedObjectContext?
}

/// Carries a result out of a queue block.
final class UncheckedResultBox<T, E: Error>: @unchecked Sendable {
    var result: Result<T, E>?
}
