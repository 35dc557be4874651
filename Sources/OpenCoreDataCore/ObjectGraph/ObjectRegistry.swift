/// A context's registered objects by ID: at most one object per ID.
///
/// Objects with permanent IDs (fetched or saved) live in a `FastHashMap` by `ObjectKey`. Objects
/// the context inserted live apart, in a dense array indexed by their temporary number: the
/// registry hands out those numbers itself (`nextTemporaryNumber()`), in blocks reserved from
/// `NSManagedObjectID`, and remembers where each block starts in the array. Registering a new
/// object is then an append, with no hashing, no probing and no table to grow; a save that makes
/// many IDs permanent empties the array and moves the objects into the map in one sized pass.
/// (Inserting many objects once spent most of its time growing and probing the hash table.)
///
/// A class, not a struct: the context reads it on every fetched row and lookup, and reading a
/// struct of several arrays out of a class property copies (retains) each of them every time.
///
/// Invariants:
/// - `blocks` are sorted by first number (numbers only grow) and each covers `blockSize` slots of
///   `temporaries` starting at its offset.
/// - `temporaryCount` is the number of non-nil slots; when it drops to zero the blocks and the
///   unused numbers are forgotten, so a number handed out later always lies in a live block.
/// - A temporary key outside every block (another context's number, or one handed out before a
///   reset) is kept in the map like any other key.
final class ObjectRegistry {
    @exclusivity(unchecked) private var map = FastHashMap<ObjectKey, NSManagedObject>()
    @exclusivity(unchecked) private var temporaries: [NSManagedObject?] = []
    @exclusivity(unchecked) private var blocks: [(first: Int64, offset: Int)] = []
    @exclusivity(unchecked) private var unusedNumbers: Range<Int64> = 0..<0
    @exclusivity(unchecked) private var temporaryCount = 0

    /// How many temporary numbers are reserved at a time (so inserting takes no lock).
    static let blockSize: Int64 = 1024

    /// The number of registered objects.
    var count: Int { map.count + temporaryCount }

    /// A temporary number for a new object, from this registry's blocks: an object registered
    /// under a temporary ID with this number is kept in the dense array.
    func nextTemporaryNumber() -> Int64 {
        if unusedNumbers.isEmpty {
            unusedNumbers = NSManagedObjectID.reserveTemporaryNumbers(Self.blockSize)
            blocks.append((unusedNumbers.lowerBound, temporaries.count))
            temporaries.append(contentsOf: repeatElement(nil, count: Int(Self.blockSize)))
        }
        return unusedNumbers.popFirst()!
    }

    /// Makes room for `count` more objects with permanent IDs (fetched, or about to be saved).
    func reserveCapacity(forAdditional count: Int) {
        map.reserveCapacity(map.count + count)
    }

    /// The slot of a temporary key numbered by this registry, or nil.
    @inline(__always)
    private func temporarySlot(of key: ObjectKey) -> Int? {
        guard key.primaryKey < 0, let last = blocks.last else { return nil }
        let number = -key.primaryKey
        var block = last
        if number < last.first {
            // An earlier block: the last one whose first number is not above `number`.
            var low = 0
            var high = blocks.count - 1
            while low < high {
                let middle = (low + high + 1) / 2
                if blocks[middle].first <= number { low = middle } else { high = middle - 1 }
            }
            block = blocks[low]
            guard number >= block.first else { return nil }
        }
        let index = number - block.first
        return index < Self.blockSize ? block.offset + Int(index) : nil
    }

    subscript(key: ObjectKey) -> NSManagedObject? {
        get {
            guard let slot = temporarySlot(of: key) else { return map[key] }
            // Numbers are unique in the process, so only the root entity remains to check.
            guard let object = temporaries[slot], object.storedObjectID?.key == key else { return nil }
            return object
        }
        set {
            guard let slot = temporarySlot(of: key) else {
                map[key] = newValue
                return
            }
            let wasPresent = temporaries[slot] != nil
            temporaries[slot] = newValue
            if newValue == nil {
                if wasPresent { removedTemporary() }
            } else if !wasPresent {
                temporaryCount += 1
            }
        }
    }

    /// The object registered under a permanent key, registering the one `make` returns if there
    /// is none (one probe of the map). `make` must not register objects itself.
    func object(forPermanentKey key: ObjectKey, registeringIfAbsent make: () -> NSManagedObject) -> (object: NSManagedObject, registered: Bool) {
        precondition(key.primaryKey > 0, "Not a permanent key")
        let (object, added) = map.value(forKey: key, addingIfAbsent: make)
        return (object, added)
    }

    /// Removes a key; returns the object it had.
    @discardableResult
    func removeValue(forKey key: ObjectKey) -> NSManagedObject? {
        guard let slot = temporarySlot(of: key) else { return map.removeValue(forKey: key) }
        guard let object = temporaries[slot] else { return nil }
        temporaries[slot] = nil
        removedTemporary()
        return object
    }

    private func removedTemporary() {
        temporaryCount -= 1
        if temporaryCount == 0 { forgetTemporaries() }
    }

    private func forgetTemporaries() {
        temporaries = []
        blocks = []
        unusedNumbers = 0..<0
        temporaryCount = 0
    }

    /// The registered objects, in unspecified order (a snapshot).
    var values: [NSManagedObject] {
        map.values + temporaries.lazy.compactMap { $0 }
    }

    /// Empties the registry and returns its objects in address order (see `FastHashMap`).
    func removeAllValuesInAddressOrder() -> [NSManagedObject] {
        var objects = map.removeAllValues()
        objects.append(contentsOf: temporaries.lazy.compactMap { $0 })
        objects.sortByAddress()
        forgetTemporaries()
        return objects
    }
}
