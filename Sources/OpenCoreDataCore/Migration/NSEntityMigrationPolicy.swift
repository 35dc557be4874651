import Foundation

/// The variable name of the migration manager in mapping expressions (`$manager`).
public let NSMigrationManagerKey = "manager"
/// The variable name of the source instance in mapping expressions (`$source`).
public let NSMigrationSourceObjectKey = "source"
/// The variable name of the destination instance in mapping expressions (`$destination`).
public let NSMigrationDestinationObjectKey = "destination"
/// The variable name of the current entity mapping in mapping expressions (`$entityMapping`).
public let NSMigrationEntityMappingKey = "entityMapping"
/// The variable name of the current property mapping in mapping expressions (`$propertyMapping`).
public let NSMigrationPropertyMappingKey = "propertyMapping"
/// The variable name of the entity migration policy in mapping expressions (`$entityPolicy`).
public let NSMigrationEntityPolicyKey = "entityPolicy"

/// Runs one entity mapping of a migration; subclass it to customise how instances are created.
///
/// The manager calls, for every entity mapping in order: `begin(_:with:)`, then
/// `createDestinationInstances(forSource:in:manager:)` once per source instance, then
/// `endInstanceCreation(forMapping:manager:)`; after all mappings created their instances,
/// `createRelationships(forDestination:in:manager:)` once per destination instance and
/// `endRelationshipCreation(forMapping:manager:)`; last `performCustomValidation(forMapping:manager:)`
/// and `end(_:manager:)`.
///
/// A mapping model names its policy class (`entityMigrationPolicyClassName`, "Module.Class"). The
/// class is found by that name in any loaded module; a name whose module has no such class (a
/// mapping written for an app, used from a test target) finds the class of that simple name.
open class NSEntityMigrationPolicy: NSObject {
    /// Creates a policy; the manager makes one per entity mapping.
    public required override init() {}

    /// Makes this class the preferred one when several modules declare a policy class of the same
    /// name (OpenCoreData; classes are otherwise found by name without it).
    public class func register() {
        EntityClassRegistry.registerClass(self)
    }

    /// The policy class a mapping names; the default policy when it names none.
    static func policyClass(named className: String?) throws -> NSEntityMigrationPolicy.Type {
        guard let className, !className.isEmpty, className != "NSEntityMigrationPolicy" else { return NSEntityMigrationPolicy.self }
        if let found = EntityClassRegistry.lookUp(className, as: NSEntityMigrationPolicy.Type.self) { return found }
        let simple = className.split(separator: ".").last.map(String.init) ?? className
        throw CoreDataError.make(.entityMigrationPolicy,
            "The mapping model names the migration policy class \(className), which can't be found. Declare it as a non-generic subclass of NSEntityMigrationPolicy named \(simple).")
    }

    /// Called before the mapping's instances are created.
    open func begin(_ mapping: NSEntityMapping, with manager: NSMigrationManager) throws {}

    /// Creates the destination instance of one source instance: a new object of the destination
    /// entity whose attributes take the values of the mapping's attribute expressions, associated
    /// with the source instance.
    open func createDestinationInstances(forSource sInstance: NSManagedObject, in mapping: NSEntityMapping, manager: NSMigrationManager) throws {
        guard let name = mapping.destinationEntityName, let entity = manager.destinationModel.entitiesByName[name] else { return }
        let destination = entity.instantiableClass.init(entity: entity, insertInto: manager.destinationContext)
        for property in mapping.attributeMappings ?? [] {
            guard let key = property.name, let expression = property.valueExpression,
                  let attribute = entity.attributesByName[key] else { continue }
            let context = manager.expressionContext(source: sInstance, destination: nil, mapping: mapping, property: property, policy: self)
            let value = MigrationValues.converted(expression.expressionValue(with: sInstance, context: context), to: attribute.attributeType)
            // No value keeps the destination's default (an attribute made required with a default).
            if value == nil && attribute.defaultValue != nil { continue }
            destination.setValue(value, forKey: key)
        }
        manager.associate(sourceInstance: sInstance, withDestinationInstance: destination, for: mapping)
    }

    /// Called after the mapping's instances are created.
    open func endInstanceCreation(forMapping mapping: NSEntityMapping, manager: NSMigrationManager) throws {}

    /// Sets the relationships of one destination instance from the mapping's relationship
    /// expressions, evaluated against the source instance it was made from.
    open func createRelationships(forDestination dInstance: NSManagedObject, in mapping: NSEntityMapping, manager: NSMigrationManager) throws {
        let source = manager.sourceInstances(forEntityMappingName: mapping.name, destinationInstances: [dInstance]).first
        for property in mapping.relationshipMappings ?? [] {
            guard let key = property.name, let expression = property.valueExpression,
                  let relationship = dInstance.entity.relationshipsByName[key] else { continue }
            let context = manager.expressionContext(source: source, destination: dInstance, mapping: mapping, property: property, policy: self)
            // A source object may have been migrated by several mappings (a note into a note and
            // an attachment): the relationship takes those of its destination entity.
            let objects = MigrationValues.managedObjects(in: expression.expressionValue(with: source, context: context))
                .filter { object in relationship.destinationEntity.map { object.entity.isKindOf(entity: $0) } ?? true }
            if relationship.isToMany {
                dInstance.setValue(objects, forKey: key)
            } else {
                dInstance.setValue(objects.first, forKey: key)
            }
        }
    }

    /// Called after the relationships of the mapping's instances are set.
    open func endRelationshipCreation(forMapping mapping: NSEntityMapping, manager: NSMigrationManager) throws {}

    /// Called after all relationships are set, before the destination is saved (and validated).
    open func performCustomValidation(forMapping mapping: NSEntityMapping, manager: NSMigrationManager) throws {}

    /// Called once the mapping is done.
    open func end(_ mapping: NSEntityMapping, manager: NSMigrationManager) throws {}
}

/// Reading the values mapping expressions return.
enum MigrationValues {
    /// A value converted to an attribute type between the scalar types lightweight migration
    /// converts (numbers, Boolean, String); other values are returned as they are.
    static func converted(_ value: Any?, to type: NSAttributeType) -> Any? {
        guard let value else { return nil }
        let number = numericValue(of: value)
        func integer<T: FixedWidthInteger>(_: T.Type) -> Any? {
            if value is T { return value }
            guard let number else { return nil }
            return T(exactly: number.rounded(.towardZero)) as Any?
        }
        switch type {
        case .stringAttributeType:
            if value is String { return value }
            if let decimal = value as? Decimal { return "\(decimal)" }
            return number == nil ? value : "\(value)"
        case .integer16AttributeType: return integer(Int16.self)
        case .integer32AttributeType: return integer(Int32.self)
        case .integer64AttributeType: return integer(Int64.self)
        case .doubleAttributeType:
            if value is Double { return value }
            return number as Any?
        case .floatAttributeType:
            if value is Float { return value }
            return number.map { Float($0) } as Any?
        case .booleanAttributeType:
            if value is Bool { return value }
            return number.map { $0 != 0 } as Any?
        case .decimalAttributeType:
            if value is Decimal { return value }
            return number.map { Decimal($0) } as Any?
        default: return value
        }
    }

    /// A scalar value as a Double, when it is one (or a string that spells one).
    private static func numericValue(of value: Any) -> Double? {
        if let bool = value as? Bool { return bool ? 1 : 0 }
        if let string = value as? String { return Double(string.trimmingCharacters(in: .whitespaces)) }
        if let decimal = value as? Decimal { return NSDecimalNumber(decimal: decimal).doubleValue }
        if let integer = value as? any BinaryInteger { return Double(integer) }
        if let float = value as? any BinaryFloatingPoint { return Double(float) }
        return nil
    }

    /// The managed objects in a value: one object, or the elements of a collection; others dropped.
    static func managedObjects(in value: Any?) -> [NSManagedObject] {
        switch value {
        case nil, is NSNull: return []
        case let object as NSManagedObject: return [object]
        default:
            guard let elements = KeyPathWalker.elements(of: value!) else { return [] }
            return elements.compactMap { $0 as? NSManagedObject }
        }
    }
}
