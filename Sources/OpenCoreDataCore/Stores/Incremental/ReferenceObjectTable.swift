import Foundation

/// How an `NSIncrementalStore`'s reference objects become the primary keys object IDs carry.
///
/// A positive integer below `surrogateBase` (an `Int`, `Int64`, other fixed-width integer or
/// integral `NSNumber`) is its own key, so such IDs are the same in every process and their
/// `uriRepresentation()` names the reference (`…/p42`). Any other reference (a `String`, a `UUID`,
/// any `Hashable` object) gets a surrogate key from `surrogateBase` up, kept in both directions
/// for the store's lifetime: within the process the same reference always gives the same ID.
///
/// Invariant: `references[i]` is the reference whose key is `surrogateBase + i`, and
/// `keys[references[i]] == surrogateBase + i`.
struct ReferenceObjectTable {
    /// The first surrogate key: integer references at or above it are kept as surrogates too.
    static let surrogateBase: Int64 = 1 << 62

    private var keys: [AnyHashable: Int64] = [:]
    private var references: [AnyHashable] = []
    /// The integer type the store's integer references came as, to give them back as such.
    private var integerStyle: IntegerStyle = .int

    private enum IntegerStyle { case int, int64, number }

    /// The key for a reference object, made on first use. Nil when the reference can't be a key
    /// (it is not `Hashable`).
    mutating func key(for reference: Any) -> Int64? {
        if let (value, style) = Self.integer(reference), value > 0, value < Self.surrogateBase {
            integerStyle = style
            return value
        }
        guard let hashable = reference as? AnyHashable else { return nil }
        if let key = keys[hashable] { return key }
        let key = Self.surrogateBase + Int64(references.count)
        keys[hashable] = key
        references.append(hashable)
        return key
    }

    /// The reference object a key was made from.
    func reference(for key: Int64) -> Any? {
        guard key >= Self.surrogateBase else {
            switch integerStyle {
            case .int: return Int(key)
            case .int64: return key
            case .number: return NSNumber(value: key)
            }
        }
        let index = Int(key - Self.surrogateBase)
        return references.indices.contains(index) ? references[index].base : nil
    }

    /// An integer reference's value and the style to give it back in.
    private static func integer(_ reference: Any) -> (Int64, IntegerStyle)? {
        switch reference {
        case let value as Int: return (Int64(value), .int)
        case let value as Int64: return (value, .int64)
        case let value as Int32: return (Int64(value), .int)
        case let value as Int16: return (Int64(value), .int)
        case let value as UInt: return value <= UInt(Int64.max) ? (Int64(value), .int) : nil
        case let value as UInt32: return (Int64(value), .int)
        case let value as NSNumber:
            // A fraction is not an integer reference.
            guard value.doubleValue == Double(value.int64Value) else { return nil }
            return (value.int64Value, .number)
        default: return nil
        }
    }
}

extension LockedValue where Value == ReferenceObjectTable {
    /// The key of the ID made from a reference object, for `caller` (a store's public method);
    /// traps, as a programmer error, when the reference isn't `Hashable`.
    func key(forReference data: Any, caller: String) -> Int64 {
        guard let key = withLock({ $0.key(for: data) }) else {
            coreDataMisuse("\(caller): the reference object \(data) (\(type(of: data))) is not Hashable; use a string, a number or another Hashable value.")
        }
        return key
    }

    /// The reference object an ID of `store` was made from, for `caller`; traps when the ID is
    /// another store's, temporary, or wasn't made by `maker`.
    func reference(of objectID: NSManagedObjectID, in store: NSPersistentStore, caller: String, maker: String) -> Any {
        coreDataPrecondition(!objectID.isTemporaryID && objectID.storeIdentifier == store.identifier,
                             "\(caller): \(objectID) is not an ID of this store (a temporary ID, or another store's).")
        guard let reference = withLock({ $0.reference(for: objectID.primaryKey) }) else {
            coreDataMisuse("\(caller): \(objectID) was not made by this store's \(maker).")
        }
        return reference
    }
}
