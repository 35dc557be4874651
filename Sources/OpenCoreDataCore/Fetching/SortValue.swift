import Foundation

/// One sort key's value of one row, in the representation its column stores.
///
/// Integers (also Booleans) compare as Int64, doubles (also floats and dates, as seconds since
/// 2001) as Double, exactly as SQLite orders the stored values; strings and other values compare
/// through the sort descriptor, as in-memory sorts do. `null` sorts first in ascending order.
enum SortValue {
    case null
    case integer(Int64)
    case double(Double)
    case string(String)
    case other(Any)

    /// How a column stores its values, chosen from the attribute type at the end of its key path.
    enum Kind: UInt8 {
        case integer, double, string, other

        init(_ property: NSPropertyDescription?) {
            guard let attribute = property as? NSAttributeDescription else {
                self = .other
                return
            }
            switch attribute.attributeType {
            case .integer16AttributeType, .integer32AttributeType, .integer64AttributeType, .booleanAttributeType: self = .integer
            case .doubleAttributeType, .floatAttributeType, .dateAttributeType: self = .double
            case .stringAttributeType: self = .string
            default: self = .other
            }
        }
    }

    /// A value read in memory (`value(forKeyPath:)`), converted for a column of `kind`.
    init(_ value: Any?, kind: Kind) {
        guard let value else {
            self = .null
            return
        }
        // Plain numbers, the common case, without the runtime's general dynamic cast (even an
        // `is NSNull` test of a number tries bridging on Linux).
        switch kind {
        case .integer:
            if let number = ExistentialFastPath.load(value, as: Int64.self) { self = .integer(number); return }
            if let number = ExistentialFastPath.load(value, as: Int32.self) { self = .integer(Int64(number)); return }
            if let number = ExistentialFastPath.load(value, as: Int16.self) { self = .integer(Int64(number)); return }
        case .double:
            if let number = ExistentialFastPath.load(value, as: Double.self) { self = number.isNaN ? .null : .double(number); return }
        case .string:
            if let string = ExistentialFastPath.string(value) { self = .string(string); return }
        case .other:
            break
        }
        if value is NSNull {
            self = .null
            return
        }
        switch kind {
        case .integer:
            switch value {
            case let number as Int64: self = .integer(number)
            case let number as Int32: self = .integer(Int64(number))
            case let number as Int16: self = .integer(Int64(number))
            case let number as Int: self = .integer(Int64(number))
            case let flag as Bool: self = .integer(flag ? 1 : 0)
            default: self = .other(value)
            }
        case .double:
            let double: Double?
            switch value {
            case let number as Double: double = number
            case let number as Float: double = Double(number)
            case let date as Date: double = date.timeIntervalSinceReferenceDate
            case let number as Int64: double = Double(number)
            case let number as Int: double = Double(number)
            default: double = nil
            }
            if let double { self = double.isNaN ? .null : .double(double) } else { self = .other(value) }
        case .string:
            if let string = value as? String { self = .string(string) } else { self = .other(value) }
        case .other:
            self = .other(value)
        }
    }

    /// The value as `value(forKeyPath:)` would give it, for comparisons through a descriptor.
    var boxed: Any? {
        switch self {
        case .null: return nil
        case .integer(let value): return value
        case .double(let value): return value
        case .string(let value): return value
        case .other(let value): return value
        }
    }

    /// Compares two values of one column for a descriptor, honouring its direction.
    @inline(__always)
    static func compare(_ lhs: SortValue, _ rhs: SortValue, by descriptor: NSSortDescriptor) -> ComparisonResult {
        let ascending: ComparisonResult
        switch (lhs, rhs) {
        case (.null, .null): return .orderedSame
        case let (.integer(a), .integer(b)): ascending = a < b ? .orderedAscending : (a == b ? .orderedSame : .orderedDescending)
        case let (.double(a), .double(b)): ascending = a < b ? .orderedAscending : (a == b ? .orderedSame : .orderedDescending)
        case (.null, .integer), (.null, .double): ascending = .orderedAscending
        case (.integer, .null), (.double, .null): ascending = .orderedDescending
        default: return descriptor.compareValues(lhs.boxed, rhs.boxed)
        }
        if descriptor.ascending { return ascending }
        return ascending == .orderedAscending ? .orderedDescending : (ascending == .orderedSame ? .orderedSame : .orderedAscending)
    }
}
