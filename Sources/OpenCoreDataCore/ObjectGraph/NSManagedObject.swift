import Foundation
import OrderedCollections

/// An object of the object graph: an instance of an entity, living in one context.
///
/// Values live in slots, one per property of the entity (see `NSEntityDescription`):
/// - attributes hold their canonical Swift value (see `AttributeValueCoding`);
/// - to-one relationships hold the destination object, or its `NSManagedObjectID` until first read;
/// - to-many relationships hold a `RelationshipSet` once loaded, nil before.
/// `committedValues` is the last state read from or written to the parent store; an inserted object
/// has none. Reading a property of a fault loads its values first.
open class NSManagedObject: NSObject, NSFetchRequestResult, KeyValueCodingReadable {
    /// The object's entity.
    public let entity: NSEntityDescription
    /// The object's identity; temporary until the object is saved.
    public internal(set) var objectID: NSManagedObjectID {
        get {
            if let id = storedObjectID { return id }
            return makeObjectID()
        }
        set { storedObjectID = newValue }
    }
    /// The ID, made on first use: for an object fetched with its values from its `fetchedKey`; for
    /// a new object a temporary one (a context gives an inserted object one from its block of
    /// temporary numbers).
    @exclusivity(unchecked) var storedObjectID: NSManagedObjectID?
    /// For an object fetched with its values whose ID has not been made yet: the row's primary key
    /// and (`fetchedStoreNumber`) its store's number (`PersistentStoreRegistry`); 0 otherwise. An
    /// object fetched from a million rows and never asked for its ID costs no ID object.
    @exclusivity(unchecked) private var fetchedPrimaryKey: Int64 = 0
    /// The largest store number an object keeps beside its primary key; a row of a store numbered
    /// higher gets its ID when fetched.
    static var largestKeptStoreNumber: Int32 { Int32(UInt16.max) }

    /// The identity as a key, without making an ID (what registries and change lists key by).
    var objectKey: ObjectKey {
        if let id = storedObjectID { return id.key }
        if fetchedPrimaryKey > 0 { return ObjectKey(primaryKey: fetchedPrimaryKey, of: entity, store: Int(fetchedStoreNumber)) }
        return objectID.key
    }

    /// Whether the object has an identity of its own: an ID, or the row it was fetched from.
    var hasIdentity: Bool { storedObjectID != nil || fetchedPrimaryKey > 0 }

    /// Serializes making IDs on first use: `objectID` may be read from any thread.
    private static let idMaking = LockedValue<Void>(())

    /// Makes the ID on first use (see `storedObjectID`).
    @inline(never)
    private func makeObjectID() -> NSManagedObjectID {
        Self.idMaking.withLock { _ in
            if let id = storedObjectID { return id }
            let id = fetchedPrimaryKey > 0
                ? ObjectIDFactory(storeNumber: Int(fetchedStoreNumber)).objectID(for: entity, primaryKey: fetchedPrimaryKey)
                : NSManagedObjectID(temporaryFor: entity)
            storedObjectID = id
            return id
        }
    }
    /// The context the object lives in; nil once it has been removed from it, or freed.
    public internal(set) var managedObjectContext: NSManagedObjectContext? {
        get { contextLink?.context }
        set { contextLink = newValue?.link }
    }
    /// The context's `link` (a weak reference to it, shared by all its objects): an object holds
    /// it strongly, which costs a plain retain where a `weak` reference of its own would make the
    /// runtime find the context's side table and count a weak reference in it, for every object.
    @exclusivity(unchecked) private var contextLink: WeakContext?

    /// Whether the object lives in `context`: `managedObjectContext === context`, without loading
    /// the weak reference.
    @inline(__always)
    final func lives(in context: NSManagedObjectContext) -> Bool { contextLink === context.link }

    /// The current values by slot (empty while a fault without data).
    var values: SlotValues {
        get { useOwnValues(); return storedValues }
        _modify { useOwnValues(); yield &storedValues }
    }
    /// The values last read from or written to the store, by slot.
    var committedValues: SlotValues? {
        get { useOwnValues(); return storedCommittedValues }
        _modify { useOwnValues(); yield &storedCommittedValues }
    }
    // The stored properties below are declared in an order that leaves no padding: an object of a
    // large fetch is one of many, and at 120 bytes it takes a 128-byte block of the allocator (at
    // 121 it would take 144). `objectsTakeTheSmallestBlock` guards the size.

    /// What `values` and `committedValues` hold once the object has values of its own.
    @exclusivity(unchecked) private var storedValues: SlotValues
    @exclusivity(unchecked) private var storedCommittedValues: SlotValues?
    /// For an object fetched from the SQLite store with its values: the batch holding its row,
    /// which stands for both `values` and `committedValues` until either is used (see
    /// `SlotRowBatch`); nil once the object has values of its own.
    @exclusivity(unchecked) private(set) var rowBatch: SlotRowBatch?
    /// `faultBatch`, or for a key-path probe (`isKeyPathProbe`) its `keyPathRecorder`: an object is
    /// never both.
    @exclusivity(unchecked) private var batchOrRecorder: AnyObject?
    /// The store's optimistic-locking version (`Z_OPT`) when the values were read.
    @exclusivity(unchecked) var storeVersion: Int64 = 0
    /// `faultFlag`, `insertedFlag`, `updatedFlag`, `deletedFlag`, `isKeyPathProbe`,
    /// `inaccessibleFlag`, `eventBaselineFlag`, `eventStartedUnchangedFlag` and
    /// `deletedElsewhereFlag`, a bit each (16 bits take the byte `fetchedStoreNumber`'s alignment
    /// would leave unused).
    @exclusivity(unchecked) private var flags: UInt16 = 0
    /// See `fetchedPrimaryKey` (at most `largestKeptStoreNumber`).
    @exclusivity(unchecked) private var fetchedStoreNumber: UInt16 = 0
    /// The object's row in `rowBatch` while it has one; else, for an object fetched with a batch
    /// size, its position in the fetch (see `faultBatch`). An object with a row batch has values
    /// and so never reads its fault batch.
    @exclusivity(unchecked) private var batchIndex: Int32 = 0
    /// Where the object sits in its context's change lists (see `ManagedObjectList`).
    @exclusivity(unchecked) var listPositions = ManagedObjectList.Positions()

    /// The bits of `flags`.
    private enum Flag: UInt16 {
        case fault = 1, inserted = 2, updated = 4, deleted = 8, keyPathProbe = 16, inaccessible = 32, eventBaseline = 64, eventStartedUnchanged = 128
        case deletedElsewhere = 256
    }
    @inline(__always) private func flag(_ flag: Flag) -> Bool { flags & flag.rawValue != 0 }
    @inline(__always) private func setFlag(_ flag: Flag, _ on: Bool) {
        flags = on ? flags | flag.rawValue : flags & ~flag.rawValue
    }

    /// Whether the values have not been materialized for the user yet.
    var faultFlag: Bool {
        get { flag(.fault) }
        set { setFlag(.fault, newValue) }
    }
    /// Set by the context: the object is inserted, updated or deleted and not yet saved.
    var insertedFlag: Bool {
        get { flag(.inserted) }
        set { setFlag(.inserted, newValue) }
    }
    var updatedFlag: Bool {
        get { flag(.updated) }
        set { setFlag(.updated, newValue) }
    }
    var deletedFlag: Bool {
        get { flag(.deleted) }
        set { setFlag(.deleted, newValue) }
    }
    /// Set when firing the object's fault found no row in the store and the context turned it into
    /// a deleted object (`shouldDeleteInaccessibleFaults`): the save discards it, unvalidated.
    var inaccessibleFlag: Bool {
        get { flag(.inaccessible) }
        set { setFlag(.inaccessible, newValue) }
    }
    /// Set while the context knows the object's values at the start of the current event (see
    /// `NSManagedObjectContext.EventBaseline`): a change then has nothing more to record for
    /// `changedValuesForCurrentEvent()`.
    var eventBaselineFlag: Bool {
        @inline(__always) get { flag(.eventBaseline) }
        set { setFlag(.eventBaseline, newValue) }
    }
    /// Set when the object had no unsaved changes at the start of the event it first changed in,
    /// so that its committed values are its baseline (kept while that event is posted).
    var eventStartedUnchangedFlag: Bool {
        get { flag(.eventStartedUnchanged) }
        set { setFlag(.eventStartedUnchanged, newValue) }
    }
    /// Set when a merge brought another context's deletion of the object: it is gone for good, and
    /// undoing changes made to it before then leaves it gone.
    var deletedElsewhereFlag: Bool {
        get { flag(.deletedElsewhere) }
        set { setFlag(.deletedElsewhere, newValue) }
    }
    /// Whether the object is one of the probes `KeyPathNames` uses to learn which keys a Swift key
    /// path reads.
    var isKeyPathProbe: Bool { flag(.keyPathProbe) }

    /// For an object fetched with a batch size: its position in the fetch (see `faultBatch`).
    var faultBatchIndex: Int32 {
        get { batchIndex }
        set { batchIndex = newValue }
    }
    /// For an object fetched with a batch size: its batch, so firing loads the whole batch.
    var faultBatch: FaultBatch? {
        get { isKeyPathProbe ? nil : batchOrRecorder.map { unsafeDowncast($0, to: FaultBatch.self) } }
        set {
            coreDataPrecondition(!isKeyPathProbe, "A key-path probe has no fault batch.")
            batchOrRecorder = newValue
        }
    }
    /// Set on the probe objects `KeyPathNames` uses to learn which keys a Swift key path reads.
    var keyPathRecorder: KeyPathRecorder? {
        get { isKeyPathProbe ? batchOrRecorder.map { unsafeDowncast($0, to: KeyPathRecorder.self) } : nil }
        set {
            setFlag(.keyPathProbe, newValue != nil)
            batchOrRecorder = newValue
        }
    }

    /// Creates an object of an entity and inserts it into a context (nil: not inserted).
    public required init(entity: NSEntityDescription, insertInto context: NSManagedObjectContext?) {
        if !entity.isFrozenForUse { entity.managedObjectModel?.freeze() }
        // The object takes the caller's reference (no retain of its own); the rest reads `self.entity`.
        self.entity = consume entity
        // Storage is allocated on first use: a fetched object receives its row instead.
        self.storedValues = SlotValues()
        super.init()
        if let context {
            coreDataPrecondition(!self.entity.isAbstract, "Cannot create an object of the abstract entity \(self.entity.name ?? "?"): insert one of its subentities.")
            applyDefaultValues()
            context.insert(self)
        }
    }

    /// Creates an object of the class's entity in a context, as `Team(context:)` in Core Data.
    public convenience init(context: NSManagedObjectContext) {
        guard let entity = Self.entity(in: context) else {
            coreDataMisuse("No entity in the context's model is represented by class \(Self.self); set the entity's representedClassName or use init(entity:insertInto:).")
        }
        self.init(entity: entity, insertInto: context)
    }

    /// Creates a registered object for a row that is already in the store.
    static func makeFetched(entity: NSEntityDescription, objectID: NSManagedObjectID, context: NSManagedObjectContext) -> NSManagedObject {
        let type = entity.instantiableClass
        let object = type.init(entity: entity, insertInto: nil)
        object.objectID = objectID
        object.managedObjectContext = context
        return object
    }

    /// Creates a registered object for a fetched row: with its ID when the store made one (or the
    /// row's store is numbered above `storeNumberLimit`), else with the row's key, the ID made on
    /// first use.
    static func makeFetched(_ row: FetchedRow, context: NSManagedObjectContext,
                            storeNumberLimit: Int32 = largestKeptStoreNumber) -> NSManagedObject {
        if let id = row.madeID { return makeFetched(entity: row.entity, objectID: id, context: context) }
        return makeFetched(row.entity, primaryKey: row.primaryKey, storeNumber: row.storeNumber, context: context, storeNumberLimit: storeNumberLimit)
    }

    /// Creates a registered object for a row read with its values, its ID made on first use (or
    /// now, when its store is numbered above `storeNumberLimit`).
    static func makeFetched(_ entity: NSEntityDescription, primaryKey: Int64, storeNumber: Int32, context: NSManagedObjectContext,
                            storeNumberLimit: Int32 = largestKeptStoreNumber) -> NSManagedObject {
        guard storeNumber <= storeNumberLimit else {
            let id = ObjectIDFactory(storeNumber: Int(storeNumber)).objectID(for: entity, primaryKey: primaryKey)
            return makeFetched(entity: entity, objectID: id, context: context)
        }
        let object = entity.instantiableClass.init(entity: entity, insertInto: nil)
        object.fetchedPrimaryKey = primaryKey
        object.fetchedStoreNumber = UInt16(truncatingIfNeeded: storeNumber)
        object.managedObjectContext = context
        return object
    }

    func applyDefaultValues() {
        values = entity.defaultValues
        for slot in entity.toManySlots {
            values[slot] = RelationshipSet(committedIDs: [])
        }
    }

    // MARK: Entity lookup

    /// The entity this class represents in the models in use.
    open class func entity() -> NSEntityDescription {
        guard let entity = EntityClassRegistry.entity(for: self) else {
            coreDataMisuse("No loaded model has an entity whose class is \(self). Load the model (NSPersistentContainer) first.")
        }
        return entity
    }

    static func entity(in context: NSManagedObjectContext) -> NSEntityDescription? {
        // The last answer, when the class asks again in a context of the same model: for a root
        // context compared in place first (the public getter retains and releases the coordinator
        // and its model, objects with side tables), else through the getter (a child context).
        if let last = context.lastEntityByClass, last.type == ObjectIdentifier(self),
           let coordinator = context.coordinatorStorage, coordinator.managedObjectModel === last.model {
            return last.entity
        }
        guard let model = context.persistentStoreCoordinator?.managedObjectModel else { return nil }
        if let last = context.lastEntityByClass, last.type == ObjectIdentifier(self), last.model === model { return last.entity }
        let entity = EntityClassRegistry.entity(for: self, in: model)
        if let entity, model.isFrozen { context.lastEntityByClass = .init(type: ObjectIdentifier(self), model: model, entity: entity) }
        return entity
    }

    /// A fetch request for the class's entity.
    open class func fetchRequest() -> NSFetchRequest<NSFetchRequestResult> {
        EntityClassRegistry.register(self)
        return NSFetchRequest<NSFetchRequestResult>(entityName: entity().name ?? "")
    }

    // MARK: State

    /// Whether the object is a fault: its values are not loaded yet.
    public var isFault: Bool { faultFlag }
    /// Whether the object has been inserted and not yet saved.
    public var isInserted: Bool { insertedFlag }
    /// Whether the object has unsaved changes.
    public var isUpdated: Bool { updatedFlag }
    /// Whether the object will be deleted at the next save.
    public var isDeleted: Bool { deletedFlag }
    /// Whether the object was inserted, updated or deleted since the last save.
    public var hasChanges: Bool { insertedFlag || updatedFlag || deletedFlag }
    /// Whether any persistent property differs from its committed value.
    public var hasPersistentChangedValues: Bool { !changedValues().isEmpty }
    /// Core Data's faulting state: 0 when the object is fully realized.
    public var faultingState: Int { faultFlag ? 1 : 0 }

    // MARK: Faulting

    /// Loads the object's values if it is a fault, and calls `awakeFromFetch()` the first time.
    @inline(__always)
    final func fireFaultIfNeeded() {
        checkContextQueue("a property access")
        if faultFlag {
            fireFault()
        } else if rowBatch == nil, storedValues.count != entity.slotKeys.count {
            allocateStorage()
        }
    }

    /// Gives the object the permanent ID a save or `obtainPermanentIDs(for:)` gave it. When
    /// nothing but the object holds its temporary ID, that ID object becomes the permanent one
    /// in place, since nothing else could tell; otherwise the object gets a new ID object and
    /// whoever holds the temporary one keeps it unchanged, as in Core Data. (A weak reference
    /// to a temporary ID would see the change; nothing in the framework keeps one.)
    final func takePermanentKey(_ key: ObjectKey, storeIdentifier: String) {
        if isKnownUniquelyReferenced(&storedObjectID) {
            storedObjectID.unsafelyUnwrapped.becomePermanent(key, storeIdentifier: storeIdentifier)
        } else {
            storedObjectID = NSManagedObjectID(entity: entity, storeIdentifier: storeIdentifier, storeNumber: key.store, primaryKey: key.primaryKey)
        }
    }

    /// Makes a row of a batch the object's committed and current values, without copying it.
    final func useRow(_ index: Int, of batch: SlotRowBatch, version: Int64) {
        // A new object has no values yet (the common case: skip replacing them with none).
        if storedCommittedValues != nil || !storedValues.isEmpty {
            storedValues = SlotValues()
            storedCommittedValues = nil
        }
        rowBatch = batch
        batchIndex = Int32(index)
        storeVersion = version
    }

    /// Gives the object values of its own if it still reads them from a row batch.
    @inline(__always)
    private func useOwnValues() {
        if let batch = rowBatch { takeCommittedValues(batch.values(ofRow: Int(batchIndex))) }
    }

    /// Makes a row read from the store the object's committed and current values, and its
    /// version the object's.
    final func takeStoredRow(_ row: StoredRow) {
        takeCommittedValues(row.values)
        storeVersion = row.version
    }

    /// Makes values read from the store both the committed and the current ones (shared until
    /// one is written), in place of any row batch.
    private func takeCommittedValues(_ row: SlotValues) {
        rowBatch = nil
        storedCommittedValues = row
        storedValues = row
    }

    /// The value of an attribute's slot: read in place from the object's row batch while it has
    /// one (no copy of the row), otherwise from its own values. Every attribute read goes through
    /// here (`value(forKey:)`, `@Managed` getters, key paths).
    @inline(__always)
    final func attributeValue(at slot: Int) -> Any? {
        if let batch = rowBatch { return batch.value(row: Int(batchIndex), slot: slot) }
        return values[slot]
    }

    /// The `String` an attribute's slot holds, read as `attributeValue(at:)` reads, without copying
    /// an `Any?`; nil when it holds nil or anything else.
    @inline(__always)
    final func attributeString(at slot: Int) -> String? {
        if let batch = rowBatch { return batch.string(row: Int(batchIndex), slot: slot) }
        return values.string(at: slot)
    }

    /// The raw word of an attribute's slot when the slot is of `kind` and holds a value (read as
    /// `attributeValue(at:)` reads, without making an `Any`); nil otherwise.
    @inline(__always)
    final func attributeWord(at slot: Int, kind: SlotLayout.Kind) -> UInt64? {
        if rowBatch != nil {
            let row = Int(batchIndex)
            // The object keeps its batch alive: no retain on this path.
            return Unmanaged.passUnretained(rowBatch.unsafelyUnwrapped)._withUnsafeGuaranteedRef { batch in
                batch.word(row: row, slot: slot, kind: kind)
            }
        }
        guard storedValues.kind(at: slot) == kind else { return nil }
        return storedValues.word(at: slot)
    }

    /// The raw word of a fixed-width attribute of `kind` named by a literal or model-made key
    /// (see `NSEntityDescription.fastSlot`), for an object reading its row from a batch when
    /// nothing must happen before the read: not a fault, not a key-path probe, concurrency
    /// debugging off. Nil otherwise, for the general path. It calls nothing, so a typed read of a
    /// fetched object needs no stack frame.
    @inline(__always)
    final func batchWord(forKey key: String, kind: SlotLayout.Kind) -> UInt64? {
        guard flags & (Flag.fault.rawValue | Flag.keyPathProbe.rawValue) == 0, !concurrencyChecksEnabled, rowBatch != nil,
              // The object keeps its entity alive: no retain on this path.
              let slot = Unmanaged.passUnretained(entity)._withUnsafeGuaranteedRef({ $0.slot(forKeyBits: key) }) else { return nil }
        return attributeWord(at: slot, kind: kind)
    }

    /// Gives an object that has no values yet an empty slot for each property.
    final func allocateStorage() {
        if values.count != entity.slotKeys.count {
            values = SlotValues(layout: entity.slotLayout)
        }
    }

    private func fireFault() {
        faultFlag = false
        if rowBatch == nil, storedCommittedValues == nil, !insertedFlag {
            guard let context = managedObjectContext else {
                coreDataMisuse("The fault for \(objectID) can't be fulfilled: the object is no longer in a context.")
            }
            if let batch = faultBatch {
                faultBatch = nil
                batch.loadBatch(containing: Int(faultBatchIndex), in: context)
                if committedValues != nil {
                    awakeFromFetch()
                    return
                }
            }
            let loaded: StoredRow?
            do {
                loaded = try context.loadRowForFault(objectID)
            } catch {
                // Core Data raises here too: a property read can't throw. (`fatalError`, not
                // `preconditionFailure`: an optimized build drops a precondition's message.)
                fatalError("CoreData could not fulfill a fault for \(objectID): the store could not be read: \(error)")
            }
            guard let row = loaded else {
                if context.shouldHandleInaccessibleFault(self, for: objectID, triggeredByProperty: nil) {
                    context.deleteInaccessibleFault(self)
                    return
                }
                fatalError("CoreData could not fulfill a fault for \(objectID): the object was deleted from the store (and the context's shouldDeleteInaccessibleFaults is off). Use existingObject(with:) to check first.")
            }
            takeStoredRow(row)
        }
        awakeFromFetch()
    }

    /// Turns the object back into a fault, dropping its values (unsaved changes are kept when the object has changes).
    func turnIntoFault() {
        willTurnIntoFault()
        managedObjectContext?.fetchedPropertyResults.forget(self)
        values = SlotValues()
        committedValues = nil
        faultFlag = true
        didTurnIntoFault()
    }

    // MARK: Key-value coding

    /// The entity's property named `key`; traps as Core Data raises for an unknown key, with
    /// `hint` after the message.
    @inline(__always)
    final func property(forKey key: String, hint: String = "") -> NSPropertyDescription {
        guard let property = entity.frozenPropertiesByName[key] else {
            coreDataMisuse("[<\(type(of: self)) \(objectID)> valueForUndefinedKey:]: the entity \(entity.name ?? "?") is not key value coding-compliant for the key \"\(key)\".\(hint)")
        }
        return property
    }

    /// The value of a property, firing the fault if needed.
    ///
    /// Attributes return their Swift type (`Int32` for Integer 32, …); to-one relationships the
    /// destination object; to-many relationships a `Set<NSManagedObject>` (an `NSOrderedSet` when
    /// ordered). A key the entity has no property for goes to `value(forUndefinedKey:)`.
    open func value(forKey key: String) -> Any? {
        guard let slot = entity.fastSlot(forKey: key) else {
            return ownPropertyValue(forKey: key) ?? value(forUndefinedKey: key)
        }
        fireFaultIfNeeded()
        switch entity.slotKinds[slot] {
        case .attribute: return attributeValue(at: slot)
        case .other:
            if let fetched = entity.frozenProperties[slot] as? NSFetchedPropertyDescription { return fetchedPropertyValue(fetched) }
        default: break
        }
        return currentValue(of: entity.frozenProperties[slot])
    }

    /// The value of one of `NSManagedObject`'s own properties that key-value coding reaches by
    /// name, as Objective-C's does for Core Data (`self`, `objectID`, `managedObjectContext`,
    /// `entity`, `isInserted`, …); nil for any other key.
    private final func ownPropertyValue(forKey key: String) -> Any? {
        switch key {
        case "self", "SELF": self
        case "objectID": objectID
        case "managedObjectContext": managedObjectContext
        case "entity": entity
        case "isInserted", "inserted": isInserted
        case "isUpdated", "updated": isUpdated
        case "isDeleted", "deleted": isDeleted
        case "isFault", "fault": isFault
        case "hasChanges": hasChanges
        case "hasPersistentChangedValues": hasPersistentChangedValues
        case "faultingState": faultingState
        default: nil
        }
    }

    /// A fetched property's objects: its fetch request run with `$FETCH_SOURCE` standing for this
    /// object and `$FETCHED_PROPERTY` for the property, when first read; then the same array until
    /// the object is refreshed or turned into a fault. Nil outside a context, without a request,
    /// or when the fetch fails (the error is logged).
    final func fetchedPropertyValue(_ property: NSFetchedPropertyDescription) -> Any? {
        guard let context = managedObjectContext, let template = property.fetchRequest else { return nil }
        if let cached = context.fetchedPropertyResults.results(of: self, slot: property.slot) { return cached }
        let request = template.copied()
        request.predicate = template.predicate?.withSubstitutionVariables(["FETCH_SOURCE": self, "FETCHED_PROPERTY": property])
        do {
            let results: [Any] = try context.fetch(request)
            context.fetchedPropertyResults.store(results, of: self, slot: property.slot)
            return results
        } catch {
            CoreDataLog.logger.error("The fetched property \(entity.name ?? "?").\(property.name) of \(objectID) could not be fetched: \(error)")
            return nil
        }
    }

    @inline(__always)
    final func currentValue(of property: NSPropertyDescription) -> Any? {
        guard let relationship = property as? NSRelationshipDescription else { return attributeValue(at: property.slot) }
        if relationship.isToMany {
            let members = relationshipSet(for: relationship).members
            if relationship.isOrdered { return NSOrderedSet(array: Array(members)) }
            return Set(members)
        }
        return toOneDestination(relationship)
    }

    /// Sets the value of a property, recording the change and keeping inverse relationships consistent.
    open func setValue(_ value: Any?, forKey key: String) {
        guard let slot = entity.fastSlot(forKey: key) else {
            setValue(value, forUndefinedKey: key)
            return
        }
        fireFaultIfNeeded()
        if case .attribute(let type) = entity.slotKinds[slot] {
            snapshotBeforeChange()
            willChangeValue(forKey: key)
            storeAttribute(value, at: slot, type: type)
            didChangeValue(forKey: key)
            return
        }
        let property = entity.frozenProperties[slot]
        if let relationship = property as? NSRelationshipDescription {
            if relationship.isToMany {
                setToMany(relationship, to: OrderedSet(Self.managedObjects(in: value)))
            } else {
                guard value == nil || value is NSManagedObject else {
                    coreDataMisuse("The to-one relationship \(key) of \(entity.name ?? "?") takes a managed object; got \(type(of: value!)).")
                }
                setToOne(relationship, to: value as? NSManagedObject)
            }
        } else {
            snapshotBeforeChange()
            values[property.slot] = value
        }
    }

    /// Stores an attribute's value, converted to the attribute's canonical type when that is exact
    /// (see `AttributeValueCoding.normalize`); a value already of its fixed-width type goes
    /// straight into the slot's word.
    @inline(__always)
    final func storeAttribute(_ value: Any?, at slot: Int, type: NSAttributeType) {
        if values.setWordIfCanonical(value, at: slot) { return }
        values[slot] = value.map { AttributeValueCoding.normalize($0, for: type) }
    }

    /// The value at a dotted key path, following to-one relationships (and collecting through to-many ones).
    open func value(forKeyPath keyPath: String) -> Any? {
        KeyPathWalker.value(of: self, forKeyPath: keyPath)
    }

    /// Sets the value at a dotted key path; every step before the last must be a to-one relationship.
    open func setValue(_ value: Any?, forKeyPath keyPath: String) {
        var components = keyPath.split(separator: ".").map(String.init)
        let last = components.removeLast()
        var target: NSManagedObject = self
        for component in components {
            guard let next = target.value(forKey: component) as? NSManagedObject else { return }
            target = next
        }
        target.setValue(value, forKey: last)
    }

    /// The stored value of a property without firing change notifications or maintaining inverses.
    open func primitiveValue(forKey key: String) -> Any? {
        let property = property(forKey: key)
        fireFaultIfNeeded()
        return currentValue(of: property)
    }

    /// Sets the stored value of a property without notifications or inverse maintenance.
    ///
    /// (Relationships set this way do not update their inverses, as in Core Data.)
    open func setPrimitiveValue(_ value: Any?, forKey key: String) {
        let property = property(forKey: key)
        fireFaultIfNeeded()
        if let relationship = property as? NSRelationshipDescription, relationship.isToMany {
            let set = relationshipSet(for: relationship)
            snapshotBeforeChange()
            set.members = OrderedSet(Self.managedObjects(in: value))
        } else if let attribute = property as? NSAttributeDescription {
            snapshotBeforeChange()
            storeAttribute(value, at: property.slot, type: attribute.attributeType)
        } else {
            snapshotBeforeChange()
            values[property.slot] = value
        }
        managedObjectContext?.objectDidChange(self)
    }

    /// A live, writable set for a to-many relationship.
    open func mutableSetValue(forKey key: String) -> NSManagedMutableSet {
        guard let relationship = property(forKey: key) as? NSRelationshipDescription, relationship.isToMany else {
            coreDataMisuse("mutableSetValue(forKey:) needs a to-many relationship; \(key) is not one.")
        }
        return NSManagedMutableSet(owner: self, relationship: relationship)
    }

    /// A live, writable ordered set for an ordered to-many relationship.
    open func mutableOrderedSetValue(forKey key: String) -> NSManagedMutableOrderedSet {
        guard let relationship = property(forKey: key) as? NSRelationshipDescription, relationship.isToMany else {
            coreDataMisuse("mutableOrderedSetValue(forKey:) needs a to-many relationship; \(key) is not one.")
        }
        return NSManagedMutableOrderedSet(owner: self, relationship: relationship)
    }

    /// Values for several keys (`NSNull` for nil).
    open func dictionaryWithValues(forKeys keys: [String]) -> [String: Any] {
        var result: [String: Any] = [:]
        for key in keys { result[key] = value(forKey: key) ?? NSNull() }
        return result
    }

    /// Sets several properties with `setValue(_:forKey:)`; `NSNull` sets nil, as in key-value coding.
    open func setValuesForKeys(_ keyedValues: [String: Any]) {
        for (key, value) in keyedValues { setValue(value is NSNull ? nil : value, forKey: key) }
    }

    /// The value of a key the entity has no property for: a subclass answers the keys it
    /// computes here. Traps otherwise, as key-value coding raises `NSUndefinedKeyException`.
    open func value(forUndefinedKey key: String) -> Any? {
        _ = property(forKey: key, hint: " A value the class computes is read by name (a section key path, a sort key, a predicate) through an override of value(forUndefinedKey:).")
        return nil
    }

    /// Sets a key the entity has no property for: a subclass takes the keys it computes here.
    /// Traps otherwise, as key-value coding raises `NSUndefinedKeyException`.
    open func setValue(_ value: Any?, forUndefinedKey key: String) {
        coreDataMisuse("[<\(type(of: self)) \(objectID)> setValue:forUndefinedKey:]: the entity \(entity.name ?? "?") is not key value coding-compliant for the key \"\(key)\". A value the class computes is set by name through an override of setValue(_:forUndefinedKey:).")
    }

    /// A property's value by name: `value(forKey:)` and `setValue(_:forKey:)`.
    public subscript(key: String) -> Any? {
        get { value(forKey: key) }
        set { setValue(newValue, forKey: key) }
    }

    // MARK: Change notifications (hooks for subclasses)

    /// Called before a property is read through an accessor.
    open func willAccessValue(forKey key: String?) { fireFaultIfNeeded() }
    /// Called after a property is read through an accessor.
    open func didAccessValue(forKey key: String?) {}
    /// Called before a property changes.
    open func willChangeValue(forKey key: String) {}
    /// Called after a property changed; records the change with the context.
    open func didChangeValue(forKey key: String) {
        recordChange()
    }
    /// Called before a to-many relationship's set changes by `mutationKind` with `objects`, by
    /// accessors that change the set through its primitive value.
    open func willChangeValue(forKey key: String, withSetMutation mutationKind: NSKeyValueSetMutationKind, using objects: Set<AnyHashable>) {
        snapshotBeforeChange()
    }
    /// Called after a to-many relationship's set changed; records the change with the context.
    open func didChangeValue(forKey key: String, withSetMutation mutationKind: NSKeyValueSetMutationKind, using objects: Set<AnyHashable>) {
        recordChange()
    }
    /// Called before the objects at `indexes` of an ordered to-many relationship change.
    open func willChange(_ changeKind: NSKeyValueChange, valuesAt indexes: IndexSet, forKey key: String) {
        snapshotBeforeChange()
    }
    /// Called after the objects at `indexes` of an ordered to-many relationship changed; records
    /// the change with the context.
    open func didChange(_ changeKind: NSKeyValueChange, valuesAt indexes: IndexSet, forKey key: String) {
        recordChange()
    }

    /// Records with the context that the object changed, as the `did…` notifications do.
    @inline(__always)
    private func recordChange() {
        // An inserted or deleted object is already tracked as such: nothing to record.
        if insertedFlag || deletedFlag { return }
        managedObjectContext?.objectDidChange(self)
    }

    // MARK: Changes

    /// The persistent properties whose values differ from the committed ones, by name.
    open func changedValues() -> [String: Any] {
        guard !faultFlag else { return [:] }
        var changes: [String: Any] = [:]
        for property in entity.frozenProperties where !property.isTransient {
            if let relationship = property as? NSRelationshipDescription {
                if relationship.isToMany {
                    guard let set = values[relationship.slot] as? RelationshipSet else { continue }
                    let current = set.members.map(\.objectID)
                    if let committed = set.committedIDs, committed == current { continue }
                    if set.committedIDs == nil { continue }
                    changes[property.name] = currentValue(of: property) ?? NSNull()
                } else {
                    let current = toOneDestinationID(relationship)
                    let committed = committedValues?[relationship.slot] as? NSManagedObjectID
                    if current != committed || (committedValues == nil && current != nil) {
                        changes[property.name] = toOneDestination(relationship) ?? NSNull()
                    }
                }
            } else {
                let current = values[property.slot]
                let committed = committedValues?[property.slot] ?? nil
                if committedValues == nil {
                    if current != nil { changes[property.name] = current! }
                } else if !ValueComparison.isEqual(current, committed) {
                    changes[property.name] = current ?? NSNull()
                }
            }
        }
        return changes
    }

    /// The persistent properties changed since the context last posted
    /// `NSManagedObjectContextObjectsDidChange`, with the values they had before (`NSNull` for
    /// nil): what an observer of that notification reads to learn what changed, and from what.
    ///
    /// Read inside the observer, it describes the event being posted. A to-many relationship with
    /// a to-one inverse is compared through its members' own baselines; one without, only if it
    /// was loaded before the object's first change of the event.
    open func changedValuesForCurrentEvent() -> [String: Any] {
        guard !faultFlag, let context = managedObjectContext, let baseline = context.eventBaseline(of: self) else { return [:] }
        return changes(since: baseline, in: context)
    }

    /// The values last fetched or saved of some persistent properties (all of them for nil), with
    /// `NSNull` for nil, relationships as their destination objects; empty for an object never
    /// saved. Transient properties are left out.
    open func committedValues(forKeys keys: [String]?) -> [String: Any] {
        guard let committedValues else { return [:] }
        var result: [String: Any] = [:]
        let properties = keys.map { $0.map { property(forKey: $0) } } ?? entity.frozenProperties
        for property in properties where !property.isTransient {
            if let relationship = property as? NSRelationshipDescription, relationship.isToMany {
                let members = (relationshipSet(for: relationship).committedIDs ?? []).compactMap { managedObjectContext?.object(with: $0) }
                result[property.name] = relationship.isOrdered ? NSOrderedSet(array: members) as Any : Set(members) as Any
                continue
            }
            switch committedValues[property.slot] {
            case let id as NSManagedObjectID: result[property.name] = managedObjectContext?.object(with: id) ?? id
            case let value?: result[property.name] = value
            case nil: result[property.name] = NSNull()
            }
        }
        return result
    }

    /// The object IDs of a relationship's destinations, without firing their faults.
    open func objectIDs(forRelationshipNamed key: String) -> [NSManagedObjectID] {
        guard let relationship = property(forKey: key) as? NSRelationshipDescription else { return [] }
        fireFaultIfNeeded()
        if relationship.isToMany { return relationshipSet(for: relationship).members.map(\.objectID) }
        return toOneDestinationID(relationship).map { [$0] } ?? []
    }

    /// Whether a relationship's destinations are not loaded yet.
    open func hasFault(forRelationshipNamed key: String) -> Bool {
        guard let relationship = property(forKey: key) as? NSRelationshipDescription else { return false }
        if faultFlag { return true }
        if relationship.isToMany { return !(values[relationship.slot] is RelationshipSet) }
        return values[relationship.slot] is NSManagedObjectID
    }

    // MARK: Lifecycle hooks

    /// Whether changes to properties the model doesn't describe leave the object unchanged in its
    /// context. Linux has no key-value observing, so such changes never reach the context here,
    /// whatever a subclass answers.
    open class var contextShouldIgnoreUnmodeledPropertyChanges: Bool { true }

    /// Called once when the object is first inserted into a context.
    open func awakeFromInsert() {}
    /// Called when a fetched object's values are first loaded.
    open func awakeFromFetch() {}
    /// Called after the object's values were set again from a snapshot: by undo or redo, a
    /// rollback, `refresh(_:mergeChanges: true)` or a merge policy resolving a conflict at save
    /// (`flags` says which). Where to recompute what is derived from persistent properties.
    open func awake(fromSnapshotEvents flags: NSSnapshotEventType) {}
    /// Called before the object is saved.
    open func willSave() {}
    /// Called after the object is saved.
    open func didSave() {}
    /// Called when the object is marked for deletion, before delete rules apply.
    open func prepareForDeletion() {}
    /// Called before the object turns into a fault.
    open func willTurnIntoFault() {}
    /// Called after the object turned into a fault.
    open func didTurnIntoFault() {}

    // MARK: Validation

    /// Validates one value for a key; throws a Core Data validation error when it is not acceptable.
    ///
    /// Apple's signature takes an `AutoreleasingUnsafeMutablePointer`, which exists only with
    /// Objective-C; here the value is passed `inout` (a validator may replace it).
    open func validateValue(_ value: inout Any?, forKey key: String) throws {
        // A number, Boolean or date of the attribute's own type with no rule on it is valid: told
        // without a lookup by name or a dynamic cast (saves validate every property this way).
        if let slot = entity.fastSlot(forKey: key), !entity.slotHasConstraints[slot] {
            let kind = entity.slotLayout.kindTable[slot]
            if kind != .cell, SlotStorage.encode(value, kind) != nil { return }
        }
        try ObjectValidation.validate(value: value, of: property(forKey: key), in: self)
    }

    /// Validates the object before it is inserted by a save.
    open func validateForInsert() throws { try ObjectValidation.validateProperties(of: self) }
    /// Validates the object before its changes are saved.
    open func validateForUpdate() throws { try ObjectValidation.validateProperties(of: self) }
    /// Validates that the object may be deleted (Deny delete rules).
    open func validateForDelete() throws { try ObjectValidation.validateDelete(of: self) }

    // MARK: NSObject

    /// Identity, as for `NSObject`. A class instance held directly is compared by address without
    /// a dynamic cast (building the change notifications' sets compares objects often).
    open override func isEqual(_ object: Any?) -> Bool {
        if let address = ExistentialFastPath.classInstanceAddress(object) {
            return address == UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque())
        }
        return (object as? NSManagedObject) === self
    }

    /// Identity hash: the object's address (hashed collections mix it with their own seed).
    open override var hash: Int { Int(bitPattern: ObjectIdentifier(self)) }

    open override var description: String {
        let state = faultFlag ? "<fault>" : "{ " + entity.frozenAttributes.map { attribute in
            let value = values.indices.contains(attribute.slot) ? values[attribute.slot] : nil
            return "\(attribute.name) = \(value.map { "\($0)" } ?? "nil")"
        }.joined(separator: "; ") + " }"
        return "<\(type(of: self)): \(objectID.uriRepresentation().absoluteString)> (entity: \(entity.name ?? "?"); data: \(state))"
    }

    // MARK: Helpers

    static func managedObjects(in value: Any?) -> [NSManagedObject] {
        switch value {
        case nil: []
        case let set as Set<NSManagedObject>: Array(set)
        case let array as [NSManagedObject]: array
        case let ordered as OrderedSet<NSManagedObject>: Array(ordered)
        case let ordered as NSOrderedSet: ordered.array.map(NSManagedMutableSet.managed)
        case let set as NSSet: set.allObjects.map(NSManagedMutableSet.managed)
        case let array as [Any]: array.map(NSManagedMutableSet.managed)
        case let sequence as any Sequence where !(sequence is any StringProtocol): sequence.map(NSManagedMutableSet.managed)
        default: coreDataMisuse("A to-many relationship takes a set, ordered set or array of managed objects; got \(type(of: value!)).")
        }
    }
}

extension NSEntityDescription {
    /// The class to instantiate for this entity's objects.
    var instantiableClass: NSManagedObject.Type {
        let bits = resolvedClassBits.load(ordering: .acquiring)
        if bits != 0 { return unsafeBitCast(bits, to: NSManagedObject.Type.self) }
        let resolved = EntityClassRegistry.resolveClass(for: self)
        // Every thread resolves the same class, so whichever store lands is right.
        resolvedClassBits.store(unsafeBitCast(resolved, to: UInt.self), ordering: .releasing)
        return resolved
    }

    /// Creates a new object of this entity inserted into a context.
    func instantiate(insertInto context: NSManagedObjectContext) -> NSManagedObject {
        instantiableClass.init(entity: self, insertInto: context)
    }
}
