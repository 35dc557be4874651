import Foundation
import GRDB
import GRDBSQLite

/// Converts attribute values to and from SQLite columns, in Core Data's encodings: dates as
/// seconds since 2001-01-01, UUIDs as 16-byte blobs, URLs as text, booleans as 0/1, transformable
/// values as the data their transformer produces.
enum SQLiteValueCoding {
    /// How to read one column into a slot.
    enum ColumnKind {
        case int16, int32, int64, bool, double, float, decimal, string, date, data, uuid, uri
        case transformable(NSAttributeDescription)
        case toOne(NSEntityDescription)
        case undefined

        init(_ property: NSPropertyDescription) {
            if let relationship = property as? NSRelationshipDescription {
                self = .toOne(relationship.destinationEntity!)
                return
            }
            let attribute = property as! NSAttributeDescription
            switch attribute.attributeType {
            case .integer16AttributeType: self = .int16
            case .integer32AttributeType: self = .int32
            case .integer64AttributeType: self = .int64
            case .booleanAttributeType: self = .bool
            case .doubleAttributeType: self = .double
            case .floatAttributeType: self = .float
            case .decimalAttributeType: self = .decimal
            case .stringAttributeType: self = .string
            case .dateAttributeType: self = .date
            case .binaryDataAttributeType: self = .data
            case .UUIDAttributeType: self = .uuid
            case .URIAttributeType: self = .uri
            case .transformableAttributeType: self = .transformable(attribute)
            default: self = .undefined
            }
        }
    }

    /// Reads column `index` of the current row. To-one columns become IDs through `makeID`.
    @inline(__always)
    static func read(_ statement: OpaquePointer, _ index: Int32, _ kind: ColumnKind, makeID: (NSEntityDescription, Int64) -> NSManagedObjectID?) -> Any? {
        let type = sqlite3_column_type(statement, index)
        if type == SQLITE_NULL { return nil }
        switch kind {
        case .int64: return sqlite3_column_int64(statement, index)
        case .int32: return Int32(truncatingIfNeeded: sqlite3_column_int64(statement, index))
        case .int16: return Int16(truncatingIfNeeded: sqlite3_column_int64(statement, index))
        case .bool: return sqlite3_column_int64(statement, index) != 0
        case .double: return sqlite3_column_double(statement, index)
        case .float: return Float(sqlite3_column_double(statement, index))
        case .date: return Date(timeIntervalSinceReferenceDate: sqlite3_column_double(statement, index))
        case .string, .uri:
            guard let text = sqlite3_column_text(statement, index) else { return nil }
            let string = String(cString: text)
            if case .uri = kind { return URL(string: string) }
            return string
        case .decimal:
            if type == SQLITE_TEXT, let text = sqlite3_column_text(statement, index) {
                return Decimal(string: String(cString: text), locale: Locale(identifier: "en_US_POSIX"))
            }
            if type == SQLITE_INTEGER { return Decimal(sqlite3_column_int64(statement, index)) }
            return Decimal(sqlite3_column_double(statement, index))
        case .data:
            return blob(statement, index)
        case .uuid:
            guard let data = blob(statement, index), data.count == 16 else {
                if type == SQLITE_TEXT, let text = sqlite3_column_text(statement, index) { return UUID(uuidString: String(cString: text)) }
                return nil
            }
            return data.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }
        case .transformable(let attribute):
            return TransformableCoding.decode(blob(statement, index), for: attribute)
        case .toOne(let destination):
            return makeID(destination, sqlite3_column_int64(statement, index))
        case .undefined:
            return nil
        }
    }

    private static func blob(_ statement: OpaquePointer, _ index: Int32) -> Data? {
        let count = Int(sqlite3_column_bytes(statement, index))
        guard count > 0, let bytes = sqlite3_column_blob(statement, index) else { return Data() }
        return Data(bytes: bytes, count: count)
    }

    /// The database value to write for a slot's value.
    static func databaseValue(_ value: Any?, for property: NSPropertyDescription, primaryKeyOf: (NSManagedObjectID) -> Int64?) -> DatabaseValue {
        guard let value else { return .null }
        if let id = value as? NSManagedObjectID { return primaryKeyOf(id).map { $0.databaseValue } ?? .null }
        guard let attribute = property as? NSAttributeDescription else { return .null }
        switch attribute.attributeType {
        case .integer16AttributeType, .integer32AttributeType, .integer64AttributeType:
            return AttributeValueCoding.exactInteger(value).map { $0.databaseValue } ?? .null
        case .booleanAttributeType:
            return ((value as? Bool) ?? false).databaseValue
        case .doubleAttributeType, .floatAttributeType:
            return (AttributeValueCoding.numericValue(value) ?? 0).databaseValue
        case .decimalAttributeType:
            return ((value as? Decimal).map { "\($0)" } ?? "\(value)").databaseValue
        case .dateAttributeType:
            return ((value as? Date)?.timeIntervalSinceReferenceDate ?? 0).databaseValue
        case .stringAttributeType:
            return ((value as? String) ?? "\(value)").databaseValue
        case .URIAttributeType:
            return ((value as? URL)?.absoluteString ?? "\(value)").databaseValue
        case .binaryDataAttributeType:
            return ((value as? Data) ?? Data()).databaseValue
        case .UUIDAttributeType:
            guard let uuid = value as? UUID else { return .null }
            return withUnsafeBytes(of: uuid.uuid) { Data($0) }.databaseValue
        case .transformableAttributeType:
            return TransformableCoding.encode(value, for: attribute).map { $0.databaseValue } ?? .null
        default:
            return .null
        }
    }
}

/// Runs a transformable attribute's value transformer in Core Data's direction.
///
/// For the "unarchive from data" transformers (the default), `reverseTransformedValue` archives and
/// `transformedValue` unarchives; for any other transformer `transformedValue` produces the stored
/// data and `reverseTransformedValue` reads it back.
enum TransformableCoding {
    private static func transformer(for attribute: NSAttributeDescription) -> (ValueTransformer, unarchiving: Bool) {
        let name = attribute.valueTransformerName ?? NSValueTransformerName.secureUnarchiveFromDataTransformerName.rawValue
        guard let transformer = ValueTransformer.named(NSValueTransformerName(name)) else {
            preconditionFailure("No ValueTransformer is registered under the name \(name) for attribute \(attribute.name); register it with ValueTransformer.setValueTransformer(_:forName:).")
        }
        return (transformer, transformer is NSSecureUnarchiveFromDataTransformer)
    }

    static func encode(_ value: Any, for attribute: NSAttributeDescription) -> Data? {
        let (transformer, unarchiving) = transformer(for: attribute)
        return (unarchiving ? transformer.reverseTransformedValue(value) : transformer.transformedValue(value)) as? Data
    }

    static func decode(_ data: Data?, for attribute: NSAttributeDescription) -> Any? {
        guard let data else { return nil }
        let (transformer, unarchiving) = transformer(for: attribute)
        return unarchiving ? transformer.transformedValue(data) : transformer.reverseTransformedValue(data)
    }
}
