/// A context's registered objects by ID: at most one object per ID.
///
/// Objects live in one of three places, chosen by their key:
/// - **Temporary keys** the registry numbered itself (`nextTemporaryNumber()`, in blocks reserved
///   from `NSManagedObjectID`) live in a dense array indexed by number: registering a new object
///   is an append, with no hashing, no probing and no table to grow. (Inserting many objects once
///   spent most of its time growing and probing a hash table.)
/// - **Permanent keys in runs** live in `Run`s: dense arrays of consecutive primary keys of one
///   origin (root entity and store). A fetch in primary-key order (SQLite's natural order) and the
///   keys a save hands out are such runs, so registering them is an append too, and the table
///   costs 8 bytes an object instead of a hash table's 32 at up to twice the room. (The map's
///   table for a 200,000-row fetch was 16 MB of fresh memory, each 4 KB page a fault.)
/// - **Any other key** lives in a `FastHashMap`.
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
/// - Runs never overlap, and a key inside a run's range is never in the map: a run grows only
///   over keys the map and the other runs do not hold. A run with no objects left is dropped.
/// - There are at most `maximumRuns` runs; past that, new permanent keys go to the map.
final class ObjectRegistry {
    @exclusivity(unchecked) private var map = FastHashMap<ObjectKey, NSManagedObject>()
    @exclusivity(unchecked) private var temporaries: [NSManagedObject?] = []
    @exclusivity(unchecked) private var blocks: [(first: Int64, offset: Int)] = []
    @exclusivity(unchecked) private var unusedNumbers: Range<Int64> = 0..<0
    @exclusivity(unchecked) private var temporaryCount = 0
    @exclusivity(unchecked) private var runs: [Run] = []
    @exclusivity(unchecked) private var runObjectCount = 0

    /// Objects under consecutive primary keys of one origin, at `key.primaryKey - first`.
    private struct Run {
        let root: ObjectIdentifier
        let store: Int
        let first: Int64
        var slots: [NSManagedObject?] = []
        /// The non-nil slots.
        var count = 0

        /// One past the last key in the run.
        var end: Int64 { first + Int64(slots.count) }
    }

    /// Where a permanent key belongs among the runs.
    private enum RunPlace {
        /// In run `run`'s range, at `index`.
        case slot(run: Int, index: Int)
        /// Just past run `run`'s end (`gap` keys after it); the run may grow over it.
        case after(run: Int, gap: Int)
        /// Outside every run.
        case none
    }

    /// At most this many runs are kept (each lookup of a permanent key looks at them all).
    static let maximumRuns = 8
    /// A run grows over at most this many absent keys to reach a new one (deleted rows leave
    /// gaps in a table's primary keys).
    static let maximumGap = 16

    /// How many temporary numbers are reserved at a time (so inserting takes no lock).
    static let blockSize: Int64 = 1024

    /// The number of registered objects.
    var count: Int { map.count + temporaryCount + runObjectCount }

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

    /// Makes room for `count` more objects with permanent keys from `first` to `last` (a fetch's
    /// rows, or the keys a save handed out). Keys that ascend with few gaps get a run, others room
    /// in the map.
    func reserveCapacity(forPermanentKeysFrom first: ObjectKey, to last: ObjectKey, count: Int) {
        let span = last.primaryKey - first.primaryKey
        if first.primaryKey > 0, first.root == last.root, first.store == last.store, span >= 0, span < 2 * Int64(count) + Int64(Self.maximumGap) {
            switch runPlace(of: first) {
            case .after(let run, let gap):
                runs[run].slots.reserveCapacity(runs[run].slots.count + gap + Int(span) + 1)
                return
            case .none where runs.count < Self.maximumRuns && (map.isEmpty || map[first] == nil):
                var run = Run(root: first.root, store: first.store, first: first.primaryKey)
                run.slots.reserveCapacity(Int(span) + 1)
                runs.append(run)
                return
            default:
                break
            }
        }
        map.reserveCapacity(map.count + count)
    }

    /// Where a permanent key belongs among the runs (a scan of a few runs, no hashing).
    @inline(__always)
    private func runPlace(of key: ObjectKey) -> RunPlace {
        guard key.primaryKey > 0 else { return .none }
        var after = RunPlace.none
        var run = 0
        let runCount = runs.count
        while run < runCount {
            if runs[run].root == key.root && runs[run].store == key.store && key.primaryKey >= runs[run].first {
                let offset = key.primaryKey - runs[run].first
                let length = Int64(runs[run].slots.count)
                if offset < length { return .slot(run: run, index: Int(offset)) }
                if offset - length <= Int64(Self.maximumGap) { after = .after(run: run, gap: Int(offset - length)) }
            }
            run += 1
        }
        return after
    }

    /// Whether run `run` may grow from its end up to `key`: no other run holds a key of that
    /// stretch, and the map holds none of the keys before `key` (the caller has checked `key`).
    private func runMayGrow(_ run: Int, to key: ObjectKey) -> Bool {
        let end = runs[run].end
        var other = 0
        let runCount = runs.count
        while other < runCount {
            if other != run && runs[other].root == key.root && runs[other].store == key.store
                && runs[other].first <= key.primaryKey && runs[other].end > end { return false }
            other += 1
        }
        guard !map.isEmpty else { return true }
        for primaryKey in end..<key.primaryKey where map[ObjectKey(primaryKey: primaryKey, root: key.root, store: key.store)] != nil {
            return false
        }
        return true
    }

    /// Puts an object under a permanent key that neither a run's range nor the map holds: in a
    /// run when it can (growing one, or starting one), else in the map.
    private func addPermanent(_ object: NSManagedObject, forKey key: ObjectKey, place: RunPlace) {
        if case .after(let run, let gap) = place, runMayGrow(run, to: key) {
            if gap > 0 { runs[run].slots.append(contentsOf: repeatElement(nil, count: gap)) }
            runs[run].slots.append(object)
            countAdded(to: run)
        } else if key.primaryKey > 0, runs.count < Self.maximumRuns {
            runs.append(Run(root: key.root, store: key.store, first: key.primaryKey, slots: [object]))
            countAdded(to: runs.count - 1)
        } else {
            map[key] = object
        }
    }

    /// Puts an object in a run's empty slot.
    @inline(__always)
    private func fill(run: Int, at index: Int, with object: NSManagedObject) {
        runs[run].slots[index] = object
        countAdded(to: run)
    }

    /// Counts an object just put in a run.
    @inline(__always)
    private func countAdded(to run: Int) {
        runs[run].count += 1
        runObjectCount += 1
    }

    /// Registers or replaces (nil: removes) the object under a permanent key.
    @inline(__always)
    private func setPermanent(_ object: consuming NSManagedObject?, forKey key: ObjectKey) {
        let place = runPlace(of: key)
        if case .slot(let run, let index) = place {
            guard let object else {
                removeFromRun(run, at: index)
                return
            }
            if runs[run].slots[index] == nil { fill(run: run, at: index, with: object) } else { runs[run].slots[index] = object }
        } else if !map.isEmpty, map[key] != nil {
            map[key] = object
        } else if let object {
            addPermanent(object, forKey: key, place: place)
        }
    }

    /// Empties a run's slot; drops the run when it has no objects left.
    @discardableResult
    private func removeFromRun(_ run: Int, at index: Int) -> NSManagedObject? {
        guard let object = runs[run].slots[index] else { return nil }
        runs[run].slots[index] = nil
        runs[run].count -= 1
        runObjectCount -= 1
        if runs[run].count == 0 { runs.remove(at: run) }
        return object
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
            guard let slot = temporarySlot(of: key) else {
                if case .slot(let run, let index) = runPlace(of: key) { return runs[run].slots[index] }
                return map.isEmpty ? nil : map[key]
            }
            // Numbers are unique in the process, so only the root entity remains to check.
            guard let object = temporaries[slot], object.storedObjectID?.key == key else { return nil }
            return object
        }
        set {
            guard let slot = temporarySlot(of: key) else {
                setPermanent(newValue, forKey: key)
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
    /// is none. `make` must not register objects itself.
    func object(forPermanentKey key: ObjectKey, registeringIfAbsent make: () -> NSManagedObject) -> (object: NSManagedObject, registered: Bool) {
        assert(key.primaryKey > 0, "Not a permanent key")
        let place = runPlace(of: key)
        if case .slot(let run, let index) = place {
            if let object = runs[run].slots[index] { return (object, false) }
            let object = make()
            fill(run: run, at: index, with: object)
            return (object, true)
        }
        if !map.isEmpty, let object = map[key] { return (object, false) }
        let object = make()
        addPermanent(object, forKey: key, place: place)
        return (object, true)
    }

    /// Removes a key; returns the object it had.
    @discardableResult
    func removeValue(forKey key: ObjectKey) -> NSManagedObject? {
        guard let slot = temporarySlot(of: key) else {
            if case .slot(let run, let index) = runPlace(of: key) { return removeFromRun(run, at: index) }
            return map.isEmpty ? nil : map.removeValue(forKey: key)
        }
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
        var objects = map.values
        appendDenseObjects(to: &objects)
        return objects
    }

    /// Appends the objects of the temporaries array and of the runs.
    private func appendDenseObjects(to objects: inout [NSManagedObject]) {
        objects.reserveCapacity(objects.count + temporaryCount + runObjectCount)
        objects.append(contentsOf: temporaries.lazy.compactMap { $0 })
        for run in runs { objects.append(contentsOf: run.slots.lazy.compactMap { $0 }) }
    }

    /// Empties the registry, releasing the objects it alone keeps alive in memory order: the
    /// map's sorted by address (see `FastHashMap`), the dense arrays' as they lie, in key order,
    /// which is the order a save or a fetch made them in (no array of them, no retains).
    func removeAll() {
        var objects = map.removeAllValues()
        objects.sortByAddress()
        objects.removeAll()
        forgetTemporaries()
        runs = []
        runObjectCount = 0
    }

    /// Empties the registry and returns its objects in address order (see `FastHashMap`).
    func removeAllValuesInAddressOrder() -> [NSManagedObject] {
        var objects = map.removeAllValues()
        appendDenseObjects(to: &objects)
        objects.sortByAddress()
        forgetTemporaries()
        runs = []
        runObjectCount = 0
        return objects
    }
}
