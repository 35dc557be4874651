import Foundation

/// A row's values as a store (or a parent context) holds them: one entry per property slot, to-one
/// relationships as `NSManagedObjectID`s, to-many and transient slots nil.
struct StoredRow {
    var values: SlotValues
    /// The optimistic-locking version (`Z_OPT`).
    var version: Int64
}

/// One result of a fetch from the parent: the object's identity and, when the request asked for
/// property values, its row. (A struct, not a tuple: arrays of tuples are destroyed through the
/// runtime's generic tuple witness, a large share of a big fetch.) Kept to 48 bytes: a fetch of a
/// million rows holds a million of them at once.
struct FetchedRow {
    /// Where a fetched row's values are.
    enum Values {
        /// Not asked for (the object will be a fault without data).
        case none
        /// Values of the row's own (from a parent context or an atomic store).
        case own(SlotValues)
        /// Row `batchRow` of a batch read together (SQLite store).
        case batched(SlotRowBatch)
    }

    /// The object's ID, when the store made one; nil for a row read with its values into a batch,
    /// whose object makes its ID on first use (see `NSManagedObject.storedObjectID`).
    let madeID: NSManagedObjectID?
    /// The row's entity, unretained: rows live only while a fetch runs, while the model keeps it.
    let entityReference: Unmanaged<NSEntityDescription>
    /// The row's entity.
    var entity: NSEntityDescription { entityReference.takeUnretainedValue() }
    /// The row's primary key (negative for an unsaved object's temporary number) and its store's
    /// number (`PersistentStoreRegistry`; 0 for a temporary ID), as in `key`.
    let primaryKey: Int64
    let storeNumber: Int32
    /// The row's index in its batch (`.batched`).
    let batchRow: Int32
    /// The optimistic-locking version (`Z_OPT`) of a row read with its values.
    let version: Int64
    let values: Values
    /// For a `.batched` row, its batch unretained (the row's `values` keep it alive): what the
    /// context reads through a lent row (`FetchedRows.consume`) without copying the row.
    let batchReference: Unmanaged<SlotRowBatch>?

    init(_ objectID: NSManagedObjectID, _ row: StoredRow?) {
        madeID = objectID
        entityReference = Unmanaged.passUnretained(objectID.entity)
        primaryKey = objectID.key.primaryKey
        storeNumber = Int32(truncatingIfNeeded: objectID.key.store)
        batchRow = 0
        version = row?.version ?? 0
        values = row.map { Values.own($0.values) } ?? .none
        batchReference = nil
    }

    /// A row of a batch, its ID not made yet: `ids` makes it when it is needed.
    init(_ entity: NSEntityDescription, primaryKey: Int64, of ids: ObjectIDFactory, row index: Int, of batch: SlotRowBatch, version: Int64) {
        madeID = nil
        entityReference = Unmanaged.passUnretained(entity)
        self.primaryKey = primaryKey
        storeNumber = Int32(truncatingIfNeeded: ids.storeNumber)
        batchRow = Int32(truncatingIfNeeded: index)
        self.version = version
        values = .batched(batch)
        batchReference = Unmanaged.passUnretained(batch)
    }

    /// The object's identity as a key.
    var key: ObjectKey { Self.key(primaryKey: primaryKey, of: entityReference, storeNumber: storeNumber) }

    /// A row's key from its plain fields (what a reader of a lent row uses, copying no row).
    @inline(__always)
    static func key(primaryKey: Int64, of entity: Unmanaged<NSEntityDescription>, storeNumber: Int32) -> ObjectKey {
        entity._withUnsafeGuaranteedRef { ObjectKey(primaryKey: primaryKey, of: $0, store: Int(storeNumber)) }
    }

    /// The object's ID (made now when the store did not make it).
    var objectID: NSManagedObjectID {
        madeID ?? ObjectIDFactory(storeNumber: Int(storeNumber)).objectID(for: entity, primaryKey: primaryKey)
    }

    /// The row as values of its own, copied out of its batch if need be; nil when not fetched.
    var row: StoredRow? {
        switch values {
        case .none: nil
        case .own(let values): StoredRow(values: values, version: version)
        case .batched(let batch): StoredRow(values: batch.values(ofRow: Int(batchRow)), version: version)
        }
    }
}

/// One object's state handed to the parent on save.
struct SaveRecord {
    let objectID: NSManagedObjectID
    /// `objectID.key`, kept inline: a store's passes over many records read it without touching
    /// each ID object again.
    let key: ObjectKey
    let entity: NSEntityDescription
    /// Values by slot; to-one relationships as object IDs (possibly temporary); to-many slots nil.
    let values: SlotValues
    /// The members of each loaded to-many relationship, by slot, when they changed.
    let toMany: [Int: [NSManagedObjectID]]
    /// The version the object had when it was read (for optimistic locking).
    let version: Int64

    init(objectID: NSManagedObjectID, entity: NSEntityDescription, values: SlotValues, toMany: [Int: [NSManagedObjectID]], version: Int64) {
        self.objectID = objectID
        self.key = objectID.key
        self.entity = entity
        self.values = values
        self.toMany = toMany
        self.version = version
    }
}

/// Everything one save hands to the parent, in one piece so it is applied all or nothing.
struct SaveChanges {
    var inserted: [SaveRecord] = []
    var updated: [SaveRecord] = []
    var deleted: [SaveRecord] = []
    /// Unchanged objects the context asked to check (`detectConflicts(for:)`): the save fails
    /// with a version conflict if one changed or vanished in the store since it was read. Only
    /// their IDs, entities and versions are set; nothing of them is written.
    var checked: [SaveRecord] = []
    /// The saving context's `transactionAuthor` and `name`, for persistent history.
    var author = TransactionAuthor()
    /// The slots of the properties each updated object changed, by object key; filled only when a
    /// store records persistent history.
    var changedSlots: [ObjectKey: [Int]] = [:]
    var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deleted.isEmpty }
}

/// What a context asks of whatever is above it: the coordinator, or a parent context.
protocol ParentStore: AnyObject {
    /// The model the parent uses.
    var managedObjectModel: NSManagedObjectModel { get }
    /// Runs a fetch for a child and returns matching object IDs in order, with their rows when available.
    func fetchRows(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription) throws -> FetchedRows
    /// Counts the objects a request matches.
    func countRows(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription) throws -> Int
    /// Dictionary results.
    func fetchDictionaries(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription) throws -> [[String: Any]]
    /// The row of one object, or nil if it does not exist.
    func loadRow(_ objectID: NSManagedObjectID) throws -> StoredRow?
    /// The rows of several objects at once, by key (missing objects are absent).
    func loadRows(_ objectIDs: [NSManagedObjectID]) throws -> [ObjectKey: StoredRow]
    /// The destinations of a to-many relationship for several sources at once, by source key.
    func loadToManyIDs(_ objectIDs: [NSManagedObjectID], relationship: NSRelationshipDescription) throws -> [ObjectKey: [NSManagedObjectID]]
    /// The destinations of a to-many relationship, in order.
    func loadToManyIDs(_ objectID: NSManagedObjectID, relationship: NSRelationshipDescription) throws -> [NSManagedObjectID]
    /// Applies a child's changes atomically; returns the permanent IDs given to inserted objects.
    func applyChanges(_ changes: SaveChanges, from context: NSManagedObjectContext) throws -> PermanentIDs
    /// Runs `body` with every store's writes held, so that nothing another connection or process
    /// commits can fall between what `body` reads and what it saves (a save resolving conflicts
    /// reads the stored rows, merges and saves again in one transaction). A parent context just runs it.
    func holdingWrites<T>(_ body: () throws -> T) throws -> T
}

extension ParentStore {
    func holdingWrites<T>(_ body: () throws -> T) throws -> T { try body() }
}
