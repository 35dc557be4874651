import Foundation

/// A property of an entity: an attribute, a relationship or a fetched property.
///
/// Descriptions are mutable while a model is being built and frozen once a coordinator uses the model.
open class NSPropertyDescription: NSObject, NSCopying, @unchecked Sendable {
    /// The property's name, unique within its entity hierarchy.
    public var name: String { didSet { assertEditable() } }
    /// The entity that declares the property (nil once the entity is gone, as a weak reference).
    public internal(set) var entity: NSEntityDescription! {
        get { entityReference?.entity }
        set { entityReference = newValue?.backReference }
    }
    private var entityReference: EntityBackReference?
    /// Whether the property may be nil (or, for a to-many relationship, empty) when saved.
    public var isOptional: Bool = true { didSet { assertEditable() } }
    /// Whether the property is kept only in memory and never written to a store.
    public var isTransient: Bool = false { didSet { assertEditable() } }
    /// Whether the property is indexed in the store.
    public var isIndexed: Bool = false
    /// Whether the property appears in Spotlight's index (kept for API compatibility).
    public var isIndexedBySpotlight: Bool = false
    /// Whether the property is stored in an external record file (kept for API compatibility).
    public var isStoredInExternalRecord: Bool = false
    /// Free-form information from the model file.
    public var userInfo: [AnyHashable: Any]?
    /// The name this property had in the previous model version, for migration.
    public var renamingIdentifier: String?
    /// A string mixed into the version hash to force a new version without a schema change.
    public var versionHashModifier: String?
    /// Predicates a value must satisfy to be saved.
    public private(set) var validationPredicates: [NSPredicate] = []
    /// The messages reported for each failing validation predicate.
    public private(set) var validationWarnings: [Any] = []

    /// Position of the property's value in the storage of every object whose entity has it.
    ///
    /// Assigned when the model is frozen; inherited properties keep the same slot in subentities.
    @exclusivity(unchecked) var slot: Int = -1

    /// Creates a property description with an empty name.
    public override init() {
        self.name = ""
    }

    init(name: String) {
        self.name = name
    }

    /// Sets the validation predicates and their warning messages together.
    public func setValidationPredicates(_ predicates: [NSPredicate]?, withValidationWarnings warnings: [String]?) {
        validationPredicates = predicates ?? []
        validationWarnings = warnings ?? []
    }

    /// A copy with the same settings, in no entity (`NSCopying`).
    open func copy(with zone: NSZone? = nil) -> Any {
        let copy = NSPropertyDescription(name: name)
        copySettings(to: copy)
        return copy
    }

    /// Gives `copy` the settings every property has.
    final func copySettings(to copy: NSPropertyDescription) {
        copy.name = name
        copy.isOptional = isOptional
        copy.isTransient = isTransient
        copy.isIndexed = isIndexed
        copy.isIndexedBySpotlight = isIndexedBySpotlight
        copy.isStoredInExternalRecord = isStoredInExternalRecord
        copy.userInfo = userInfo
        copy.renamingIdentifier = renamingIdentifier
        copy.versionHashModifier = versionHashModifier
        copy.validationPredicates = validationPredicates
        copy.validationWarnings = validationWarnings
    }

    /// A hash of the property's schema, used to decide whether a store matches a model.
    public var versionHash: Data { VersionHasher.hash(of: self) }

    /// The description shown in logs.
    open override var description: String { "(\(type(of: self))) \(name)" }

    func assertEditable() {
        if let model = entity?.managedObjectModel, model.isFrozen {
            coreDataMisuse("Can't modify a property of a model that a persistent store coordinator is using.")
        }
    }

    /// Whether another property describes the same property (see `DescriptionEquality`).
    open override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? NSPropertyDescription else { return false }
        return self === other || DescriptionEquality.equal(self, other)
    }

    /// A hash consistent with `isEqual(_:)`: the name's.
    open override var hash: Int { name.hashValue }
}
