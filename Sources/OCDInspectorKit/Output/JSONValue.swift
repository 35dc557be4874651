import Foundation

/// A JSON value, built from the property-list and attribute values `ocd` prints.
///
/// Data becomes base64 text (as `plutil` and Core Data's metadata dumps show version hashes),
/// dates ISO 8601 text, UUIDs and URLs their string forms.
enum JSONValue: Encodable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case let (.bool(a), .bool(b)): a == b
        case let (.int(a), .int(b)): a == b
        case let (.double(a), .double(b)): a == b
        case let (.string(a), .string(b)): a == b
        case let (.array(a), .array(b)): a == b
        case let (.object(a), .object(b)): a.map(\.0) == b.map(\.0) && a.map(\.1) == b.map(\.1)
        default: false
        }
    }

    /// Converts a value read from a store, a model or a property list.
    init(_ value: Any?) {
        guard let value else { self = .null; return }
        // A Foundation number (from a property list) says by its type code whether it is a
        // Boolean; `as Bool` would take any 0 or 1 for one.
        if type(of: value) is NSNumber.Type, let number = value as? NSNumber {
            self = Self.number(number)
            return
        }
        switch value {
        case let value as JSONValue: self = value
        case let value as Bool: self = .bool(value)
        case let value as any BinaryInteger: self = Int64(exactly: value).map(JSONValue.int) ?? .string("\(value)")
        case let value as Double: self = value.isFinite ? .double(value) : .string("\(value)")
        case let value as Float: self = value.isFinite ? .double(Double(value)) : .string("\(value)")
        case let value as Decimal: self = .string("\(value)")
        case let value as [String: Any]: self = .object(value.keys.sorted().map { ($0, JSONValue(value[$0])) })
        case let value as [Any]: self = .array(value.map { JSONValue($0) })
        case let value as Set<AnyHashable>: self = .array(value.map { JSONValue($0.base) }.sorted { "\($0)" < "\($1)" })
        case let value as NSNumber: self = Self.number(value)
        default: self = .string(ValueText.plain(value))
        }
    }

    /// A Foundation number as a JSON Boolean, integer or double, by its type code.
    private static func number(_ number: NSNumber) -> JSONValue {
        switch UInt8(bitPattern: number.objCType.pointee) {
        case UInt8(ascii: "c"), UInt8(ascii: "B"):
            // Foundation makes Booleans `c` (char) numbers; a char holding another value is a number.
            return number.int64Value == 0 || number.int64Value == 1 ? .bool(number.boolValue) : .int(number.int64Value)
        case UInt8(ascii: "f"), UInt8(ascii: "d"):
            return number.doubleValue.isFinite ? .double(number.doubleValue) : .string("\(number)")
        default:
            return .int(number.int64Value)
        }
    }

    func encode(to encoder: Encoder) throws {
        switch self {
        case .null:
            var container = encoder.singleValueContainer()
            try container.encodeNil()
        case .bool(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .int(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .double(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .string(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .array(let values):
            var container = encoder.unkeyedContainer()
            for value in values { try container.encode(value) }
        case .object(let members):
            var container = encoder.container(keyedBy: MemberKey.self)
            for (key, value) in members { try container.encode(value, forKey: MemberKey(key)) }
        }
    }

    private struct MemberKey: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(_ string: String) { stringValue = string }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// The value as pretty-printed JSON text, members in the order given.
    func prettyPrinted() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .withoutEscapingSlashes]
        // Encoding a value built from strings, numbers and containers can't fail.
        let data = (try? encoder.encode(self)) ?? Data("null".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// The value as one line of JSON text, members in the order given (written directly, for
    /// exports of millions of values).
    func compact() -> String {
        var text = ""
        append(to: &text)
        return text
    }

    private func append(to text: inout String) {
        switch self {
        case .null: text += "null"
        case .bool(let value): text += value ? "true" : "false"
        case .int(let value): text += String(value)
        case .double(let value): text += value.isFinite ? "\(value)" : "null"
        case .string(let value): Self.appendQuoted(value, to: &text)
        case .array(let values):
            text += "["
            for (index, value) in values.enumerated() {
                if index > 0 { text += "," }
                value.append(to: &text)
            }
            text += "]"
        case .object(let members):
            text += "{"
            for (index, member) in members.enumerated() {
                if index > 0 { text += "," }
                Self.appendQuoted(member.0, to: &text)
                text += ":"
                member.1.append(to: &text)
            }
            text += "}"
        }
    }

    private static func appendQuoted(_ string: String, to text: inout String) {
        // Most strings need no escape: appended whole.
        if !string.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            text += "\""
            text += string
            text += "\""
            return
        }
        text += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case _ where scalar.value < 0x20:
                text += "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count) + String(scalar.value, radix: 16)
            default: text.unicodeScalars.append(scalar)
            }
        }
        text += "\""
    }
}
