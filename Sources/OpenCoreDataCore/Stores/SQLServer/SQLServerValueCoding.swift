import Foundation

/// Attribute values as a server's column values and back: integers as `integer`, dates as seconds
/// since 2001 (as Core Data stores them), decimals as `numeric`, UUIDs as `uuid`, URLs as text,
/// transformable values as their transformer's bytes.
enum SQLServerValueCoding {
    /// The column value of an attribute's value (nil is `.null`).
    static func encode(_ value: Any?, for attribute: NSAttributeDescription) -> SQLServerValue {
        guard let value, !(value is NSNull) else { return .null }
        switch attribute.attributeType {
        case .integer16AttributeType, .integer32AttributeType, .integer64AttributeType:
            return AttributeValueCoding.exactInteger(value).map(SQLServerValue.integer) ?? .null
        case .booleanAttributeType:
            if let bool = value as? Bool { return .boolean(bool) }
            return AttributeValueCoding.exactInteger(value).map { .boolean($0 != 0) } ?? .null
        case .doubleAttributeType, .floatAttributeType:
            return AttributeValueCoding.numericValue(value).map(SQLServerValue.real) ?? .null
        case .decimalAttributeType:
            if let decimal = value as? Decimal { return .decimal(decimal) }
            return AttributeValueCoding.numericValue(value).map { .decimal(Decimal($0)) } ?? .null
        case .dateAttributeType:
            return (value as? Date).map { .real($0.timeIntervalSinceReferenceDate) } ?? .null
        case .stringAttributeType:
            return (value as? String).map(SQLServerValue.text) ?? .null
        case .URIAttributeType:
            return (value as? URL).map { .text($0.absoluteString) } ?? .null
        case .UUIDAttributeType:
            return (value as? UUID).map(SQLServerValue.uuid) ?? .null
        case .binaryDataAttributeType:
            return (value as? Data).map(SQLServerValue.bytes) ?? .null
        case .transformableAttributeType:
            return TransformableCoding.encode(value, for: attribute).map(SQLServerValue.bytes) ?? .null
        default:
            return .null
        }
    }

    /// An attribute's value in its canonical Swift type, from its column (nil for `.null`).
    static func decode(_ value: SQLServerValue, for attribute: NSAttributeDescription) -> Any? {
        switch (attribute.attributeType, value) {
        case (_, .null): return nil
        case (.integer16AttributeType, .integer(let number)): return Int16(truncatingIfNeeded: number)
        case (.integer32AttributeType, .integer(let number)): return Int32(truncatingIfNeeded: number)
        case (.integer64AttributeType, .integer(let number)): return number
        case (.booleanAttributeType, .boolean(let bool)): return bool
        case (.booleanAttributeType, .integer(let number)): return number != 0
        case (.doubleAttributeType, .real(let number)): return number
        case (.floatAttributeType, .real(let number)): return Float(number)
        case (.decimalAttributeType, .decimal(let number)): return number
        case (.dateAttributeType, .real(let seconds)): return Date(timeIntervalSinceReferenceDate: seconds)
        case (.stringAttributeType, .text(let text)): return text
        case (.URIAttributeType, .text(let text)): return URL(string: text)
        case (.UUIDAttributeType, .uuid(let uuid)): return uuid
        case (.binaryDataAttributeType, .bytes(let data)): return data
        case (.transformableAttributeType, .bytes(let data)): return TransformableCoding.decode(data, for: attribute)
        default: return nil
        }
    }

    /// An integer column (`Z_PK`, `Z_ENT`, `Z_OPT`, a to-one key).
    static func integer(_ value: SQLServerValue) -> Int64? {
        if case .integer(let number) = value { return number }
        return nil
    }

    /// A value as text that keeps its type, for a history tombstone column (which holds values of
    /// different attributes): a letter, `:`, then the value (doubles by their bits, so exactly).
    static func tombstoneText(_ value: SQLServerValue) -> String? {
        switch value {
        case .null: nil
        case .integer(let number): "i:\(number)"
        case .real(let number): "r:\(String(number.bitPattern, radix: 16))"
        case .boolean(let bool): bool ? "b:1" : "b:0"
        case .decimal(let number): "d:\(number)"
        case .text(let text): "t:\(text)"
        case .bytes(let data): "x:\(data.base64EncodedString())"
        case .uuid(let uuid): "u:\(uuid.uuidString)"
        }
    }

    /// The value `tombstoneText` wrote (nil for text it didn't write).
    static func value(fromTombstoneText text: String) -> SQLServerValue? {
        guard text.count >= 2, text.dropFirst().first == ":" else { return nil }
        let body = String(text.dropFirst(2))
        switch text.first {
        case "i": return Int64(body).map(SQLServerValue.integer)
        case "r": return UInt64(body, radix: 16).map { .real(Double(bitPattern: $0)) }
        case "b": return .boolean(body == "1")
        case "d": return Decimal(string: body, locale: Locale(identifier: "en_US_POSIX")).map(SQLServerValue.decimal)
        case "t": return .text(body)
        case "x": return Data(base64Encoded: body).map(SQLServerValue.bytes)
        case "u": return UUID(uuidString: body).map(SQLServerValue.uuid)
        default: return nil
        }
    }
}
