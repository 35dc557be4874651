import Foundation

/// The stored values of one object, as an `NSIncrementalStore` gives them to Core Data
/// (`newValuesForObject(with:with:)`).
///
/// Values are keyed by property name: attributes as their values, to-one relationships as the
/// destination's `NSManagedObjectID` (or `NSNull` for none); to-many relationships are asked for
/// separately. The version is the object's optimistic-locking version: a store adds one each time
/// it saves a change to the object, so a context that read an older version sees a conflict.
/// Unchecked Sendable: not locked; a store makes a node and hands it over.
open class NSIncrementalStoreNode: NSObject, @unchecked Sendable {
    /// The ID of the object the values belong to.
    public let objectID: NSManagedObjectID
    /// The values' optimistic-locking version.
    public private(set) var version: UInt64
    private var values: [String: Any]

    /// Creates a node with the values of an object at a version.
    public init(objectID: NSManagedObjectID, withValues values: [String: Any], version: UInt64) {
        self.objectID = objectID
        self.values = values
        self.version = version
    }

    /// Replaces the values (all of them, or just those given: missing keys keep theirs) and the version.
    open func update(withValues values: [String: Any], version: UInt64) {
        self.values.merge(values) { _, new in new }
        self.version = version
    }

    /// The value of a property: nil when the node has none, `NSNull` for a stored nil.
    open func value(for prop: NSPropertyDescription) -> Any? {
        values[prop.name]
    }
}
