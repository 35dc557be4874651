import Foundation

/// The type of value an attribute holds, with Core Data's raw values.
public enum NSAttributeType: UInt, Sendable, CaseIterable {
    /// No type: only valid for transient attributes.
    case undefinedAttributeType = 0
    /// A 16-bit signed integer, held as `Int16`.
    case integer16AttributeType = 100
    /// A 32-bit signed integer, held as `Int32`.
    case integer32AttributeType = 200
    /// A 64-bit signed integer, held as `Int64`.
    case integer64AttributeType = 300
    /// A decimal number, held as `Decimal`.
    case decimalAttributeType = 400
    /// A double-precision floating-point number, held as `Double`.
    case doubleAttributeType = 500
    /// A single-precision floating-point number, held as `Float`.
    case floatAttributeType = 600
    /// Text, held as `String`.
    case stringAttributeType = 700
    /// A Boolean, held as `Bool`.
    case booleanAttributeType = 800
    /// A point in time, held as `Date` (stored as seconds since 2001-01-01).
    case dateAttributeType = 900
    /// Bytes, held as `Data`.
    case binaryDataAttributeType = 1000
    /// A UUID, held as `UUID`.
    case UUIDAttributeType = 1100
    /// A URL, held as `URL`.
    case URIAttributeType = 1200
    /// Any value a `ValueTransformer` turns into data for storage.
    case transformableAttributeType = 1800
    /// A managed object ID (used by expression descriptions of dictionary fetches).
    case objectIDAttributeType = 2000
    /// A composite attribute: named elements grouped under one attribute (its value is kept as given).
    case compositeAttributeType = 2100

    /// The name Xcode's model editor writes in `attributeType="…"`.
    public var xcodeName: String {
        switch self {
        case .undefinedAttributeType: "Undefined"
        case .integer16AttributeType: "Integer 16"
        case .integer32AttributeType: "Integer 32"
        case .integer64AttributeType: "Integer 64"
        case .decimalAttributeType: "Decimal"
        case .doubleAttributeType: "Double"
        case .floatAttributeType: "Float"
        case .stringAttributeType: "String"
        case .booleanAttributeType: "Boolean"
        case .dateAttributeType: "Date"
        case .binaryDataAttributeType: "Binary"
        case .UUIDAttributeType: "UUID"
        case .URIAttributeType: "URI"
        case .transformableAttributeType: "Transformable"
        case .objectIDAttributeType: "ObjectID"
        case .compositeAttributeType: "Composite"
        }
    }

    /// Parses the name Xcode's model editor writes; nil for an unknown name.
    public init?(xcodeName: String) {
        guard let match = Self.allCases.first(where: { $0.xcodeName == xcodeName }) else { return nil }
        self = match
    }

    /// True for the integer, decimal, double and float types.
    public var isNumeric: Bool {
        switch self {
        case .integer16AttributeType, .integer32AttributeType, .integer64AttributeType,
             .decimalAttributeType, .doubleAttributeType, .floatAttributeType:
            true
        default:
            false
        }
    }

    /// The Swift class name Core Data reports as `attributeValueClassName`.
    var valueClassName: String? {
        switch self {
        case .integer16AttributeType, .integer32AttributeType, .integer64AttributeType,
             .doubleAttributeType, .floatAttributeType, .booleanAttributeType:
            "NSNumber"
        case .decimalAttributeType: "NSDecimalNumber"
        case .stringAttributeType: "NSString"
        case .dateAttributeType: "NSDate"
        case .binaryDataAttributeType: "NSData"
        case .UUIDAttributeType: "NSUUID"
        case .URIAttributeType: "NSURL"
        case .objectIDAttributeType: "NSManagedObjectID"
        default: nil
        }
    }
}

/// What happens to the destination objects of a relationship when its source is deleted.
public enum NSDeleteRule: UInt, Sendable {
    /// Leave the destination untouched; the user keeps the graph consistent.
    case noActionDeleteRule = 0
    /// Remove the deleted object from the inverse relationship of each destination.
    case nullifyDeleteRule = 1
    /// Delete the destination objects too.
    case cascadeDeleteRule = 2
    /// Refuse the delete while there is at least one destination object.
    case denyDeleteRule = 3
}
