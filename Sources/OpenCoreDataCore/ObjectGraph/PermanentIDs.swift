/// The permanent IDs a save gave to inserted objects, by their temporary IDs' keys.
///
/// A context hands out temporary numbers in sequence (`ObjectRegistry` takes them in blocks), so
/// the keys of one save's objects are nearly consecutive: they are kept in a dense array by
/// number, 16 bytes an ID with no hashing, and read back in the order they were written. Keys
/// far from the others (numbers from another context's blocks) go to a `FastHashMap`. (A hash
/// table for 200,000 inserted objects was 16 MB of fresh memory, each 4 KB page a fault.)
///
/// Invariants: `dense[i]`, when set, holds the ID for the temporary number `firstNumber + i`,
/// with the root entity of its temporary key; `denseCount` is the number of set slots; a key is
/// in `dense` or in `others`, never both.
struct PermanentIDs: ExpressibleByDictionaryLiteral {
    private var firstNumber: Int64 = 0
    private var dense: [(root: ObjectIdentifier, id: NSManagedObjectID)?] = []
    private var denseCount = 0
    private var others = FastHashMap<ObjectKey, NSManagedObjectID>()

    /// How far past the dense range a number may land and still extend it (another context may
    /// have taken a few blocks of numbers in between).
    private static let maximumGap: Int64 = 4096

    init() {}

    init(dictionaryLiteral elements: (ObjectKey, NSManagedObjectID)...) {
        for (key, id) in elements { self[key] = id }
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
        key.primaryKey < 0 && key.store == 0 ? -key.primaryKey : nil
    }

    /// The dense slot of a temporary key's number, if it lies in the dense range.
    @inline(__always)
    private func denseIndex(of key: ObjectKey) -> Int? {
        guard let number = Self.temporaryNumber(of: key) else { return nil }
        let offset = number - firstNumber
        return offset >= 0 && offset < Int64(dense.count) ? Int(offset) : nil
    }

    subscript(key: ObjectKey) -> NSManagedObjectID? {
        get {
            if let index = denseIndex(of: key), let entry = dense[index], entry.root == key.root { return entry.id }
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
                dense[index] = newValue.map { (key.root, $0) }
            } else if let newValue {
                append(newValue, forKey: key)
            }
        }
    }

    /// Adds an ID for a key outside the dense range: at the dense range's end when the key's
    /// number is at most `maximumGap` past it, else to `others`.
    private mutating func append(_ id: NSManagedObjectID, forKey key: ObjectKey) {
        guard let number = Self.temporaryNumber(of: key) else {
            others[key] = id
            return
        }
        if dense.isEmpty { firstNumber = number }
        let offset = number - firstNumber
        guard offset >= Int64(dense.count), offset - Int64(dense.count) <= Self.maximumGap else {
            others[key] = id
            return
        }
        dense.append(contentsOf: repeatElement(nil, count: Int(offset) - dense.count))
        dense.append((key.root, id))
        denseCount += 1
    }

    /// Adds every ID of another mapping; its IDs replace those of keys already present.
    mutating func merge(_ other: PermanentIDs) {
        for (offset, entry) in other.dense.enumerated() {
            guard let entry else { continue }
            self[ObjectKey(primaryKey: -(other.firstNumber + Int64(offset)), root: entry.root, store: 0)] = entry.id
        }
        others.merge(other.others)
    }
}
