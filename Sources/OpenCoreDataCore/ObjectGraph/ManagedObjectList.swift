/// An insertion-ordered set of managed objects keyed by identity.
///
/// Contexts track inserted, updated and deleted objects in these. Objects are kept in order with
/// a hole where one was removed (compacted when holes outnumber objects); their positions are
/// found by address in a `FastHashMap`, far cheaper than `NSObject`'s `hash` and `isEqual(_:)`.
struct ManagedObjectList: Sequence, ExpressibleByArrayLiteral {
    private var objects: [NSManagedObject?] = []
    private var positions = FastHashMap<ObjectIdentifier, Int>()

    init(arrayLiteral elements: NSManagedObject...) {
        for element in elements { append(element) }
    }

    /// Adds an object at the end unless it is already present.
    mutating func append(_ object: NSManagedObject) {
        if positions.insertIfAbsent(objects.count, forKey: ObjectIdentifier(object)) { objects.append(object) }
    }

    /// Removes an object; returns it if it was present.
    @discardableResult
    mutating func remove(_ object: NSManagedObject) -> NSManagedObject? {
        guard let position = positions.removeValue(forKey: ObjectIdentifier(object)) else { return nil }
        let removed = objects[position]
        objects[position] = nil
        if objects.count > 16 && positions.count * 2 < objects.count { compact() }
        return removed
    }

    func contains(_ object: NSManagedObject) -> Bool { positions[ObjectIdentifier(object)] != nil }
    var isEmpty: Bool { positions.isEmpty }
    var count: Int { positions.count }
    /// Exact, so collections built from the list (the notifications' sets) allocate once.
    var underestimatedCount: Int { positions.count }
    /// The objects in insertion order.
    var elements: [NSManagedObject] { objects.compactMap { $0 } }

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

    /// Closes the holes left by removed objects.
    private mutating func compact() {
        objects = objects.filter { $0 != nil }
        positions = [:]
        positions.reserveCapacity(objects.count)
        for (position, object) in objects.enumerated() { positions[ObjectIdentifier(object!)] = position }
    }
}
