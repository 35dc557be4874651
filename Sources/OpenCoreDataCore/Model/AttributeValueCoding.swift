import Foundation

/// The Swift values each attribute type holds, and the conversions between them.
///
/// Values are kept in one canonical Swift type per attribute type: `Int16`, `Int32`, `Int64`,
/// `Decimal`, `Double`, `Float`, `String`, `Bool`, `Date`, `Data`, `UUID`, `URL`; a transformable
/// attribute keeps whatever value the user set. Setting a value of another integer or floating-point
/// width is converted when the conversion is exact; any other value is kept as given and rejected by
/// validation at save (`NSManagedObjectValidationError`), never converted silently.
enum AttributeValueCoding {
    /// Parses an Xcode model's `defaultValueString` for an attribute type; nil when it is not valid.
    static func parseDefault(_ text: String, type: NSAttributeType) -> Any? {
        switch type {
        case .integer16AttributeType: Int16(text) ?? Double(text).flatMap { Int16(exactly: $0) }
        case .integer32AttributeType: Int32(text) ?? Double(text).flatMap { Int32(exactly: $0) }
        case .integer64AttributeType: Int64(text) ?? Double(text).flatMap { Int64(exactly: $0) }
        case .decimalAttributeType: Decimal(string: text, locale: Locale(identifier: "en_US_POSIX"))
        case .doubleAttributeType: Double(text)
        case .floatAttributeType: Float(text)
        case .booleanAttributeType: ["YES", "true", "1"].contains(text) ? true : (["NO", "false", "0"].contains(text) ? false : nil)
        case .stringAttributeType: text
        case .dateAttributeType: Double(text).map { Date(timeIntervalSinceReferenceDate: $0) }
        case .UUIDAttributeType: UUID(uuidString: text)
        case .URIAttributeType: URL(string: text)
        default: text
        }
    }

    /// Converts a value set by the user to the attribute's canonical type.
    ///
    /// Swift values of another width convert when the conversion is exact. Foundation's bridged
    /// values convert as Apple's Core Data stores them: an `NSNumber` through its `int64Value`,
    /// `boolValue`, `doubleValue`, `floatValue` or `decimalValue` (a fraction set on an integer
    /// attribute is truncated), `CGFloat` to `Double` or `Float`, and `NSString`, `NSDate`,
    /// `NSData`, `NSDecimalNumber`, `NSUUID` and `NSURL` to their Swift types. A number out of an
    /// integer attribute's range, and any other value, is kept as given and rejected by validation
    /// at save (1610 or 1620 for a number, `NSManagedObjectValidationError` otherwise).
    @inline(__always)
    static func normalize(_ value: Any, for type: NSAttributeType) -> Any {
        // Foundation's numbers, in one place: converted for the attribute, or kept (out of range, or
        // set on an attribute that isn't a number) for validation to refuse.
        if type.isNumeric || type == .booleanAttributeType, let number = bridgedNumber(value) {
            return convert(number, for: type) ?? value
        }
        switch type {
        case .integer16AttributeType:
            if ExistentialFastPath.isExactly(value, Int16.self) { return value }
            return exactInteger(value).flatMap { Int16(exactly: $0) } ?? value
        case .integer32AttributeType:
            if ExistentialFastPath.isExactly(value, Int32.self) { return value }
            return exactInteger(value).flatMap { Int32(exactly: $0) } ?? value
        case .integer64AttributeType:
            if ExistentialFastPath.isExactly(value, Int64.self) { return value }
            return exactInteger(value) ?? value
        case .doubleAttributeType:
            if ExistentialFastPath.isExactly(value, Double.self) { return value }
            if let float = value as? Float { return Double(float) }
            if let cgFloat = value as? CGFloat { return Double(cgFloat) }
            if let decimal = value as? Decimal { return NSDecimalNumber(decimal: decimal).doubleValue }
            if let integer = exactInteger(value), let double = Double(exactly: integer) { return double }
            return value
        case .floatAttributeType:
            if ExistentialFastPath.isExactly(value, Float.self) { return value }
            if let double = value as? Double { return Float(double) }
            if let cgFloat = value as? CGFloat { return Float(cgFloat) }
            if let decimal = value as? Decimal { return NSDecimalNumber(decimal: decimal).floatValue }
            if let integer = exactInteger(value), let float = Float(exactly: integer) { return float }
            return value
        case .decimalAttributeType:
            if ExistentialFastPath.isExactly(value, Decimal.self) { return value }
            if let integer = exactInteger(value) { return Decimal(integer) }
            if let double = value as? Double { return Decimal(double) }
            if let float = value as? Float { return Decimal(Double(float)) }
            return value
        case .booleanAttributeType:
            if ExistentialFastPath.isExactly(value, Bool.self) { return value }
            if let integer = exactInteger(value), integer == 0 || integer == 1 { return integer == 1 }
            return value
        case .stringAttributeType:
            if ExistentialFastPath.isExactly(value, String.self) { return value }
            if let string = value as? NSString { return string as String }
            if let substring = value as? Substring { return String(substring) }
            return value
        case .dateAttributeType:
            if ExistentialFastPath.isExactly(value, Date.self) { return value }
            if let date = value as? NSDate { return date as Date }
            return value
        case .UUIDAttributeType:
            if ExistentialFastPath.isExactly(value, UUID.self) { return value }
            if let uuid = value as? NSUUID { return uuid as UUID }
            return value
        case .URIAttributeType:
            if ExistentialFastPath.isExactly(value, URL.self) { return value }
            if let url = value as? NSURL { return url as URL }
            return value
        case .binaryDataAttributeType:
            if ExistentialFastPath.isExactly(value, Data.self) { return value }
            if let data = value as? NSData { return data as Data }
            return value
        default:
            return value
        }
    }

    /// An `NSNumber`'s value as a numeric or Boolean attribute stores it; nil for another type of
    /// attribute, or a number outside an integer attribute's range.
    @inline(__always)
    static func convert(_ number: NSNumber, for type: NSAttributeType) -> Any? {
        switch type {
        case .integer16AttributeType: integer(of: number).flatMap { Int16(exactly: $0) }
        case .integer32AttributeType: integer(of: number).flatMap { Int32(exactly: $0) }
        case .integer64AttributeType: integer(of: number)
        case .doubleAttributeType: number.doubleValue
        case .floatAttributeType: number.floatValue
        case .decimalAttributeType: number.decimalValue
        case .booleanAttributeType: number.boolValue
        default: nil
        }
    }

    /// The `NSNumber` (or `NSDecimalNumber`) a value is, found without the runtime's bridging casts:
    /// only a class instance is asked. On Linux `NSNumber is Bool` and `Int as? NSNumber` both
    /// hold, so a plain cast can't tell a Foundation number from a Swift one.
    @inline(__always)
    static func bridgedNumber(_ value: Any) -> NSNumber? {
        // Boxed as an NSNumber (what `NSNumber(value:)` returns): a type comparison and a load.
        if let number = ExistentialFastPath.instance(value, boxedAs: NSNumber.self) { return number }
        guard ExistentialFastPath.classInstanceAddress(value) != nil else { return nil }
        return value as? NSNumber
    }

    /// An `NSNumber`'s value as Apple's Core Data stores it in an integer column: its integer, or a
    /// floating-point value truncated toward zero; nil outside Int64. Read by the number's type
    /// code (`Int64(exactly:)` costs ten times more).
    @inline(__always)
    static func integer(of number: NSNumber) -> Int64? {
        // Type codes as numbers: a `UInt8(ascii:)` pattern is evaluated on every call.
        switch number.objCType.pointee {
        case 0x51, 0x4C: // "Q", "L": unsigned 64-bit
            let unsigned = number.uint64Value
            return unsigned <= UInt64(Int64.max) ? Int64(unsigned) : nil
        case 0x64, 0x66: // "d", "f": double, float
            let double = number.doubleValue
            guard double.isFinite else { return nil }
            return Int64(exactly: double.rounded(.towardZero))
        default:
            return number.int64Value
        }
    }

    /// Whether a value rejected by an integer attribute is a number outside its range: true when too
    /// large, false when too small, nil when it is no number or is in range.
    static func integerOverflow(_ value: Any, for type: NSAttributeType) -> Bool? {
        let range: ClosedRange<Double>
        switch type {
        case .integer16AttributeType: range = Double(Int16.min)...Double(Int16.max)
        case .integer32AttributeType: range = Double(Int32.min)...Double(Int32.max)
        case .integer64AttributeType: range = -9_223_372_036_854_775_808.0...9_223_372_036_854_775_807.0
        default: return nil
        }
        let measured: Double
        if let number = bridgedNumber(value) {
            measured = number.doubleValue
        } else if let integer = exactInteger(value) {
            measured = Double(integer)
        } else if let unsigned = value as? UInt64 {
            measured = Double(unsigned)
        } else if let unsigned = value as? UInt {
            measured = Double(unsigned)
        } else {
            return nil
        }
        if measured > range.upperBound || (type == .integer64AttributeType && measured >= range.upperBound) { return true }
        if measured < range.lowerBound { return false }
        return nil
    }

    /// Whether a (normalized) value has the attribute's canonical type.
    static func hasCanonicalType(_ value: Any, for type: NSAttributeType) -> Bool {
        switch type {
        case .integer16AttributeType: ExistentialFastPath.isExactly(value, Int16.self)
        case .integer32AttributeType: ExistentialFastPath.isExactly(value, Int32.self)
        case .integer64AttributeType: ExistentialFastPath.isExactly(value, Int64.self)
        case .decimalAttributeType: ExistentialFastPath.isExactly(value, Decimal.self)
        case .doubleAttributeType: ExistentialFastPath.isExactly(value, Double.self)
        case .floatAttributeType: ExistentialFastPath.isExactly(value, Float.self)
        case .booleanAttributeType: ExistentialFastPath.isExactly(value, Bool.self)
        case .stringAttributeType: ExistentialFastPath.isExactly(value, String.self)
        case .dateAttributeType: ExistentialFastPath.isExactly(value, Date.self)
        case .binaryDataAttributeType: ExistentialFastPath.isExactly(value, Data.self)
        case .UUIDAttributeType: ExistentialFastPath.isExactly(value, UUID.self)
        case .URIAttributeType: ExistentialFastPath.isExactly(value, URL.self)
        case .objectIDAttributeType: value is NSManagedObjectID
        case .transformableAttributeType, .undefinedAttributeType, .compositeAttributeType: true
        }
    }

    /// The value as an exact integer, for any Swift integer type or an integral NSNumber.
    static func exactInteger(_ value: Any) -> Int64? {
        switch value {
        case let v as Int: Int64(v)
        case let v as Int64: v
        case let v as Int32: Int64(v)
        case let v as Int16: Int64(v)
        case let v as Int8: Int64(v)
        case let v as UInt: Int64(exactly: v)
        case let v as UInt64: Int64(exactly: v)
        case let v as UInt32: Int64(v)
        case let v as UInt16: Int64(v)
        case let v as UInt8: Int64(v)
        case let v as Double: Int64(exactly: v)
        case let v as Float: Int64(exactly: v)
        case let v as NSNumber: Int64(exactly: v)
        default: nil
        }
    }

    /// The value as a Double, for numbers and dates, used by min/max validation.
    static func numericValue(_ value: Any) -> Double? {
        switch value {
        case let v as Double: v
        case let v as Float: Double(v)
        case let v as Decimal: NSDecimalNumber(decimal: v).doubleValue
        case let v as Date: v.timeIntervalSinceReferenceDate
        default: exactInteger(value).map(Double.init)
        }
    }
}
