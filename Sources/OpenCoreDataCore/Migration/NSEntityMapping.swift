import Foundation

/// What an entity mapping does with the source entity's instances.
public enum NSEntityMappingType: UInt, Sendable {
    /// Not yet decided (Xcode writes this for mappings it generates; treated as custom).
    case undefinedEntityMappingType = 0x00
    /// Instances are created by the mapping's policy and property mappings.
    case customEntityMappingType = 0x01
    /// The destination entity is new: no source instances.
    case addEntityMappingType = 0x02
    /// The source entity is gone: its instances are not migrated.
    case removeEntityMappingType = 0x03
    /// Instances are copied unchanged.
    case copyEntityMappingType = 0x04
    /// Instances are copied with property changes.
    case transformEntityMappingType = 0x05
}

/// How the instances of one source entity become instances of one destination entity.
///
/// A migration runs its entity mappings in order, in three passes (create instances, create
/// relationships, validate); see `NSMigrationManager`.
/// Unchecked Sendable: not locked: built first, then used by one migration at a time.
open class NSEntityMapping: NSObject, @unchecked Sendable {
    /// The mapping's name, used by `destinationInstances(forEntityMappingName:sourceInstances:)`.
    open var name: String!
    /// What the mapping does.
    open var mappingType: NSEntityMappingType = .undefinedEntityMappingType
    /// The source entity's name (nil for an add mapping).
    open var sourceEntityName: String?
    /// The source entity's version hash, when known.
    open var sourceEntityVersionHash: Data?
    /// The destination entity's name (nil for a remove mapping).
    open var destinationEntityName: String?
    /// The destination entity's version hash, when known.
    open var destinationEntityVersionHash: Data?
    /// How destination attributes get their values.
    open var attributeMappings: [NSPropertyMapping]?
    /// How destination relationships get their values.
    open var relationshipMappings: [NSPropertyMapping]?
    /// The expression that yields the source instances (by default, all instances of the source
    /// entity, filtered by the mapping's source predicate when it has one).
    open var sourceExpression: NSExpression?
    /// Custom information for a migration policy.
    open var userInfo: [AnyHashable: Any]?
    /// The class name of the `NSEntityMigrationPolicy` subclass that runs this mapping.
    open var entityMigrationPolicyClassName: String?

    /// The predicate that filters the source instances, when Xcode's mapping editor set one.
    var sourceFilterPredicate: NSPredicate?

    /// Creates an empty entity mapping.
    public override init() {}

    /// The mapping's name, type and entities.
    open override var description: String {
        "<NSEntityMapping \(name ?? "?"): \(sourceEntityName ?? "-") -> \(destinationEntityName ?? "-") (type \(mappingType.rawValue))>"
    }

    /// The destination property mapping with the given name, attributes first.
    func propertyMapping(named name: String) -> NSPropertyMapping? {
        (attributeMappings ?? []).first { $0.name == name } ?? (relationshipMappings ?? []).first { $0.name == name }
    }
}
