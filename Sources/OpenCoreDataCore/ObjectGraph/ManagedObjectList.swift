import OrderedCollections

/// An insertion-ordered set of managed objects keyed by identity.
///
/// Contexts track inserted, updated and deleted objects in these: hashing an `ObjectIdentifier`
/// is far cheaper than going through `NSObject`'s `hash` and `isEqual(_:)`.
struct ManagedObjectList: Sequence, ExpressibleByArrayLiteral {
    private var storage: OrderedDictionary<ObjectIdentifier, NSManagedObject> = [:]

    init(arrayLiteral elements: NSManagedObject...) {
        for element in elements { append(element) }
    }

    /// Adds an object at the end unless it is already present.
    mutating func append(_ object: NSManagedObject) {
        let key = ObjectIdentifier(object)
        if storage[key] == nil { storage[key] = object }
    }

    /// Removes an object; returns it if it was present.
    @discardableResult
    mutating func remove(_ object: NSManagedObject) -> NSManagedObject? {
        storage.removeValue(forKey: ObjectIdentifier(object))
    }

    func contains(_ object: NSManagedObject) -> Bool { storage[ObjectIdentifier(object)] != nil }
    var isEmpty: Bool { storage.isEmpty }
    var count: Int { storage.count }
    /// The objects in insertion order.
    var elements: [NSManagedObject] { Array(storage.values) }

    func makeIterator() -> OrderedDictionary<ObjectIdentifier, NSManagedObject>.Values.Iterator {
        storage.values.makeIterator()
    }
}
