import Foundation

/// One object's record in an `NSAtomicStore`: its ID and its persistent values by property name.
///
/// An attribute's value is kept as the attribute's type (`String`, `Int64`, `Date`, …, or
/// `NSNumber` and the other Foundation types); a to-one relationship's value is the destination's
/// cache node, a to-many's a set (or, ordered, an array or `NSOrderedSet`) of cache nodes. The
/// store also accepts destinations given as `NSManagedObjectID`s or managed objects, and `nil`
/// or `NSNull` for no value.
///
/// Subclass it to keep values some other way: the store reads a node's values only through
/// `value(forKey:)`.
open class NSAtomicStoreCacheNode: NSObject {
    /// The ID of the object the node records.
    public let objectID: NSManagedObjectID

    /// The node's values by property name; made at the first `setValue(_:forKey:)` when nil.
    open var propertyCache: NSMutableDictionary?

    /// Creates a node, without values, for the object with an ID (made with the store's
    /// `objectID(for:withReferenceObject:)`).
    public init(objectID: NSManagedObjectID) {
        self.objectID = objectID
        super.init()
    }

    /// The value of a property, read from `propertyCache`; nil when the node has none.
    open func value(forKey key: String) -> Any? {
        guard let value = propertyCache?.object(forKey: key as NSString) else { return nil }
        return value is NSNull ? nil : value
    }

    /// Sets the value of a property in `propertyCache` (nil removes it).
    open func setValue(_ value: Any?, forKey key: String) {
        let cache = propertyCache ?? {
            let made = NSMutableDictionary()
            propertyCache = made
            return made
        }()
        if let value {
            cache.setObject(value, forKey: key as NSString)
        } else {
            cache.removeObject(forKey: key as NSString)
        }
    }

    open override var description: String {
        "<\(Swift.type(of: self)) \(objectID)>"
    }
}
