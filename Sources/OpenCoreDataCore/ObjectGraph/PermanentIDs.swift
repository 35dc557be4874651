/// The permanent IDs a save gave to inserted objects, by their temporary IDs' keys.
///
/// It keeps permanent keys, not ID objects: a saved object's own ID becomes permanent in place
/// when nothing else holds it (`NSManagedObject.takePermanentKey`), so a save of many objects
/// allocates no second ID for each. `permanentID(for:)` makes an ID object when one is needed.
///
/// A context hands out temporary numbers in sequence (`ObjectRegistry` takes them in blocks), so
/// the keys of one save's objects are nearly consecutive: they are kept in a dense array by
/// number, with no hashing, and read back in the order they were written. Keys far from the
/// others (numbers from another context's blocks) go to a `FastHashMap`. (A hash table for
/// 200,000 inserted objects was 16 MB of fresh memory, each 4 KB page a fault.)
///
/// Invariants: `dense[i]`, when set, holds the permanent key for the temporary number
/// `firstNumber + i`, whose root entity is that of the temporary key; `denseCount` is the number
/// of set slots; a key is in `dense` or in `others`, never both; every permanent key's store
/// number is in `storeIdentifiers`.
struct PermanentIDs: ExpressibleByDictionaryLiteral {
    private var firstNumber: Int64 = 0
    private var dense: [ObjectKey?] = []
    private var denseCount = 0
    private var others = FastHashMap<ObjectKey, ObjectKey>()
    /// The identifier of each store the permanent keys name, by store number (a save writes to
    /// one store or a few: a linear search).
    private var storeIdentifiers: [(number: Int, identifier: String)] = []

    /// How far past the dense range a number may land and still extend it (another context may
    /// have taken a few blocks of numbers in between).
    private static let maximumGap: Int64 = 4096

    init() {}

    /// A mapping from temporary keys to the permanent IDs given.
    init(dictionaryLiteral elements: (ObjectKey, NSManagedObjectID)...) {
        for (key, id) in elements {
            guard let identifier = id.storeIdentifier else { preconditionFailure("A permanent ID must name its store.") }
            assign(id.key, storeIdentifier: identifier, to: key)
        }
    }

    var count: Int { denseCount + others.count }
    var isEmpty: Bool { count == 0 }

    /// Makes room for `count` IDs.
    mutating func reserveCapacity(_ count: Int) {
        dense.reserveCapacity(count)
    }

    /// The number of a temporary key (only those may be kept densely).
    @inline(__always)
    private static func temporaryNumber(of key: ObjectKey) -> Int64? {
        key.primaryKey < 0 && key.isTemporary ? -key.primaryKey : nil
    }

    /// The dense slot of a temporary key's number, if it lies in the dense range.
    @inline(__always)
    private func denseIndex(of key: ObjectKey) -> Int? {
        guard let number = Self.temporaryNumber(of: key) else { return nil }
        let offset = number - firstNumber
        return offset >= 0 && offset < Int64(dense.count) ? Int(offset) : nil
    }

    /// The permanent key given to the object whose key was `key`. (Set through `assign`, which
    /// records the key's store too, or `removeValue(forKey:)`.)
    private(set) subscript(key: ObjectKey) -> ObjectKey? {
        get {
            if let index = denseIndex(of: key), let entry = dense[index], entry.root == key.root { return entry }
            return others.isEmpty ? nil : others[key]
        }
        set {
            // A key already in `others` stays there (its number may have come into the dense
            // range since).
            if !others.isEmpty, others[key] != nil {
                others[key] = newValue
            } else if let index = denseIndex(of: key) {
                if let entry = dense[index], entry.root != key.root {
                    others[key] = newValue
                    return
                }
                denseCount += (newValue == nil ? 0 : 1) - (dense[index] == nil ? 0 : 1)
                dense[index] = newValue
            } else if let newValue {
                append(newValue, forKey: key)
            }
        }
    }

    /// Records that the object whose key was `temporary` now has the permanent key `permanent`
    /// in the store named `storeIdentifier`.
    mutating func assign(_ permanent: ObjectKey, storeIdentifier: String, to temporary: ObjectKey) {
        assert(!permanent.isTemporary && permanent.root == temporary.root, "A permanent key names its store, and the root entity of the temporary key.")
        recordStore(permanent.store, identifier: storeIdentifier)
        self[temporary] = permanent
    }

    /// Records the primary key a store gave a new object of an entity.
    mutating func assign(primaryKey: Int64, of entity: NSEntityDescription, in store: ObjectIDFactory, to temporary: ObjectKey) {
        assign(store.key(for: entity, primaryKey: primaryKey), storeIdentifier: store.storeIdentifier, to: temporary)
    }

    /// Forgets the permanent key of `key`.
    mutating func removeValue(forKey key: ObjectKey) {
        self[key] = nil
    }

    /// The identifier of the store a permanent key of this mapping names.
    func storeIdentifier(of permanent: ObjectKey) -> String {
        guard let entry = storeIdentifiers.first(where: { $0.number == permanent.store }) else {
            preconditionFailure("The key \(permanent) is not one of this save's permanent keys.")
        }
        return entry.identifier
    }

    /// A new permanent ID for the object whose ID was `id`, if it was given one.
    func permanentID(for id: NSManagedObjectID) -> NSManagedObjectID? {
        guard let permanent = self[id.key] else { return nil }
        return NSManagedObjectID(entity: id.entity, storeIdentifier: storeIdentifier(of: permanent), storeNumber: permanent.store, primaryKey: permanent.primaryKey)
    }

    /// Adds a key outside the dense range: at the dense range's end when the key's number is at
    /// most `maximumGap` past it, else to `others`.
    private mutating func append(_ permanent: ObjectKey, forKey key: ObjectKey) {
        guard let number = Self.temporaryNumber(of: key) else {
            others[key] = permanent
            return
        }
        if dense.isEmpty { firstNumber = number }
        let offset = number - firstNumber
        guard offset >= Int64(dense.count), offset - Int64(dense.count) <= Self.maximumGap else {
            others[key] = permanent
            return
        }
        dense.append(contentsOf: repeatElement(nil, count: Int(offset) - dense.count))
        dense.append(permanent)
        denseCount += 1
    }

    /// Records the identifier of a store the permanent keys name, once.
    private mutating func recordStore(_ number: Int, identifier: String) {
        if !storeIdentifiers.contains(where: { $0.number == number }) {
            storeIdentifiers.append((number, identifier))
        }
    }

    /// Adds every permanent key of another mapping, which holds other temporary keys (each store
    /// of a save gives keys to its own objects).
    mutating func merge(_ other: PermanentIDs) {
        for store in other.storeIdentifiers { recordStore(store.number, identifier: store.identifier) }
        for (offset, entry) in other.dense.enumerated() {
            guard let entry else { continue }
            self[ObjectKey(primaryKey: -(other.firstNumber + Int64(offset)), root: entry.root, store: 0)] = entry
        }
        others.merge(other.others)
    }
}
