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

    /// Converts a value set by the user to the attribute's canonical type when that is exact.
    @inline(__always)
    static func normalize(_ value: Any, for type: NSAttributeType) -> Any {
        switch type {
        case .integer16AttributeType:
            if ExistentialFastPath.isExactly(value, Int16.self) { return value }
            return exactInteger(value).flatMap { Int16(exactly: $0) } ?? value
        case .integer32AttributeType:
            if ExistentialFastPath.isExactly(value, Int32.self) { return value }
            return exactInteger(value).flatMap { Int32(exactly: $0) } ?? value
        case .integer64AttributeType:
            if ExistentialFastPath.isExactly(value, Int64.self) { return value }
            return exactInteger(value).flatMap { Int64(exactly: $0) } ?? value
        case .doubleAttributeType:
            if ExistentialFastPath.isExactly(value, Double.self) { return value }
            if let float = value as? Float { return Double(float) }
            if let integer = exactInteger(value), let double = Double(exactly: integer) { return double }
            if let number = value as? NSNumber, !(value is Bool) { return number.doubleValue }
            return value
        case .floatAttributeType:
            if value is Float { return value }
            if let double = value as? Double, let float = Float(exactly: double) { return float }
            if let integer = exactInteger(value), let float = Float(exactly: integer) { return float }
            return value
        case .decimalAttributeType:
            if value is Decimal { return value }
            if let integer = exactInteger(value) { return Decimal(integer) }
            if let double = value as? Double { return Decimal(double) }
            return value
        case .booleanAttributeType:
            if value is Bool { return value }
            if let integer = exactInteger(value), integer == 0 || integer == 1 { return integer == 1 }
            return value
        case .stringAttributeType:
            if ExistentialFastPath.isExactly(value, String.self) { return value }
            if let string = value as? NSString, !(value is String) { return string as String }
            return value
        case .URIAttributeType:
            if let url = value as? NSURL, !(value is URL) { return url as URL }
            return value
        case .binaryDataAttributeType:
            if let data = value as? NSData, !(value is Data) { return data as Data }
            return value
        default:
            return value
        }
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
        case let v as NSNumber: Int64(exactly: v.doubleValue)
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
