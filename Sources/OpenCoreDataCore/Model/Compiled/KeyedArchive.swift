import Foundation

/// An `NSKeyedArchiver` archive, read from its binary property list: a flat `$objects` table in
/// which objects refer to each other by UID, and `$top` names the root.
///
/// Accessors resolve references and Foundation's collection encodings (`NS.objects`, `NS.keys`,
/// `NS.string`); any shape other than the expected one throws, so a damaged archive is an error,
/// never a crash.
struct KeyedArchive {
    /// Why an archive can't be read.
    struct FormatError: Error, CustomStringConvertible {
        let description: String
    }

    let objects: [PropertyListValue]
    /// The root object's index in `objects`.
    let root: Int

    init(_ bytes: [UInt8]) throws {
        let plist: PropertyListValue
        do {
            plist = try BinaryPropertyList.read(bytes)
        } catch let error as BinaryPropertyList.FormatError {
            throw FormatError(description: error.description)
        }
        guard case .string("NSKeyedArchiver")? = plist["$archiver"] else { throw FormatError(description: "not a keyed archive (no $archiver)") }
        guard case .array(let objects)? = plist["$objects"] else { throw FormatError(description: "no $objects") }
        guard case .uid(let root)? = plist["$top"]?["root"], root < objects.count else { throw FormatError(description: "no root object in $top") }
        self.objects = objects
        self.root = Int(root)
    }

    /// An archived object: its class name and its encoded fields.
    struct Object {
        let index: Int
        let className: String
        let fields: PropertyListValue
        /// Whether the object encodes a value for the key.
        func has(_ key: String) -> Bool { fields[key] != nil }
    }

    /// The object a field refers to; nil for `$null` and for an absent field.
    func object(_ value: PropertyListValue?) throws -> Object? {
        guard let value else { return nil }
        guard case .uid(let uid) = value else { throw FormatError(description: "expected an object reference") }
        guard uid < objects.count else { throw FormatError(description: "reference \(uid) outside $objects") }
        let index = Int(uid)
        if index == 0 { return nil }
        let fields = objects[index]
        guard case .dictionary = fields else { return Object(index: index, className: "", fields: fields) }
        guard case .uid(let classUID)? = fields["$class"], classUID < objects.count,
              case .string(let className)? = objects[Int(classUID)]["$classname"] else {
            throw FormatError(description: "object \(index) has no class")
        }
        return Object(index: index, className: className, fields: fields)
    }

    /// The root object.
    func rootObject() throws -> Object {
        guard let root = try object(.uid(UInt64(root))) else { throw FormatError(description: "the root is null") }
        return root
    }

    /// A field of an object, resolved to the referenced object.
    func object(_ key: String, of owner: Object) throws -> Object? {
        try object(owner.fields[key])
    }

    /// A string field (an inline string, or a reference to an `NSString`/`NSMutableString`).
    func string(_ key: String, of owner: Object) throws -> String? {
        try string(owner.fields[key])
    }

    func string(_ value: PropertyListValue?) throws -> String? {
        guard let value else { return nil }
        if case .string(let string) = value { return string }
        guard let object = try object(value) else { return nil }
        if case .string(let string) = object.fields { return string }
        if case .string(let string)? = object.fields["NS.string"] { return string }
        if let bytes = object.fields["NS.bytes"], case .data(let data) = bytes { return String(decoding: data, as: UTF8.self) }
        throw FormatError(description: "expected a string, found \(object.className)")
    }

    /// An integer field (0 when absent).
    func integer(_ key: String, of owner: Object) throws -> Int {
        switch owner.fields[key] {
        case nil: return 0
        case .integer(let value)?: return Int(truncatingIfNeeded: value)
        case .real(let value)? where value.isFinite && abs(value) < 1e18: return Int(value)
        case .bool(let value)?: return value ? 1 : 0
        default: throw FormatError(description: "\(owner.className).\(key) is not a number")
        }
    }

    /// A Boolean field (false when absent).
    func bool(_ key: String, of owner: Object) throws -> Bool {
        switch owner.fields[key] {
        case nil: return false
        case .bool(let value)?: return value
        case .integer(let value)?: return value != 0
        default: throw FormatError(description: "\(owner.className).\(key) is not a Boolean")
        }
    }

    /// The elements of an `NSArray`, `NSSet` or `NSOrderedSet` field, as raw values (references).
    func elements(_ key: String, of owner: Object) throws -> [PropertyListValue] {
        try elements(owner.fields[key])
    }

    func elements(_ value: PropertyListValue?) throws -> [PropertyListValue] {
        guard let collection = try object(value) else { return [] }
        guard case .array(let elements)? = collection.fields["NS.objects"] else {
            throw FormatError(description: "expected a collection, found \(collection.className)")
        }
        return elements
    }

    /// The entries of an `NSDictionary` field, as (key, raw value) pairs in archive order.
    func entries(_ key: String, of owner: Object) throws -> [(key: PropertyListValue, value: PropertyListValue)] {
        try entries(owner.fields[key])
    }

    /// A plain property-list value (string, number, date, data, UUID, URL, collection) decoded
    /// into its Foundation form; nil for `$null`.
    func value(_ raw: PropertyListValue?, depth: Int = 0) throws -> Any? {
        guard let raw else { return nil }
        guard depth < 64 else { throw FormatError(description: "values nested too deeply") }
        switch raw {
        case .string(let string): return string
        case .integer(let value): return NSNumber(value: value)
        case .real(let value): return NSNumber(value: value)
        case .bool(let value): return value
        case .data(let bytes): return Data(bytes)
        case .date(let seconds): return Date(timeIntervalSinceReferenceDate: seconds)
        case .uid: break
        default: throw FormatError(description: "unexpected inline value")
        }
        guard let object = try object(raw) else { return nil }
        if case .dictionary = object.fields {} else { return try value(object.fields, depth: depth + 1) }
        switch object.className {
        case "NSString", "NSMutableString": return try string(raw)
        case "NSData", "NSMutableData":
            guard case .data(let bytes)? = object.fields["NS.data"] else { throw FormatError(description: "NSData without bytes") }
            return Data(bytes)
        case "NSDate":
            guard case .real(let seconds)? = object.fields["NS.time"] else { throw FormatError(description: "NSDate without time") }
            return Date(timeIntervalSinceReferenceDate: seconds)
        case "NSUUID":
            guard case .data(let bytes)? = object.fields["NS.uuidbytes"], bytes.count == 16 else { throw FormatError(description: "NSUUID without 16 bytes") }
            return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                               bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
        case "NSURL":
            let relative = try string("NS.relative", of: object) ?? ""
            guard let url = URL(string: relative) else { throw FormatError(description: "NSURL with a malformed string") }
            return url
        case "NSDecimalNumberPlaceholder", "NSDecimalNumber":
            return try decimal(object)
        case "NSArray", "NSMutableArray":
            return try elements(raw).map { try value($0, depth: depth + 1) ?? NSNull() }
        case "NSSet", "NSMutableSet":
            return Set(try elements(raw).compactMap { try value($0, depth: depth + 1) as? AnyHashable })
        case "NSDictionary", "NSMutableDictionary":
            var result: [AnyHashable: Any] = [:]
            for entry in try entries(raw) {
                guard let key = try value(entry.key, depth: depth + 1) as? AnyHashable else { continue }
                result[key] = try value(entry.value, depth: depth + 1) ?? NSNull()
            }
            return result
        case "NSNull": return NSNull()
        default:
            throw FormatError(description: "unexpected value of class \(object.className)")
        }
    }

    func entries(_ raw: PropertyListValue?) throws -> [(key: PropertyListValue, value: PropertyListValue)] {
        guard let dictionary = try object(raw) else { return [] }
        if dictionary.className.hasPrefix("NSKnownKeysDictionary") {
            // Keys in a shared mapping, values in slot order; empty slots hold a token string.
            guard let mapping = try object(dictionary.fields["searchMapping"]) else { throw FormatError(description: "a known-keys dictionary without keys") }
            let keys = try elements(mapping.fields["keys"])
            let values = try elements(dictionary.fields["values"])
            guard keys.count == values.count else { throw FormatError(description: "a known-keys dictionary with \(keys.count) keys and \(values.count) values") }
            let empty = try string(dictionary.fields["emptyToken"])
            // Ignored: a value that isn't a string can't be the empty token.
            return zip(keys, values).filter { pair in empty == nil || (try? string(pair.1)) != empty }
                .map { (key: $0.0, value: $0.1) }
        }
        guard case .array(let keys)? = dictionary.fields["NS.keys"], case .array(let values)? = dictionary.fields["NS.objects"],
              keys.count == values.count else {
            throw FormatError(description: "expected a dictionary, found \(dictionary.className)")
        }
        return Array(zip(keys, values)).map { (key: $0.0, value: $0.1) }
    }

    /// An archived `NSDecimalNumber`: a little-endian mantissa of `NS.length` 16-bit words, an
    /// exponent and a sign.
    private func decimal(_ object: Object) throws -> Decimal {
        guard case .data(let mantissa)? = object.fields["NS.mantissa"] else { throw FormatError(description: "decimal without mantissa") }
        let exponent = try integer("NS.exponent", of: object)
        let negative = try bool("NS.negative", of: object)
        let length = try integer("NS.length", of: object)
        guard (0...8).contains(length), exponent >= -128, exponent <= 127, mantissa.count >= length * 2 else {
            throw FormatError(description: "malformed decimal")
        }
        var value = Decimal(0)
        for word in (0..<length).reversed() {
            let part = Int(mantissa[word * 2]) | Int(mantissa[word * 2 + 1]) << 8
            value = value * 65536 + Decimal(part)
        }
        var result = Decimal(sign: negative ? .minus : .plus, exponent: exponent, significand: value)
        if length == 0 { result = 0 }
        return result
    }
}
