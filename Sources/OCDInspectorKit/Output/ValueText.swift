import Foundation
import OpenCoreData

/// How `ocd` prints a single value in text and CSV output.
enum ValueText {
    /// The text of a value: dates in ISO 8601, data in base64, objects by their object ID URI,
    /// to-many relationships by their count; an empty string for nil.
    static func plain(_ value: Any?) -> String {
        guard let value else { return "" }
        switch value {
        case let value as String: return value
        case let value as Date: return iso8601(value)
        case let value as Data: return value.base64EncodedString()
        case let value as UUID: return value.uuidString
        case let value as URL: return value.absoluteString
        case let value as NSManagedObject: return value.objectID.uriRepresentation().absoluteString
        case let value as NSManagedObjectID: return value.uriRepresentation().absoluteString
        case let value as NSSet: return "\(value.count) objects"
        case let value as NSOrderedSet: return "\(value.count) objects"
        case let value as Set<NSManagedObject>: return "\(value.count) objects"
        case let value as Set<AnyHashable>: return "\(value.count) objects"
        case let value as [Any]: return "[" + value.map { $0 is String ? "\"\($0)\"" : plain($0) }.joined(separator: ", ") + "]"
        default: return "\(value)"
        }
    }

    /// ISO 8601 with fractional seconds only when there are some, in UTC.
    static func iso8601(_ date: Date) -> String {
        let whole = date.timeIntervalSince1970.rounded(.down) == date.timeIntervalSince1970
        let style = Date.ISO8601FormatStyle(includingFractionalSeconds: !whole)
        return date.formatted(style)
    }

    /// A JSON value for an attribute or key-path value, objects shown as in `plain(_:)`.
    static func json(_ value: Any?) -> JSONValue {
        switch value {
        case let value as Date: return .string(iso8601(value))
        case is NSManagedObject, is NSManagedObjectID, is NSSet, is NSOrderedSet, is Set<NSManagedObject>: return .string(plain(value))
        case let value as Set<AnyHashable>: return .string(plain(value))
        default: return JSONValue(value)
        }
    }
}
