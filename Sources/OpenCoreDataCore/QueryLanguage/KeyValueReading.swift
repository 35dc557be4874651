import Foundation

/// A type whose properties a predicate, expression or sort descriptor can read by name.
public protocol KeyValueCodingReadable: AnyObject {
    /// The value of the property named `key`, or nil when there is none.
    func value(forKey key: String) -> Any?
}

/// What a store's predicate evaluation reads in place of a stored object (a row): in `==`, `!=`
/// and `IN` it equals whatever names the same object (a managed object, an object ID, another
/// stand-in), as a SQL store compares primary keys. A class, not a protocol: the evaluator asks
/// every object it compares whether it is one, and a class test is a few loads.
class StoredObjectStandIn {
    /// Whether `other` names the object this stands for (subclasses answer).
    func standsForTheSameObject(as other: AnyObject) -> Bool { false }
}

/// A collection operator that may appear as a key path component (`items.@count`, `@sum.amount`).
public enum CollectionOperator: String, Hashable, Sendable, CaseIterable {
    /// The number of elements.
    case count = "@count"
    /// The total of the values at the rest of the key path.
    case sum = "@sum"
    /// The mean of the values at the rest of the key path.
    case avg = "@avg"
    /// The smallest value at the rest of the key path.
    case min = "@min"
    /// The largest value at the rest of the key path.
    case max = "@max"
    /// The values at the rest of the key path, without repeats.
    case distinctUnionOfObjects = "@distinctUnionOfObjects"
    /// The values at the rest of the key path.
    case unionOfObjects = "@unionOfObjects"
    /// The values of nested collections, flattened, without repeats.
    case distinctUnionOfArrays = "@distinctUnionOfArrays"
    /// The values of nested collections, flattened.
    case unionOfArrays = "@unionOfArrays"
    /// The values of nested sets, flattened, without repeats.
    case distinctUnionOfSets = "@distinctUnionOfSets"
    /// The values of nested sets, flattened.
    case unionOfSets = "@unionOfSets"

    /// Looks an operator up by its spelling, with or without the leading `@`; case-insensitive.
    public init?(name: String) {
        let spelled = name.hasPrefix("@") ? name : "@" + name
        for candidate in CollectionOperator.allCases where candidate.rawValue.caseInsensitiveCompare(spelled) == .orderedSame {
            self = candidate
            return
        }
        return nil
    }
}

/// One step of a key path, split once when the key path expression is built.
public enum KeyPathComponent: Hashable, Sendable, CustomStringConvertible {
    /// Reads a property by name (`name`, `department`).
    case key(String)
    /// Applies a collection operator to the collection reached so far; the components after it
    /// are read from each element before the operator combines them.
    case collectionOperator(CollectionOperator)

    public var description: String {
        switch self {
        case .key(let key): return key
        case .collectionOperator(let op): return op.rawValue
        }
    }

    /// Splits a dotted key path into components. `@name` components naming a known collection
    /// operator become `.collectionOperator`; anything else is a plain key.
    public static func components(of keyPath: String) -> [KeyPathComponent] {
        if keyPath.isEmpty { return [] }
        return keyPath.split(separator: ".", omittingEmptySubsequences: false).map { part in
            let text = String(part)
            if text.hasPrefix("@"), let op = CollectionOperator(name: text) { return .collectionOperator(op) }
            return .key(text)
        }
    }

    /// Joins components back into a dotted key path.
    public static func keyPath(of components: [KeyPathComponent]) -> String {
        components.map(\.description).joined(separator: ".")
    }
}

/// Marks the collection types whose elements a predicate iterates (arrays, sets, ordered sets).
/// Strings, `Data` and dictionaries are deliberately not collections here.
protocol PredicateCollection {
    var predicateElements: [Any] { get }
    var predicateCount: Int { get }
    var predicateIsOrdered: Bool { get }
}

extension Array: PredicateCollection {
    var predicateElements: [Any] { map { $0 as Any } }
    var predicateCount: Int { count }
    var predicateIsOrdered: Bool { true }
}

extension ContiguousArray: PredicateCollection {
    var predicateElements: [Any] { map { $0 as Any } }
    var predicateCount: Int { count }
    var predicateIsOrdered: Bool { true }
}

extension ArraySlice: PredicateCollection {
    var predicateElements: [Any] { map { $0 as Any } }
    var predicateCount: Int { count }
    var predicateIsOrdered: Bool { true }
}

extension Set: PredicateCollection {
    var predicateElements: [Any] { map { $0 as Any } }
    var predicateCount: Int { count }
    var predicateIsOrdered: Bool { false }
}

extension NSArray: PredicateCollection {
    var predicateElements: [Any] { map { $0 } }
    var predicateCount: Int { count }
    var predicateIsOrdered: Bool { true }
}

extension NSSet: PredicateCollection {
    var predicateElements: [Any] { allObjects }
    var predicateCount: Int { count }
    var predicateIsOrdered: Bool { false }
}

extension NSOrderedSet: PredicateCollection {
    var predicateElements: [Any] { array }
    var predicateCount: Int { count }
    var predicateIsOrdered: Bool { true }
}

/// Lets a boxed `Optional` (an `Any` that holds `Optional<T>`) be unwrapped without knowing `T`.
protocol PredicateOptionalBox {
    var predicateUnwrapped: Any? { get }
}

extension Optional: PredicateOptionalBox {
    var predicateUnwrapped: Any? {
        switch self {
        case .none: return nil
        case .some(let wrapped): return wrapped
        }
    }
}

/// Cheap type tests. Casting a value type to a class or protocol type can make the runtime
/// bridge it to an Objective-C-style object first (a `Set` tested with `is NSNull` builds an
/// `NSSet`), so these tests look at the metatype instead of casting the value.
enum TypeTests {
    private static let nullType = ObjectIdentifier(NSNull.self)
    private static let stringType = ObjectIdentifier(String.self)
    private static let substringType = ObjectIdentifier(Substring.self)
    private static let dataType = ObjectIdentifier(Data.self)

    @inline(__always)
    static func isClass(_ value: Any) -> Bool {
        Swift.type(of: value) is AnyClass
    }

    @inline(__always)
    static func isNull(_ value: Any) -> Bool {
        ObjectIdentifier(Swift.type(of: value)) == nullType
    }

    @inline(__always)
    static func isOptionalBox(_ value: Any) -> Bool {
        Swift.type(of: value) is PredicateOptionalBox.Type
    }

    /// Strings and data are sequences, but never collections for predicates.
    static func isScalarSequence(_ value: Any) -> Bool {
        let type = ObjectIdentifier(Swift.type(of: value))
        return type == stringType || type == substringType || type == dataType
    }

    private static let scalarTypes: Set<ObjectIdentifier> = [
        ObjectIdentifier(String.self), ObjectIdentifier(Substring.self), ObjectIdentifier(Int.self),
        ObjectIdentifier(Int8.self), ObjectIdentifier(Int16.self), ObjectIdentifier(Int32.self),
        ObjectIdentifier(Int64.self), ObjectIdentifier(UInt.self), ObjectIdentifier(UInt8.self),
        ObjectIdentifier(UInt16.self), ObjectIdentifier(UInt32.self), ObjectIdentifier(UInt64.self),
        ObjectIdentifier(Double.self), ObjectIdentifier(Float.self), ObjectIdentifier(Bool.self),
        ObjectIdentifier(Decimal.self), ObjectIdentifier(Date.self), ObjectIdentifier(Data.self),
        ObjectIdentifier(UUID.self), ObjectIdentifier(URL.self),
    ]

    /// Whether the value is one of the standard attribute types (never a collection).
    @inline(__always)
    static func isKnownScalar(_ value: Any) -> Bool {
        scalarTypes.contains(ObjectIdentifier(Swift.type(of: value)))
    }
}

/// Reads keys and key paths from objects, dictionaries and collections.
public enum KeyPathWalker {
    /// Removes boxed optionals and maps `NSNull` to `nil`.
    @inline(__always)
    static func normalize(_ value: Any?) -> Any? {
        guard let value else { return nil }
        if TypeTests.isClass(value) { return TypeTests.isNull(value) ? nil : value }
        if TypeTests.isOptionalBox(value) { return normalize((value as! PredicateOptionalBox).predicateUnwrapped) }
        return value
    }

    /// The elements of a collection value, or nil if the value is not a collection.
    static func elements(of value: Any) -> [Any]? {
        if TypeTests.isKnownScalar(value) { return nil }
        if let collection = value as? PredicateCollection { return collection.predicateElements }
        return otherElements(of: value)
    }

    /// The number of elements of a collection value, or nil if the value is not a collection.
    static func count(of value: Any) -> Int? {
        if TypeTests.isKnownScalar(value) { return nil }
        if let collection = value as? PredicateCollection { return collection.predicateCount }
        return otherElements(of: value)?.count
    }

    /// Collections other than the standard ones: any other `Sequence` (for example a live
    /// relationship proxy), except strings, data, dictionaries and key-value readable objects.
    private static func otherElements(of value: Any) -> [Any]? {
        let type = Swift.type(of: value)
        if type is AnyClass {
            if type is KeyValueCodingReadable.Type || type is NSString.Type || type is NSData.Type || type is NSDictionary.Type
                || type is NSNumber.Type || type is NSDate.Type || TypeTests.isNull(value) {
                return nil
            }
        } else {
            if TypeTests.isOptionalBox(value) {
                guard let inner = (value as! PredicateOptionalBox).predicateUnwrapped else { return nil }
                return elements(of: inner)
            }
            if TypeTests.isScalarSequence(value) || isDictionary(value) { return nil }
        }
        if let sequence = value as? any Sequence { return anyElements(sequence) }
        return nil
    }

    /// Whether a value is a collection that predicates iterate.
    static func isCollection(_ value: Any?) -> Bool {
        guard let value else { return false }
        return count(of: value) != nil
    }

    private static func anyElements<S: Sequence>(_ sequence: S) -> [Any] {
        sequence.map { $0 as Any }
    }

    private static func isDictionary(_ value: Any) -> Bool {
        value is [String: Any] || value is [AnyHashable: Any]
    }

    /// Reads one key from an object. Collections answer with the values of their elements
    /// (collection values flattened one level; a nil value stays in the result as `NSNull`, as
    /// key-value coding on Apple's collections does, so `ALL tags.label …` sees it).
    public static func value(of object: Any?, forKey key: String) -> Any? {
        guard let object else { return nil }
        if TypeTests.isClass(object), let readable = object as? KeyValueCodingReadable {
            return readable.value(forKey: key)
        }
        if let dictionary = object as? [String: Any] { return dictionary[key] }
        if let collection = elements(of: object) {
            var result: [Any] = []
            result.reserveCapacity(collection.count)
            for element in collection {
                guard let value = normalize(self.value(of: element, forKey: key)) else {
                    result.append(NSNull())
                    continue
                }
                if let nested = elements(of: value) { result.append(contentsOf: nested) } else { result.append(value) }
            }
            return result
        }
        if TypeTests.isClass(object) {
            if let dictionary = object as? NSDictionary { return dictionary.object(forKey: key) }
        } else {
            if let dictionary = object as? [AnyHashable: Any] { return dictionary[AnyHashable(key)] }
            if TypeTests.isOptionalBox(object) { return value(of: (object as! PredicateOptionalBox).predicateUnwrapped, forKey: key) }
        }
        if key == "self" { return object }
        return nil
    }

    /// Reads a dotted key path (split on every call; prefer the component form on hot paths).
    public static func value(of object: Any?, forKeyPath keyPath: String) -> Any? {
        value(of: object, components: KeyPathComponent.components(of: keyPath)[...])
    }

    /// Reads a pre-split key path.
    public static func value(of object: Any?, components: [KeyPathComponent]) -> Any? {
        value(of: object, components: components[...])
    }

    static func value(of object: Any?, components: ArraySlice<KeyPathComponent>) -> Any? {
        var current = object
        var index = components.startIndex
        while index < components.endIndex {
            switch components[index] {
            case .key(let key):
                // Boxed optionals and NSNull are left for the next step or the consumer to
                // unwrap: testing every value for them costs more than the rare cases need.
                current = value(of: current, forKey: key)
                if current == nil { return nil }
            case .collectionOperator(let op):
                return apply(op, to: current, remaining: components[(index + 1)...])
            }
            index += 1
        }
        return current
    }

    /// Applies a collection operator; `remaining` is read from each element first.
    static func apply(_ op: CollectionOperator, to value: Any?, remaining: ArraySlice<KeyPathComponent>) -> Any? {
        guard let value = normalize(value) else { return op == .count ? 0 : nil }
        if op == .count && remaining.isEmpty { return count(of: value) }
        guard let elements = elements(of: value) else { return nil }
        var values: [Any] = []
        values.reserveCapacity(elements.count)
        for element in elements {
            let read = remaining.isEmpty ? normalize(element) : normalize(self.value(of: element, components: remaining))
            guard let read else { continue }
            switch op {
            case .unionOfArrays, .distinctUnionOfArrays, .unionOfSets, .distinctUnionOfSets:
                if let nested = self.elements(of: read) { values.append(contentsOf: nested) } else { values.append(read) }
            default:
                values.append(read)
            }
        }
        switch op {
        case .count: return values.count
        case .sum: return NumericArithmetic.sum(values)
        case .avg: return NumericArithmetic.average(values)
        case .min: return ValueComparison.extreme(values, wantMaximum: false)
        case .max: return ValueComparison.extreme(values, wantMaximum: true)
        case .unionOfObjects, .unionOfArrays, .unionOfSets: return values
        case .distinctUnionOfObjects, .distinctUnionOfArrays, .distinctUnionOfSets: return ValueComparison.distinct(values)
        }
    }
}
