import Foundation

/// A stable identity for a managed object: its entity, its store and its primary key.
///
/// A newly inserted object has a temporary ID until it is saved (or `obtainPermanentIDs(for:)` is
/// called). IDs are immutable, so they may cross threads and contexts, unlike objects.
open class NSManagedObjectID: NSObject, @unchecked Sendable, NSFetchRequestResult {
    /// The entity of the identified object.
    public let entity: NSEntityDescription
    /// The store's identifier (its `NSStoreUUID`), nil for a temporary ID.
    @exclusivity(unchecked) final private(set) var storeIdentifier: String?
    /// The identity as a small value: what contexts key their registered objects by.
    @exclusivity(unchecked) final private(set) var key: ObjectKey
    /// For a temporary ID: the number (`NSPersistentStore.storeNumber`) of the store that
    /// `NSManagedObjectContext.assign(_:to:)` chose for the object, 0 for none (the coordinator's
    /// first store that holds the entity). Set only before the object is saved.
    @exclusivity(unchecked) final var assignedStoreNumber = 0

    private static let temporaryCounter = LockedValue<Int64>(0)

    /// The row's primary key (`Z_PK`), or 0 for a temporary ID. (Package-visible for `ocd`.)
    package var primaryKey: Int64 { key.primaryKey > 0 ? key.primaryKey : 0 }

    init(entity: NSEntityDescription, storeIdentifier: String, storeNumber: Int, primaryKey: Int64) {
        self.entity = entity
        self.storeIdentifier = storeIdentifier
        self.key = ObjectKey(primaryKey: primaryKey, of: entity, store: storeNumber)
    }

    convenience init(temporaryFor entity: NSEntityDescription) {
        self.init(temporaryFor: entity, number: Self.reserveTemporaryNumbers(1).lowerBound)
    }

    /// A temporary ID with a number from `reserveTemporaryNumbers(_:)`.
    init(temporaryFor entity: NSEntityDescription, number: Int64) {
        self.entity = entity
        self.storeIdentifier = nil
        self.key = ObjectKey(primaryKey: -number, of: entity, store: 0)
    }

    /// Reserves `count` temporary numbers no other ID of the process gets (contexts take them in
    /// blocks, so inserting an object takes no lock).
    static func reserveTemporaryNumbers(_ count: Int64) -> Range<Int64> {
        temporaryCounter.withLock { counter in
            defer { counter += count }
            return (counter + 1)..<(counter + 1 + count)
        }
    }

    /// Turns a temporary ID into a permanent one, in place. Only for an ID that nothing but its
    /// object holds, which is then the only one that could tell (see
    /// `NSManagedObject.takePermanentKey`): IDs are otherwise immutable.
    func becomePermanent(_ key: ObjectKey, storeIdentifier: String) {
        assert(isTemporaryID && !key.isTemporary && key.root == self.key.root, "Only a temporary ID becomes permanent, as an ID of the same entity.")
        self.key = key
        self.storeIdentifier = storeIdentifier
    }

    /// Whether the ID is temporary (the object has not been saved yet).
    public var isTemporaryID: Bool { storeIdentifier == nil }

    /// The store that holds the object, nil while the ID is temporary.
    public var persistentStore: NSPersistentStore? {
        storeIdentifier.flatMap { PersistentStoreRegistry.store(withIdentifier: $0) }
    }

    /// A URL naming the object: `x-coredata://<store UUID>/<Entity>/p<pk>` (temporary: `…/t<number>`).
    public func uriRepresentation() -> URL {
        let entityName = entity.name ?? "?"
        if let storeIdentifier {
            return URL(string: "x-coredata://\(storeIdentifier)/\(entityName)/p\(key.primaryKey)")!
        }
        return URL(string: "x-coredata:///\(entityName)/t\(-key.primaryKey)")!
    }

    open override func isEqual(_ object: Any?) -> Bool {
        if let address = ExistentialFastPath.classInstanceAddress(object) {
            // A class instance held directly: itself, or another ID of exactly this class, needs no cast.
            if address == UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque()) { return true }
            let instance = Unmanaged<AnyObject>.fromOpaque(address).takeUnretainedValue()
            if type(of: instance) == NSManagedObjectID.self { return key == unsafeDowncast(instance, to: NSManagedObjectID.self).key }
        }
        guard let other = object as? NSManagedObjectID else { return false }
        return key == other.key
    }

    /// Cheap to compute: hashed collections mix it with their own seed.
    open override var hash: Int { Int(truncatingIfNeeded: key.primaryKey) &* 31 &+ Int(bitPattern: key.root) }

    open override var description: String { "<\(uriRepresentation().absoluteString)>" }
}

/// An object's identity as a value: primary key (negative for temporary IDs), root entity and store.
struct ObjectKey: Hashable {
    let primaryKey: Int64
    let root: ObjectIdentifier
    let store: Int

    init(primaryKey: Int64, root: ObjectIdentifier, store: Int) {
        self.primaryKey = primaryKey
        self.root = root
        self.store = store
    }

    /// The key of a row of `entity` (keyed by its root entity: a row keeps its key whatever
    /// subentity it is an instance of).
    init(primaryKey: Int64, of entity: NSEntityDescription, store: Int) {
        self.init(primaryKey: primaryKey, root: entity.rootIdentifier, store: store)
    }

    /// Whether this is a temporary ID's key: those have no store (store numbers start at 1) and
    /// the negated temporary number as primary key.
    var isTemporary: Bool { store == 0 }

    /// One word into the hasher (the same mix `FastHashMap` uses), not two.
    func hash(into hasher: inout Hasher) {
        hasher.combine(fastHash)
    }
}

extension ObjectKey: FastHashable {
    /// The primary key plus a scramble of the origin (root entity, store) above its low four
    /// bits: consecutive keys of one origin differ in the low bits (see `FastHashMap`).
    var fastHash: UInt64 {
        let origin = (UInt64(UInt(bitPattern: root)) &+ UInt64(UInt(bitPattern: store))) &* 0x9E37_79B9_7F4A_7C15
        return UInt64(bitPattern: primaryKey) &+ origin << 4
    }
}
