import Foundation
import GRDB
import GRDBSQLite

/// Converts attribute values to and from SQLite columns, in Core Data's encodings: dates as
/// seconds since 2001-01-01, UUIDs as 16-byte blobs, URLs as text, booleans as 0/1, transformable
/// values as the data their transformer produces.
enum SQLiteValueCoding {
    /// How to read one column into a slot.
    enum ColumnKind: UInt8 {
        case int16, int32, int64, bool, double, float, decimal, string, date, data, uuid, uri, transformable, toOne, undefined

        init(_ property: NSPropertyDescription) {
            guard let attribute = property as? NSAttributeDescription else {
                self = .toOne
                return
            }
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
            case .transformableAttributeType: self = .transformable
            default: self = .undefined
            }
        }
    }

    /// Reads column `index` of the current row for attribute kinds (not `.toOne`, which the store
    /// turns into an object ID, nor `.transformable`, which needs its attribute).
    @inline(__always)
    static func read(_ statement: OpaquePointer, _ index: Int32, _ kind: ColumnKind) -> Any? {
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
            guard let string = text(statement, index) else { return nil }
            if kind == .uri { return URL(string: string) }
            return string
        case .decimal:
            if type == SQLITE_TEXT, let text = text(statement, index) {
                return Decimal(string: text, locale: Locale(identifier: "en_US_POSIX"))
            }
            if type == SQLITE_INTEGER { return Decimal(sqlite3_column_int64(statement, index)) }
            return Decimal(sqlite3_column_double(statement, index))
        case .data:
            return blob(statement, index)
        case .uuid:
            guard let data = blob(statement, index), data.count == 16 else {
                if type == SQLITE_TEXT, let text = text(statement, index) { return UUID(uuidString: text) }
                return nil
            }
            return data.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }
        case .transformable, .toOne, .undefined:
            return nil
        }
    }

    /// Reads column `index` of the current row as the raw word `SlotValues` keeps for a
    /// fixed-width attribute kind (the same value `read` gives); nil for NULL.
    @inline(__always)
    static func readWord(_ statement: OpaquePointer, _ index: Int32, _ kind: ColumnKind) -> UInt64? {
        // NULL reads as zero, so only a zero needs its storage class checked.
        switch kind {
        case .int64, .int32, .int16, .bool:
            let integer = sqlite3_column_int64(statement, index)
            if integer == 0 && sqlite3_column_type(statement, index) == SQLITE_NULL { return nil }
            switch kind {
            case .int32: return UInt64(bitPattern: Int64(Int32(truncatingIfNeeded: integer)))
            case .int16: return UInt64(bitPattern: Int64(Int16(truncatingIfNeeded: integer)))
            case .bool: return integer != 0 ? 1 : 0
            default: return UInt64(bitPattern: integer)
            }
        case .double, .date, .float:
            let double = sqlite3_column_double(statement, index)
            if double == 0 && sqlite3_column_type(statement, index) == SQLITE_NULL { return nil }
            return kind == .float ? UInt64(Float(double).bitPattern) : double.bitPattern
        default:
            preconditionFailure("Column kind \(kind) is not stored as a word")
        }
    }

    static func blobValue(_ statement: OpaquePointer, _ index: Int32) -> Data? {
        sqlite3_column_type(statement, index) == SQLITE_NULL ? nil : blob(statement, index)
    }

    private static func blob(_ statement: OpaquePointer, _ index: Int32) -> Data? {
        let count = Int(sqlite3_column_bytes(statement, index))
        guard count > 0, let bytes = sqlite3_column_blob(statement, index) else { return Data() }
        return Data(bytes: bytes, count: count)
    }

    /// Binds a slot's value to a statement parameter, with the fast paths for canonical values.
    @inline(__always)
    static func bind(_ value: Any?, to handle: OpaquePointer, at index: Int32, kind: ColumnKind, property: NSPropertyDescription, primaryKeyOf: (NSManagedObjectID) -> Int64?) {
        guard let value else {
            sqlite3_bind_null(handle, index)
            return
        }
        switch kind {
        case .int64:
            if let integer = ExistentialFastPath.load(value, as: Int64.self) { sqlite3_bind_int64(handle, index, integer); return }
        case .int32:
            if let integer = ExistentialFastPath.load(value, as: Int32.self) { sqlite3_bind_int64(handle, index, Int64(integer)); return }
        case .int16:
            if let integer = ExistentialFastPath.load(value, as: Int16.self) { sqlite3_bind_int64(handle, index, Int64(integer)); return }
        case .bool:
            if let bool = ExistentialFastPath.load(value, as: Bool.self) { sqlite3_bind_int64(handle, index, bool ? 1 : 0); return }
        case .double:
            if let double = ExistentialFastPath.load(value, as: Double.self) { sqlite3_bind_double(handle, index, double); return }
        case .date:
            if let date = ExistentialFastPath.load(value, as: Date.self) { sqlite3_bind_double(handle, index, date.timeIntervalSinceReferenceDate); return }
        case .string:
            if ExistentialFastPath.isExactly(value, String.self), let string = value as? String { bindText(string, to: handle, at: index); return }
        default:
            break
        }
        databaseValue(value, for: property, primaryKeyOf: primaryKeyOf).bindRaw(to: handle, at: index)
    }

    /// Binds a string as text of its exact UTF-8 length, so that a NUL character inside it is kept
    /// (a length of -1 would make SQLite stop at the first NUL).
    @inline(__always)
    static func bindText(_ string: String, to handle: OpaquePointer, at index: Int32) {
        var string = string
        string.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { characters in
                guard let start = characters.baseAddress else {
                    // The empty string is text, not NULL: SQLite needs a non-null pointer for that.
                    _ = sqlite3_bind_text(handle, index, "", 0, sqliteTransient)
                    return
                }
                _ = sqlite3_bind_text64(handle, index, start, sqlite3_uint64(characters.count), sqliteTransient, UInt8(SQLITE_UTF8))
            }
        }
    }

    /// Column `index` of the current row as text of its full byte length (NUL characters included).
    @inline(__always)
    static func text(_ statement: OpaquePointer, _ index: Int32) -> String? {
        guard let text = sqlite3_column_text(statement, index) else { return nil }
        let count = Int(sqlite3_column_bytes(statement, index))
        return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
    }

    /// SQLite's "copy the bytes now" destructor.
    static let sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

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
    /// The attribute's transformer (registered, or made from the class of that name); nil, with
    /// an error logged once per name, when there is none. A save never gets here without one: its
    /// validation refuses such a value first (`ObjectValidation`).
    private static func transformer(for attribute: NSAttributeDescription) -> (ValueTransformer, unarchiving: Bool)? {
        let name = attribute.valueTransformerName ?? NSValueTransformerName.secureUnarchiveFromDataTransformerName.rawValue
        guard let transformer = ValueTransformer.named(NSValueTransformerName(name)) else {
            if missingNames.withLock({ $0.insert(name).inserted }) {
                CoreDataLog.logger.error("No value transformer named \(name) was found for attribute \(attribute.name); its values read as nil.")
            }
            return nil
        }
        return (transformer, transformer is NSSecureUnarchiveFromDataTransformer)
    }

    private static let missingNames = LockedValue(Set<String>())

    static func encode(_ value: Any, for attribute: NSAttributeDescription) -> Data? {
        guard let (transformer, unarchiving) = transformer(for: attribute) else { return nil }
        return (unarchiving ? transformer.reverseTransformedValue(value) : transformer.transformedValue(value)) as? Data
    }

    static func decode(_ data: Data?, for attribute: NSAttributeDescription) -> Any? {
        guard let data, let (transformer, unarchiving) = transformer(for: attribute) else { return nil }
        return unarchiving ? transformer.transformedValue(data) : transformer.reverseTransformedValue(data)
    }
}

extension DatabaseValue {
    /// Binds this value to a raw statement parameter.
    func bindRaw(to handle: OpaquePointer, at index: Int32) {
        switch storage {
        case .null: sqlite3_bind_null(handle, index)
        case .int64(let integer): sqlite3_bind_int64(handle, index, integer)
        case .double(let double): sqlite3_bind_double(handle, index, double)
        case .string(let string): SQLiteValueCoding.bindText(string, to: handle, at: index)
        case .blob(let data) where data.isEmpty:
            sqlite3_bind_zeroblob(handle, index, 0)
        case .blob(let data):
            data.withUnsafeBytes { bytes in
                _ = sqlite3_bind_blob(handle, index, bytes.baseAddress, Int32(bytes.count), SQLiteValueCoding.sqliteTransient)
            }
        }
    }
}

extension Statement {
    /// Sets the statement's arguments, binding each string as text of its full UTF-8 length (GRDB
    /// binds strings up to their first NUL character).
    func setArgumentsKeepingWholeText(_ values: [DatabaseValue]) throws {
        try setArguments(StatementArguments(values))
        for (offset, value) in values.enumerated() {
            if case .string(let string) = value.storage, string.utf8.contains(0) {
                SQLiteValueCoding.bindText(string, to: sqliteStatement, at: Int32(offset + 1))
            }
        }
    }
}

extension Database {
    /// Runs an update statement with arguments whose strings are bound whole (see
    /// `Statement.setArgumentsKeepingWholeText`).
    func executeKeepingWholeText(sql: String, arguments: [DatabaseValue]) throws {
        let statement = try makeStatement(sql: sql)
        try statement.setArgumentsKeepingWholeText(arguments)
        try statement.execute()
    }

    /// A prepared, cached statement with its arguments bound whole, for a fetch.
    func cachedStatementKeepingWholeText(sql: String, arguments: [DatabaseValue]) throws -> Statement {
        let statement = try cachedStatement(sql: sql)
        try statement.setArgumentsKeepingWholeText(arguments)
        return statement
    }
}
