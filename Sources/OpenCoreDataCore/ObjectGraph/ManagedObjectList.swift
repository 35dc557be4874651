/// An insertion-ordered set of managed objects keyed by identity.
///
/// Contexts track inserted, updated and deleted objects (and those changed since the last
/// `processPendingChanges()`) in these, one list of each `Kind` per context. Objects are kept in
/// order with a hole where one was removed (compacted when holes outnumber objects).
///
/// An object remembers its position in each kind of list (`NSManagedObject.listPositions`), so
/// adding, finding and removing touch only the object and one array element: no hash table, whose
/// growth and scattered probes dominated inserting many objects. A remembered position is only a
/// hint: an object is a member exactly when the list holds that object at that position, so a
/// position left behind by a list that was emptied or copied is never mistaken for membership.
/// (An object lives in one context, so only one list of each kind ever sets its position.)
struct ManagedObjectList: Sequence {
    /// Which of a context's lists this is: each kind has its own position in every object.
    enum Kind: Int, CaseIterable {
        case inserted, updated, deleted, pendingInserted, pendingUpdated, pendingDeleted
    }

    /// An object's position in each kind of list (a hint; see `ManagedObjectList`).
    struct Positions {
        private var storage: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) = (0, 0, 0, 0, 0, 0)

        subscript(kind: Kind) -> Int {
            @inline(__always) get {
                withUnsafeBytes(of: storage) { Int($0.load(fromByteOffset: kind.rawValue * 4, as: UInt32.self)) }
            }
            @inline(__always) set {
                withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: UInt32(truncatingIfNeeded: newValue), toByteOffset: kind.rawValue * 4, as: UInt32.self) }
            }
        }
    }

    /// The kind of list, which says which position of an object it uses.
    let kind: Kind
    private var objects: [NSManagedObject?] = []
    /// The number of objects (holes not counted).
    private(set) var count = 0
    /// Changes whenever an object is added or removed (a cheap test that the members are the same).
    private(set) var version = 0

    init(_ kind: Kind) {
        self.kind = kind
    }

    /// Adds an object at the end unless it is already present.
    @inline(__always)
    mutating func append(_ object: NSManagedObject) {
        if contains(object) { return }
        coreDataPrecondition(objects.count < Int(UInt32.max), "Too many changed objects in one context.")
        object.listPositions[kind] = objects.count
        objects.append(object)
        count += 1
        version &+= 1
    }

    /// Removes an object; returns it if it was present.
    @discardableResult
    mutating func remove(_ object: NSManagedObject) -> NSManagedObject? {
        guard contains(object) else { return nil }
        objects[object.listPositions[kind]] = nil
        count -= 1
        version &+= 1
        if objects.count > 16 && count * 2 < objects.count { compact() }
        return object
    }

    /// Empties the list (the objects' remembered positions become stale hints).
    mutating func removeAll() {
        objects = []
        count = 0
        version &+= 1
    }

    @inline(__always)
    func contains(_ object: NSManagedObject) -> Bool {
        let position = object.listPositions[kind]
        return position < objects.count && objects[position] === object
    }

    var isEmpty: Bool { count == 0 }
    /// Exact, so collections built from the list (the notifications' sets) allocate once.
    var underestimatedCount: Int { count }
    /// The first object in insertion order.
    var first: NSManagedObject? { objects.first { $0 != nil } ?? nil }
    /// The last object in insertion order.
    var last: NSManagedObject? { objects.last { $0 != nil } ?? nil }
    /// The objects in insertion order.
    var elements: [NSManagedObject] {
        if count == objects.count { return objects.map { $0.unsafelyUnwrapped } }
        return objects.compactMap { $0 }
    }

    func makeIterator() -> Iterator { Iterator(base: objects.makeIterator()) }

    /// Iterates the objects in insertion order, skipping the holes of removed ones.
    struct Iterator: IteratorProtocol {
        var base: IndexingIterator<[NSManagedObject?]>

        mutating func next() -> NSManagedObject? {
            while let slot = base.next() {
                if let object = slot { return object }
            }
            return nil
        }
    }

    /// Closes the holes left by removed objects, updating the objects' positions.
    private mutating func compact() {
        objects = objects.filter { $0 != nil }
        for (position, object) in objects.enumerated() { object.unsafelyUnwrapped.listPositions[kind] = position }
    }
}
