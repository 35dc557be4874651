import Foundation
import OrderedCollections

/// The storage accessors behind `@Managed` properties and helper functions.
extension NSManagedObject {
    /// Reads a property for a `@Managed` getter, converting to the declared type.
    ///
    /// A nil value read into a non-optional scalar (`Int32`, `Bool`, …) reads as zero, as Core Data
    /// does for scalar properties.
    @inline(__always)
    public final func _managedValue<T>(forKey key: String) -> T {
        let property = property(forKey: key)
        if let recorder = keyPathRecorder {
            recorder.keys.append(key)
            // A to-one step hands back a probe of the destination, so the rest of the path records too.
            if let relationship = property as? NSRelationshipDescription, !relationship.isToMany, let destination = relationship.destinationEntity,
               let probe = KeyPathNames.probe(for: destination, recorder: recorder) as? T {
                return probe
            }
            allocateStorage()
            if let attribute = property as? NSAttributeDescription, let placeholder = ManagedValueConversion.placeholder(for: attribute.attributeType) as? T {
                return placeholder
            }
            return ManagedValueConversion.convert(nil, to: T.self, key: key, entity: entity)
        }
        fireFaultIfNeeded()
        if property is NSAttributeDescription, let value = attributeValue(at: property.slot) as? T { return value }
        return ManagedValueConversion.convert(currentValue(of: property), to: T.self, key: key, entity: entity)
    }

    /// Writes a property for a `@Managed` setter.
    @inline(__always)
    public final func _setManagedValue<T>(_ newValue: T, forKey key: String) {
        setValue(ManagedValueConversion.flatten(newValue), forKey: key)
    }

    /// Reads a `@Managed var primitiveName` property (`key` is `name`, worked out by the macro):
    /// Core Data's primitive accessor of `name` (`primitiveValue(forKey: "name")`: no access
    /// notifications). A property the entity really has under the declared name is read as any other.
    public final func _managedPrimitiveValue<T>(forKey key: String, declaredName: String) -> T {
        guard let key = primitiveKey(key, declaredName: declaredName) else { return _managedValue(forKey: declaredName) }
        return ManagedValueConversion.convert(primitiveValue(forKey: key), to: T.self, key: key, entity: entity)
    }

    /// Writes a `@Managed var primitiveName` property: `setPrimitiveValue(_:forKey: "name")`,
    /// without change notifications.
    public final func _setManagedPrimitiveValue<T>(_ newValue: T, forKey key: String, declaredName: String) {
        guard let key = primitiveKey(key, declaredName: declaredName) else { return _setManagedValue(newValue, forKey: declaredName) }
        setPrimitiveValue(ManagedValueConversion.flatten(newValue), forKey: key)
    }

    /// The property a primitive accessor stands for: `key`, or the declared name without
    /// `primitive` when the property's name starts with a capital (`primitiveURL` → `URL`); nil when
    /// the entity has a property with the declared name itself.
    private func primitiveKey(_ key: String, declaredName: String) -> String? {
        let properties = entity.frozenPropertiesByName
        if properties[declaredName] != nil { return nil }
        if properties[key] != nil { return key }
        let unlowered = String(declaredName.dropFirst("primitive".count))
        if properties[unlowered] != nil { return unlowered }
        coreDataMisuse("\(declaredName) is a primitive accessor of \(key), which the entity \(entity.name ?? "?") doesn't have.")
    }

    /// An editor for a to-many relationship, used by `@Managed` helper functions.
    public final func _managedRelationship(_ key: String) -> ManagedRelationshipEditor {
        guard let relationship = property(forKey: key) as? NSRelationshipDescription, relationship.isToMany else {
            coreDataMisuse("\(key) is not a to-many relationship of \(entity.name ?? "?"), so it has no add/remove helpers.")
        }
        return ManagedRelationshipEditor(owner: self, relationship: relationship)
    }
}

/// Adds, removes and reorders the objects of one to-many relationship.
public struct ManagedRelationshipEditor {
    let owner: NSManagedObject
    let relationship: NSRelationshipDescription

    /// Adds an object, or every object of a set, ordered set or array.
    public func add(_ value: Any) {
        owner.modifyToMany(relationship, adding: NSManagedObject.managedObjects(in: Self.objects(value)), removing: [])
    }

    /// Removes an object, or every object of a set, ordered set or array.
    public func remove(_ value: Any) {
        owner.modifyToMany(relationship, adding: [], removing: NSManagedObject.managedObjects(in: Self.objects(value)))
    }

    /// Inserts an object (or the objects of an array or ordered set, in order) at an index of an
    /// ordered relationship, as `NSMutableOrderedSet` does: an object already a member stays
    /// where it is, and an index beyond `count` is a programmer error.
    public func insert(_ value: Any, at index: Int) {
        let view = orderedView
        let newcomers = NSManagedObject.managedObjects(in: Self.objects(value)).filter { !view.contains($0) }
        guard !newcomers.isEmpty else { return }
        view.insert(newcomers, at: IndexSet(integersIn: index..<(index + newcomers.count)))
    }

    /// Inserts objects at indexes of an ordered relationship (see
    /// `NSManagedMutableOrderedSet.insert(_:at:)`).
    public func insert(_ values: [Any], at indexes: IndexSet) { orderedView.insert(values, at: indexes) }

    /// Removes the object at an index of an ordered relationship.
    public func remove(at index: Int) { orderedView.removeObject(at: index) }

    /// Removes the objects at indexes of an ordered relationship.
    public func remove(at indexes: IndexSet) { orderedView.removeObjects(at: indexes) }

    /// The relationship as `mutableOrderedSetValue(forKey:)` gives it.
    private var orderedView: NSManagedMutableOrderedSet { NSManagedMutableOrderedSet(owner: owner, relationship: relationship) }

    /// Replaces the objects at indexes of an ordered relationship, one for each index in order.
    public func replace(at indexes: IndexSet, with values: [Any]) { orderedView.replaceObjects(at: indexes, with: values) }

    /// Replaces the object at an index of an ordered relationship, as `NSMutableOrderedSet` does:
    /// nothing changes when the object is already a member elsewhere.
    public func replace(at index: Int, with value: Any) { orderedView.replaceObject(at: index, with: value) }

    private static func objects(_ value: Any) -> Any {
        value is NSManagedObject ? [value] : value
    }
}

/// A value type `@Managed` properties can be declared with, converting from stored values.
public protocol ManagedValueConvertible {
    /// Converts a stored value (nil for none) into this type, or nil when it can't.
    static func fromManagedValue(_ value: Any?) -> Self?
}

extension Optional: ManagedValueConvertible where Wrapped: ManagedValueConvertible {
    public static func fromManagedValue(_ value: Any?) -> Self? {
        guard let value else { return .some(nil) }
        return Wrapped.fromManagedValue(value).map { .some($0) }
    }
}

extension Int: ManagedValueConvertible {
    public static func fromManagedValue(_ value: Any?) -> Int? { value.flatMap(AttributeValueCoding.exactInteger).flatMap { Int(exactly: $0) } ?? (value == nil ? 0 : nil) }
}
extension Int16: ManagedValueConvertible {
    public static func fromManagedValue(_ value: Any?) -> Int16? { value.flatMap(AttributeValueCoding.exactInteger).flatMap { Int16(exactly: $0) } ?? (value == nil ? 0 : nil) }
}
extension Int32: ManagedValueConvertible {
    public static func fromManagedValue(_ value: Any?) -> Int32? { value.flatMap(AttributeValueCoding.exactInteger).flatMap { Int32(exactly: $0) } ?? (value == nil ? 0 : nil) }
}
extension Int64: ManagedValueConvertible {
    public static func fromManagedValue(_ value: Any?) -> Int64? { value.flatMap(AttributeValueCoding.exactInteger) ?? (value == nil ? 0 : nil) }
}
extension Double: ManagedValueConvertible {
    public static func fromManagedValue(_ value: Any?) -> Double? { value.flatMap(AttributeValueCoding.numericValue) ?? (value == nil ? 0 : nil) }
}
extension Float: ManagedValueConvertible {
    public static func fromManagedValue(_ value: Any?) -> Float? { value.flatMap(AttributeValueCoding.numericValue).map { Float($0) } ?? (value == nil ? 0 : nil) }
}
extension Bool: ManagedValueConvertible {
    public static func fromManagedValue(_ value: Any?) -> Bool? {
        if let bool = value as? Bool { return bool }
        return value.flatMap(AttributeValueCoding.exactInteger).map { $0 != 0 } ?? (value == nil ? false : nil)
    }
}
extension Decimal: ManagedValueConvertible {
    public static func fromManagedValue(_ value: Any?) -> Decimal? {
        if let decimal = value as? Decimal { return decimal }
        return value.flatMap(AttributeValueCoding.numericValue).map { Decimal($0) } ?? (value == nil ? 0 : nil)
    }
}

/// Conversions between stored values and the types `@Managed` properties declare.
enum ManagedValueConversion {
    static func convert<T>(_ value: Any?, to _: T.Type, key: String, entity: NSEntityDescription) -> T {
        if let value, let bridged = foundationObject(value, for: T.self) { return bridged }
        // To-many values: a Swift set (unordered) or an NSOrderedSet (ordered), as NSSet, arrays or sets.
        if let set = value as? Set<NSManagedObject> {
            if T.self == NSSet?.self || T.self == NSSet.self, let converted = NSSet(array: Array(set)) as? T { return converted }
            if let converted = set as? T { return converted }
            if let converted = Array(set) as? T { return converted }
        }
        if let ordered = value as? NSOrderedSet {
            if let converted = ordered as? T { return converted }
            if let converted = ordered.array as? T { return converted }
            if let converted = Set(ordered.array.compactMap { $0 as? NSManagedObject }) as? T { return converted }
        }
        if let value, let typed = value as? T { return typed }
        if let convertible = T.self as? ManagedValueConvertible.Type, let converted = convertible.fromManagedValue(value) as? T {
            return converted
        }
        if value == nil, let nilType = T.self as? any ExpressibleByNilLiteral.Type, let none = makeNil(nilType) as? T {
            return none
        }
        coreDataMisuse("@Managed property \(entity.name ?? "?").\(key) is declared as \(T.self) but holds \(value.map { "\(type(of: $0))" } ?? "nil"); declare it with the attribute's type.")
    }

    /// A stored value as the Foundation class a property declares (`NSNumber?`, `NSDecimalNumber?`,
    /// `NSDate?`, `NSData?`, `NSUUID?`, `NSURL?`, as Xcode generates them), made explicitly: on
    /// Linux a cast such as `Decimal as? NSNumber` does not give the number Apple's bridging gives.
    private static func foundationObject<T>(_ value: Any, for _: T.Type) -> T? {
        // The declared type decides first, so other properties (relationships) pay no casts.
        let declared = ObjectIdentifier(T.self)
        let object: AnyObject?
        if declared == ObjectIdentifier(NSNumber?.self) || declared == ObjectIdentifier(NSNumber.self)
            || declared == ObjectIdentifier(NSDecimalNumber?.self) || declared == ObjectIdentifier(NSDecimalNumber.self) {
            switch value {
            case let decimal as Decimal: object = NSDecimalNumber(decimal: decimal)
            case let integer as Int64: object = NSNumber(value: integer)
            case let integer as Int32: object = NSNumber(value: integer)
            case let integer as Int16: object = NSNumber(value: integer)
            case let double as Double: object = NSNumber(value: double)
            case let float as Float: object = NSNumber(value: float)
            case let bool as Bool: object = NSNumber(value: bool)
            default: object = nil
            }
        } else if declared == ObjectIdentifier(NSDate?.self) || declared == ObjectIdentifier(NSDate.self) {
            object = (value as? Date).map { NSDate(timeIntervalSinceReferenceDate: $0.timeIntervalSinceReferenceDate) }
        } else if declared == ObjectIdentifier(NSData?.self) || declared == ObjectIdentifier(NSData.self) {
            object = (value as? Data).map { NSData(data: $0) }
        } else if declared == ObjectIdentifier(NSUUID?.self) || declared == ObjectIdentifier(NSUUID.self) {
            object = (value as? UUID).flatMap { NSUUID(uuidString: $0.uuidString) }
        } else if declared == ObjectIdentifier(NSURL?.self) || declared == ObjectIdentifier(NSURL.self) {
            object = (value as? URL).flatMap { NSURL(string: $0.absoluteString) }
        } else {
            return nil
        }
        return object.flatMap { $0 as? T }
    }

    /// Some value of an attribute type, for key-path probes of non-optional properties.
    static func placeholder(for type: NSAttributeType) -> Any? {
        switch type {
        case .stringAttributeType: ""
        case .dateAttributeType: Date(timeIntervalSinceReferenceDate: 0)
        case .binaryDataAttributeType: Data()
        case .UUIDAttributeType: UUID()
        case .URIAttributeType: URL(fileURLWithPath: "/")
        case .decimalAttributeType: Decimal(0)
        default: nil
        }
    }

    private static func makeNil<N: ExpressibleByNilLiteral>(_ type: N.Type) -> N { N(nilLiteral: ()) }

    /// Unwraps nested optionals so `setValue` sees nil or the value itself.
    static func flatten<T>(_ value: T) -> Any? {
        if let optional = value as? OptionalFlattening { return optional.flattened }
        return value
    }
}

/// Lets `flatten` see through `Optional` of any depth.
protocol OptionalFlattening {
    var flattened: Any? { get }
}

extension Optional: OptionalFlattening {
    var flattened: Any? {
        switch self {
        case .none: nil
        case .some(let wrapped): (wrapped as? OptionalFlattening)?.flattened ?? wrapped
        }
    }
}
