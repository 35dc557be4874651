import Foundation

/// Writes an `NSKeyedArchiver` archive: objects go into a flat `$objects` table and refer to each
/// other by UID; each class is described once. An object can be reserved before it is written,
/// so that object graphs with cycles (an entity and its properties) encode in one pass.
struct KeyedArchiveWriter {
    private var objects: [PropertyListValue] = [.string("$null")]
    private var classes: [String: UInt64] = [:]
    private var strings: [String: UInt64] = [:]

    /// The reference that archives as nil.
    static let null = PropertyListValue.uid(0)

    /// Reserves a slot for an object that is written later with `fill(_:…)`.
    mutating func reserve() -> UInt64 {
        objects.append(.string("$reserved"))
        return UInt64(objects.count - 1)
    }

    /// Writes a reserved object: its class (with superclasses, ending in `NSObject`) and fields.
    mutating func fill(_ uid: UInt64, classChain: [String], fields: [(String, PropertyListValue)]) {
        let classUID = classDescription(classChain)
        objects[Int(uid)] = .dictionary(fields.map { (key: $0.0, value: $0.1) } + [(key: "$class", value: .uid(classUID))])
    }

    /// Writes an object and returns its reference.
    mutating func object(_ classChain: [String], _ fields: [(String, PropertyListValue)]) -> PropertyListValue {
        let uid = reserve()
        fill(uid, classChain: classChain, fields: fields)
        return .uid(uid)
    }

    /// A string object (each distinct string is written once); nil archives as `$null`.
    mutating func string(_ string: String?) -> PropertyListValue {
        guard let string else { return Self.null }
        if let uid = strings[string] { return .uid(uid) }
        objects.append(.string(string))
        let uid = UInt64(objects.count - 1)
        strings[string] = uid
        return .uid(uid)
    }

    /// A scalar stored as an object of its own (a number or data referenced by UID).
    mutating func scalar(_ value: PropertyListValue) -> PropertyListValue {
        objects.append(value)
        return .uid(UInt64(objects.count - 1))
    }

    /// An `NSArray` (or the given array or set class) of references.
    mutating func array(_ elements: [PropertyListValue], className: String = "NSArray") -> PropertyListValue {
        object(Self.chain(className), [("NS.objects", .array(elements))])
    }

    /// An `NSDictionary` (or the given dictionary class) of string keys to references.
    mutating func dictionary(_ entries: [(String, PropertyListValue)], className: String = "NSDictionary") -> PropertyListValue {
        let keys = entries.map { string($0.0) }
        return object(Self.chain(className), [("NS.keys", .array(keys)), ("NS.objects", .array(entries.map(\.1)))])
    }

    /// A Foundation value (number, Boolean, string, date, data, UUID, URL, decimal, array,
    /// dictionary) as Foundation archives it; nil for values it can't archive.
    mutating func value(_ value: Any?) -> PropertyListValue {
        if let value, type(of: value) is NSNumber.Type, let number = value as? NSNumber { return scalar(Self.numberValue(number)) }
        switch value {
        case nil, is NSNull: return Self.null
        case let bool as Bool: return scalar(.bool(bool))
        case let string as String: return self.string(string)
        case let decimal as Decimal: return self.decimal(decimal)
        case let float as Float: return scalar(.real(Double(float)))
        case let double as Double: return scalar(.real(double))
        case let integer as any BinaryInteger: return scalar(.integer(Int64(truncatingIfNeeded: integer)))
        case let date as Date: return object(Self.chain("NSDate"), [("NS.time", .real(date.timeIntervalSinceReferenceDate))])
        case let data as Data: return scalar(.data(Array(data)))
        case let uuid as UUID:
            let bytes = withUnsafeBytes(of: uuid.uuid) { Array($0) }
            return object(Self.chain("NSUUID"), [("NS.uuidbytes", .data(bytes))])
        case let url as URL: return object(Self.chain("NSURL"), [("NS.base", Self.null), ("NS.relative", string(url.absoluteString))])
        case let array as [Any]: return self.array(array.map { self.value($0) })
        case let dictionary as [AnyHashable: Any]:
            let entries = dictionary.compactMap { entry in (entry.key.base as? String).map { ($0, entry.value) } }.sorted { $0.0 < $1.0 }
            return self.dictionary(entries.map { ($0.0, self.value($0.1)) })
        default: return Self.null
        }
    }

    /// The finished archive as a binary property list, rooted at `root`.
    func finish(root: PropertyListValue) -> [UInt8] {
        BinaryPropertyList.write(.dictionary([
            (key: "$version", value: .integer(100_000)),
            (key: "$archiver", value: .string("NSKeyedArchiver")),
            (key: "$top", value: .dictionary([(key: "root", value: root)])),
            (key: "$objects", value: .array(objects)),
        ]))
    }

    /// A class and its superclasses as Foundation declares them.
    static func chain(_ className: String) -> [String] {
        switch className {
        case "NSMutableArray": ["NSMutableArray", "NSArray", "NSObject"]
        case "NSMutableDictionary": ["NSMutableDictionary", "NSDictionary", "NSObject"]
        case "NSMutableSet": ["NSMutableSet", "NSSet", "NSObject"]
        case "NSMutableString": ["NSMutableString", "NSString", "NSObject"]
        default: [className, "NSObject"]
        }
    }

    private mutating func classDescription(_ chain: [String]) -> UInt64 {
        let key = chain.joined(separator: ",")
        if let uid = classes[key] { return uid }
        objects.append(.dictionary([(key: "$classname", value: .string(chain[0])), (key: "$classes", value: .array(chain.map(PropertyListValue.string)))]))
        let uid = UInt64(objects.count - 1)
        classes[key] = uid
        return uid
    }

    private static func numberValue(_ number: NSNumber) -> PropertyListValue {
        switch UInt8(bitPattern: number.objCType.pointee) {
        case UInt8(ascii: "f"), UInt8(ascii: "d"): .real(number.doubleValue)
        case let code where (code == UInt8(ascii: "c") || code == UInt8(ascii: "B")) && (number.int64Value == 0 || number.int64Value == 1):
            .bool(number.boolValue)
        default: .integer(number.int64Value)
        }
    }

    /// An `NSDecimalNumber` as Foundation archives it: exponent, sign and a little-endian
    /// mantissa of 16-bit words.
    private mutating func decimal(_ value: Decimal) -> PropertyListValue {
        // The significand's decimal digits, converted to base 65536 by long multiplication.
        var words: [UInt16] = []
        for digit in NSDecimalNumber(decimal: value.significand.magnitude).stringValue.compactMap(\.wholeNumberValue) {
            var carry = UInt32(digit)
            for index in words.indices {
                let product = UInt32(words[index]) * 10 + carry
                words[index] = UInt16(truncatingIfNeeded: product)
                carry = product >> 16
            }
            if carry > 0 { words.append(UInt16(carry)) }
        }
        var bytes = [UInt8](repeating: 0, count: 16)
        for (index, word) in words.prefix(8).enumerated() {
            bytes[index * 2] = UInt8(word & 0xFF)
            bytes[index * 2 + 1] = UInt8(word >> 8)
        }
        let length = min(words.count, 8)
        return object(["NSDecimalNumberPlaceholder", "NSDecimalNumber", "NSNumber", "NSValue", "NSObject"], [
            ("NS.exponent", .integer(Int64(value.exponent))), ("NS.length", .integer(Int64(length))),
            ("NS.mantissa", .data(bytes)), ("NS.mantissa.bo", .integer(1)),
            ("NS.negative", .bool(value.sign == .minus && length > 0)), ("NS.compact", .bool(length > 0)),
        ])
    }
}
