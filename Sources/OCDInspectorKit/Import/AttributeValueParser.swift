import Foundation
import OpenCoreData

/// Converts a value read from JSON or CSV to the Swift type an attribute holds, or says why it can't.
///
/// Integers must fit the attribute's width, booleans are `true`/`false`/`yes`/`no`/`1`/`0`, dates
/// are ISO 8601 (or follow `dateFormat`), binary data is base64. Nothing is rounded or guessed.
struct AttributeValueParser {
    /// A `DateFormatter` pattern for dates (for example `d-MMM-yy`), read in UTC; ISO 8601 when nil.
    let dateFormat: String?
    private let formatter: DateFormatter?

    /// Creates a parser; dates follow `dateFormat` when given.
    init(dateFormat: String?) {
        self.dateFormat = dateFormat
        formatter = dateFormat.map { format in
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "UTC")
            formatter.dateFormat = format
            return formatter
        }
    }

    /// The attribute value for `raw`, which is nil, a `String`, `Bool`, `Int64` or `Double`.
    /// Throws a message naming what was expected.
    func value(_ raw: Any?, for attribute: NSAttributeDescription) throws -> Any? {
        guard let raw else { return nil }
        let type = attribute.attributeType
        switch type {
        case .integer16AttributeType: return try integer(raw, type, Int16.self)
        case .integer32AttributeType: return try integer(raw, type, Int32.self)
        case .integer64AttributeType: return try integer(raw, type, Int64.self)
        case .doubleAttributeType: return try floating(raw, type)
        case .floatAttributeType: return Float(try floating(raw, type))
        case .decimalAttributeType:
            if let number = raw as? Int64 { return Decimal(number) }
            if let number = raw as? Double { return Decimal(number) }
            if let text = raw as? String, let decimal = Decimal(string: text.trimmingCharacters(in: .whitespaces), locale: Locale(identifier: "en_US_POSIX")),
               !text.trimmingCharacters(in: .whitespaces).isEmpty { return decimal }
            throw mismatch(raw, "a decimal number")
        case .stringAttributeType:
            guard let text = raw as? String else { throw mismatch(raw, "a string") }
            return text
        case .booleanAttributeType:
            if let flag = raw as? Bool { return flag }
            if let number = raw as? Int64, number == 0 || number == 1 { return number == 1 }
            if let text = (raw as? String)?.trimmingCharacters(in: .whitespaces).lowercased() {
                if ["true", "yes", "1"].contains(text) { return true }
                if ["false", "no", "0"].contains(text) { return false }
            }
            throw mismatch(raw, "a boolean (true, false, yes, no, 1 or 0)")
        case .dateAttributeType:
            guard let text = (raw as? String)?.trimmingCharacters(in: .whitespaces), let date = date(text) else {
                throw mismatch(raw, dateFormat.map { "a date in the format \($0)" } ?? "an ISO 8601 date (2010-03-26 or 2010-03-26T12:00:00Z)")
            }
            return date
        case .binaryDataAttributeType:
            guard let text = raw as? String, let data = Data(base64Encoded: text) else { throw mismatch(raw, "base64-encoded data") }
            return data
        case .UUIDAttributeType:
            guard let text = raw as? String, let uuid = UUID(uuidString: text.trimmingCharacters(in: .whitespaces)) else { throw mismatch(raw, "a UUID") }
            return uuid
        case .URIAttributeType:
            guard let text = raw as? String, let url = URL(string: text.trimmingCharacters(in: .whitespaces)), url.scheme != nil else {
                throw mismatch(raw, "an absolute URL")
            }
            return url
        default:
            throw InspectorError("\(type.xcodeName) attributes can't be imported")
        }
    }

    private func integer<T: FixedWidthInteger>(_ raw: Any, _ type: NSAttributeType, _: T.Type) throws -> T {
        let wide: Int64?
        switch raw {
        case let number as Int64: wide = number
        case let number as Double: wide = number.rounded() == number ? Int64(exactly: number) : nil
        case let text as String: wide = Int64(text.trimmingCharacters(in: .whitespaces))
        default: wide = nil
        }
        guard let wide else { throw mismatch(raw, "an integer") }
        guard let value = T(exactly: wide) else { throw InspectorError("\(wide) does not fit an \(type.xcodeName) attribute (\(T.min)...\(T.max))") }
        return value
    }

    private func floating(_ raw: Any, _ type: NSAttributeType) throws -> Double {
        switch raw {
        case let number as Int64: return Double(number)
        case let number as Double: return number
        case let text as String:
            if let number = Double(text.trimmingCharacters(in: .whitespaces)) { return number }
        default: break
        }
        throw mismatch(raw, "a number")
    }

    private func date(_ text: String) -> Date? {
        if let formatter { return formatter.date(from: text) }
        for style in [Date.ISO8601FormatStyle(includingFractionalSeconds: true), Date.ISO8601FormatStyle()] {
            if let date = try? style.parse(text) { return date }
        }
        return try? Date.ISO8601FormatStyle().year().month().day().parse(text)
    }

    private func mismatch(_ raw: Any, _ expected: String) -> InspectorError {
        let shown = raw is String ? "'\(raw)'" : "\(raw)"
        return InspectorError("\(shown) is not \(expected)")
    }
}
