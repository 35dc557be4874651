import Foundation

/// A type whose properties a predicate, expression or sort descriptor can read by name.
public protocol KeyValueCodingReadable: AnyObject {
    func value(forKey key: String) -> Any?
}

/// A collection operator that may appear as a key path component (`items.@count`, `@sum.amount`).
public enum CollectionOperator: String, Hashable, Sendable, CaseIterable {
    case count = "@count"
    case sum = "@sum"
    case avg = "@avg"
    case min = "@min"
    case max = "@max"
    case distinctUnionOfObjects = "@distinctUnionOfObjects"
    case unionOfObjects = "@unionOfObjects"
    case distinctUnionOfArrays = "@distinctUnionOfArrays"
    case unionOfArrays = "@unionOfArrays"
    case distinctUnionOfSets = "@distinctUnionOfSets"
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
    var predicateIsOrdered: Bool { get }
}

extension Array: PredicateCollection {
    var predicateElements: [Any] { map { $0 as Any } }
    var predicateIsOrdered: Bool { true }
}

extension ContiguousArray: PredicateCollection {
    var predicateElements: [Any] { map { $0 as Any } }
    var predicateIsOrdered: Bool { true }
}

extension ArraySlice: PredicateCollection {
    var predicateElements: [Any] { map { $0 as Any } }
    var predicateIsOrdered: Bool { true }
}

extension Set: PredicateCollection {
    var predicateElements: [Any] { map { $0 as Any } }
    var predicateIsOrdered: Bool { false }
}

extension NSArray: PredicateCollection {
    var predicateElements: [Any] { map { $0 } }
    var predicateIsOrdered: Bool { true }
}

extension NSSet: PredicateCollection {
    var predicateElements: [Any] { allObjects }
    var predicateIsOrdered: Bool { false }
}

extension NSOrderedSet: PredicateCollection {
    var predicateElements: [Any] { array }
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

/// Reads keys and key paths from objects, dictionaries and collections.
public enum KeyPathWalker {
    /// Removes boxed optionals and maps `NSNull` to `nil`.
    @inline(__always)
    static func normalize(_ value: Any?) -> Any? {
        guard let value else { return nil }
        if value is NSNull { return nil }
        if let box = value as? PredicateOptionalBox { return normalize(box.predicateUnwrapped) }
        return value
    }

    /// The elements of a collection value, or nil if the value is not a collection.
    static func elements(of value: Any) -> [Any]? {
        if value is String || value is Data { return nil }
        if let collection = value as? PredicateCollection { return collection.predicateElements }
        if let box = value as? PredicateOptionalBox {
            guard let inner = box.predicateUnwrapped else { return nil }
            return elements(of: inner)
        }
        if value is KeyValueCodingReadable || value is NSString || value is NSData || value is NSDictionary { return nil }
        if isDictionary(value) { return nil }
        if let sequence = value as? any Sequence { return anyElements(sequence) }
        return nil
    }

    /// Whether a value is a collection that predicates iterate.
    static func isCollection(_ value: Any?) -> Bool {
        guard let value else { return false }
        return elements(of: value) != nil
    }

    private static func anyElements<S: Sequence>(_ sequence: S) -> [Any] {
        sequence.map { $0 as Any }
    }

    private static func isDictionary(_ value: Any) -> Bool {
        value is [String: Any] || value is [AnyHashable: Any]
    }

    /// Reads one key from an object. Collections answer with the values of their elements
    /// (collection values flattened one level, nil values dropped).
    public static func value(of object: Any?, forKey key: String) -> Any? {
        guard let object else { return nil }
        if let readable = object as? KeyValueCodingReadable {
            return readable.value(forKey: key)
        }
        if let dictionary = object as? [String: Any] { return dictionary[key] }
        if let collection = elements(of: object) {
            var result: [Any] = []
            result.reserveCapacity(collection.count)
            for element in collection {
                guard let value = normalize(self.value(of: element, forKey: key)) else { continue }
                if let nested = elements(of: value) { result.append(contentsOf: nested) } else { result.append(value) }
            }
            return result
        }
        if let dictionary = object as? NSDictionary { return dictionary.object(forKey: key) }
        if let dictionary = object as? [AnyHashable: Any] { return dictionary[AnyHashable(key)] }
        if let box = object as? PredicateOptionalBox { return value(of: box.predicateUnwrapped, forKey: key) }
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
                current = normalize(value(of: current, forKey: key))
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
        guard let elements = elements(of: value) else { return nil }
        if op == .count && remaining.isEmpty { return elements.count }
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
