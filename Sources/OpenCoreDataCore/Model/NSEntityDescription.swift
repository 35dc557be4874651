import Foundation
import Synchronization

/// An entity: a kind of managed object, with its properties, place in an inheritance tree and class.
///
/// Invariant once the model is frozen: `properties` lists the inherited properties first, in the
/// superentity's order, then the entity's own; so a property's `slot` is the same in every entity of
/// its hierarchy.
/// Unchecked Sendable: immutable once the model is frozen (`freeze()`), which a coordinator does before use.
open class NSEntityDescription: NSObject, NSCopying, @unchecked Sendable {
    /// The entity's name, unique within its model.
    public var name: String? { didSet { assertEditable() } }
    /// The name of the class that represents the entity's objects (`NSManagedObject` when absent).
    public var managedObjectClassName: String! = "NSManagedObject"
    /// Whether the entity can have no instances of its own (only of its subentities).
    @exclusivity(unchecked) public var isAbstract: Bool = false
    /// The model that holds the entity.
    public internal(set) weak var managedObjectModel: NSManagedObjectModel!
    /// The entity this one inherits from (held weakly: nil once it is gone).
    public private(set) var superentity: NSEntityDescription? {
        get { superentityReference?.entity }
        set { superentityReference = newValue?.backReference }
    }
    private var superentityReference: EntityBackReference?
    /// How descriptions refer back to this entity without a Swift `weak` reference (which would
    /// slow every retain of the entity; see `EntityBackReference`). Cleared when the entity goes.
    var backReference: EntityBackReference {
        if let backReferenceStorage { return backReferenceStorage }
        let reference = EntityBackReference(self)
        backReferenceStorage = reference
        return reference
    }
    private var backReferenceStorage: EntityBackReference?

    deinit {
        backReferenceStorage?.entity = nil
    }
    /// Free-form information from the model file.
    public var userInfo: [AnyHashable: Any]?
    /// The name this entity had in the previous model version, for migration.
    public var renamingIdentifier: String?
    /// A string mixed into the version hash to force a new version without a schema change.
    public var versionHashModifier: String?
    /// Groups of property names whose values must be unique together across the entity's objects.
    public var uniquenessConstraints: [[Any]] = []
    /// Indexes created in the store for this entity.
    public var indexes: [NSFetchIndexDescription] = [] {
        didSet { for index in indexes { index.entity = self } }
    }
    /// Whether `key` names an object's entity description, as `entity == %@` compares it: `entity`,
    /// unless the entity has a property of that name.
    final func namesEntityDescription(_ key: String) -> Bool {
        key == "entity" && frozenPropertiesByName[key] == nil
    }
    /// The entity's indexes as arrays of their properties: the form before `indexes`.
    ///
    /// Reading gives each index's properties (an element whose property isn't resolved yet
    /// gives its name). Setting replaces `indexes` with one ascending binary index per array,
    /// named `compoundIndex1`, `compoundIndex2`, …; each array holds property descriptions or
    /// property names.
    @available(*, deprecated, renamed: "indexes")
    public var compoundIndexes: [[Any]] {
        get { indexes.map { index in index.elements.map { element -> Any in element.property ?? element.propertyName ?? "" } } }
        set {
            indexes = newValue.enumerated().map { number, properties in
                NSFetchIndexDescription(name: "compoundIndex\(number + 1)", elements: properties.compactMap { property in
                    if let property = property as? NSPropertyDescription { return NSFetchIndexElementDescription(property: property, collationType: .binary) }
                    if let name = property as? String { return NSFetchIndexElementDescription(propertyName: name, ascending: true, collationType: .binary) }
                    return nil
                })
            }
        }
    }
    /// The superentity's name while a model file is being loaded.
    var superentityName: String?

    private var ownProperties: [NSPropertyDescription] = []
    private var ownSubentities: [NSEntityDescription] = []

    // Caches computed when the model is frozen.
    @exclusivity(unchecked) private(set) var frozenProperties: [NSPropertyDescription] = []
    @exclusivity(unchecked) private(set) var frozenPropertiesByName: [String: NSPropertyDescription] = [:]
    /// The class Core Data instantiates for this entity's objects, once resolved: the bits of
    /// its metatype, 0 until then. Contexts on several threads resolve it, so it is atomic.
    let resolvedClassBits = Atomic<UInt>(0)
    /// The entity's number in stores (`Z_ENT`), assigned when the model is frozen.
    var entityNumber: Int = 0
    /// The root of this entity's inheritance tree.
    var rootEntity: NSEntityDescription { superentity?.rootEntity ?? self }
    /// The identity of `rootEntity` (what object IDs are keyed by), remembered when frozen.
    var rootIdentifier: ObjectIdentifier { isFrozenForUse ? frozenRootIdentifier : ObjectIdentifier(rootEntity) }
    @exclusivity(unchecked) private var frozenRootIdentifier = ObjectIdentifier(NSEntityDescription.self)

    /// Creates an entity with no name.
    public override init() {}

    /// Creates an entity with a name, a class name and properties.
    public convenience init(name: String, className: String = "NSManagedObject", properties: [NSPropertyDescription] = []) {
        self.init()
        self.name = name
        self.managedObjectClassName = className
        self.properties = properties
    }

    /// A copy with copies of the entity's own properties and indexes, in no model, with no super- or
    /// subentities (the superentity's name is kept); `NSManagedObjectModel.copy()` links its
    /// copies to each other again (`NSCopying`).
    open func copy(with zone: NSZone? = nil) -> Any {
        let copy = NSEntityDescription()
        copy.name = name
        copy.managedObjectClassName = managedObjectClassName
        copy.isAbstract = isAbstract
        copy.userInfo = userInfo
        copy.renamingIdentifier = renamingIdentifier
        copy.versionHashModifier = versionHashModifier
        copy.superentityName = superentity?.name ?? superentityName
        copy.properties = ownProperties.map { $0.copy() as! NSPropertyDescription }
        copy.uniquenessConstraints = uniquenessConstraints.map { constraint in
            constraint.map { element -> Any in (element as? NSPropertyDescription)?.name ?? element }
        }
        let copiedProperties = copy.declaredProperties
        copy.indexes = indexes.map { index in
            let elements = index.elements.map { element in
                let name = element.property?.name ?? element.propertyName ?? ""
                let copied = NSFetchIndexElementDescription(propertyName: name, ascending: element.isAscending, collationType: element.collationType)
                copied.property = copiedProperties.first { $0.name == name }
                return copied
            }
            let copied = NSFetchIndexDescription(name: index.name, elements: elements)
            copied.partialIndexPredicate = index.partialIndexPredicate
            return copied
        }
        return copy
    }

    // MARK: Properties

    /// All properties, inherited ones first. Setting replaces the entity's own properties.
    public var properties: [NSPropertyDescription] {
        get {
            if isFrozen { return frozenProperties }
            return (superentity?.properties ?? []) + ownProperties
        }
        set {
            assertEditable()
            ownProperties = newValue
            for property in newValue { property.entity = self }
        }
    }

    /// The properties the entity declares itself, without inherited ones.
    public var declaredProperties: [NSPropertyDescription] { ownProperties }

    /// All properties by name, inherited ones included.
    public var propertiesByName: [String: NSPropertyDescription] {
        if isFrozen { return frozenPropertiesByName }
        return Dictionary(properties.map { ($0.name, $0) }, uniquingKeysWith: { _, last in last })
    }

    /// Attributes by name, inherited ones included.
    public var attributesByName: [String: NSAttributeDescription] {
        propertiesByName.compactMapValues { $0 as? NSAttributeDescription }
    }

    /// Relationships by name, inherited ones included.
    public var relationshipsByName: [String: NSRelationshipDescription] {
        propertiesByName.compactMapValues { $0 as? NSRelationshipDescription }
    }

    /// The relationships that point to a given entity.
    public func relationships(forDestination entity: NSEntityDescription) -> [NSRelationshipDescription] {
        properties.compactMap { $0 as? NSRelationshipDescription }.filter { $0.destinationEntity === entity }
    }

    // MARK: Inheritance

    /// The entities that inherit from this one directly. Setting links them to this entity.
    public var subentities: [NSEntityDescription] {
        get { ownSubentities }
        set {
            assertEditable()
            for old in ownSubentities where old.superentity === self { old.superentity = nil }
            ownSubentities = newValue
            for entity in newValue { entity.superentity = self }
        }
    }

    /// Direct subentities by name.
    public var subentitiesByName: [String: NSEntityDescription] {
        Dictionary(ownSubentities.compactMap { entity in entity.name.map { ($0, entity) } }, uniquingKeysWith: { first, _ in first })
    }

    /// This entity and every entity below it, depth first.
    var selfAndDescendants: [NSEntityDescription] {
        [self] + ownSubentities.flatMap(\.selfAndDescendants)
    }

    /// Whether this entity is `entity` or inherits from it.
    public func isKindOf(entity: NSEntityDescription) -> Bool {
        var current: NSEntityDescription? = self
        while let candidate = current {
            if candidate === entity { return true }
            current = candidate.superentity
        }
        return false
    }

    // MARK: Lookup

    /// The entity named `entityName` in the model of `context`'s coordinator.
    public class func entity(forEntityName entityName: String, in context: NSManagedObjectContext) -> NSEntityDescription? {
        context.persistentStoreCoordinator?.managedObjectModel.entitiesByName[entityName]
    }

    /// Inserts a new object of the named entity into a context and returns it.
    ///
    /// An unknown entity name is a programmer error and traps, as Core Data raises.
    public class func insertNewObject(forEntityName entityName: String, into context: NSManagedObjectContext) -> NSManagedObject {
        guard let entity = entity(forEntityName: entityName, in: context) else {
            coreDataMisuse("+entityForName: could not locate an entity named '\(entityName)' in this model.")
        }
        return entity.instantiate(insertInto: context)
    }

    // MARK: Version hash

    /// A hash of the entity's schema: name, inheritance and stored properties.
    public var versionHash: Data { VersionHasher.hash(of: self) }

    // MARK: Freezing

    var isFrozen: Bool { managedObjectModel?.isFrozen ?? false }

    func assertEditable() {
        if isFrozen {
            coreDataMisuse("Can't modify an entity of a model that a persistent store coordinator is using.")
        }
    }

    /// Computes the caches used at run time. Called by the model, superentities first.
    func freeze() {
        frozenRootIdentifier = ObjectIdentifier(rootEntity)
        isFrozenForUse = true
        let inherited = superentity?.frozenProperties ?? []
        frozenProperties = inherited + ownProperties
        for (slot, property) in frozenProperties.enumerated() {
            if property.entity === self { property.slot = slot }
        }
        frozenPropertiesByName = Dictionary(frozenProperties.map { ($0.name, $0) }, uniquingKeysWith: { _, last in last })
        frozenAttributes = frozenProperties.compactMap { $0 as? NSAttributeDescription }
        frozenRelationships = frozenProperties.compactMap { $0 as? NSRelationshipDescription }
        frozenRelationshipsByName = Dictionary(frozenRelationships.map { ($0.name, $0) }, uniquingKeysWith: { _, last in last })
        slotKeys = frozenProperties.map(\.name)
        storesValuesVerbatim = frozenRelationships.isEmpty && !frozenProperties.contains { $0.isTransient }
        slotLayout = SlotLayout(properties: frozenProperties)
        var defaults = SlotValues(layout: slotLayout)
        // A default set in code may be any value a setter takes (Swift's `Int` for an Integer 64
        // attribute, an `NSNumber`): it is stored as a set value is.
        for (slot, property) in frozenProperties.enumerated() {
            guard let attribute = property as? NSAttributeDescription else { continue }
            defaults[slot] = attribute.defaultValue.map { AttributeValueCoding.normalize($0, for: attribute.attributeType) }
        }
        defaultValues = defaults
        toManySlots = frozenRelationships.filter(\.isToMany).map(\.slot)
        slotKeyHashes = slotKeys.map(Self.keyHash)
        slotKeyBits = slotKeys.map { unsafeBitCast($0, to: StringBits.self) }
        slotBitsTable = SlotBitsTable(slotKeyBits)
        let persistentSlots = frozenProperties.indices.filter { !frozenProperties[$0].isTransient }
        derivedSlots = frozenProperties.indices.filter { frozenProperties[$0] is NSDerivedAttributeDescription }
        validatedSlots = persistentSlots.filter { !(frozenProperties[$0] is NSDerivedAttributeDescription) }
        slotHasConstraints = frozenProperties.map { property in
            guard let attribute = property as? NSAttributeDescription else { return true }
            return attribute.minimumValue != nil || attribute.maximumValue != nil || attribute.regularExpression != nil || !attribute.validationPredicates.isEmpty
        }
        hasConstrainedSlots = validatedSlots.contains { slotHasConstraints[$0] }
        slotKinds = frozenProperties.map { property in
            if let attribute = property as? NSAttributeDescription { return .attribute(attribute.attributeType) }
            if let relationship = property as? NSRelationshipDescription { return relationship.isToMany ? .toMany : .toOne }
            return .other
        }
    }

    /// Set once the entity's run-time caches exist (no weak load of the model needed to check).
    @exclusivity(unchecked) private(set) var isFrozenForUse = false

    /// What a slot holds, so key-value coding needs no dynamic casts.
    enum SlotKind: Equatable {
        case attribute(NSAttributeType)
        case toOne
        case toMany
        case other
    }

    /// Property names by slot, and what each slot holds (set when frozen).
    @exclusivity(unchecked) private(set) var slotKeys: [String] = []
    @exclusivity(unchecked) private(set) var slotKinds: [SlotKind] = []

    @exclusivity(unchecked) private(set) var slotKeyHashes: [UInt64] = []
    /// The raw representation of each property name (see `fastSlot(forKey:)`).
    @exclusivity(unchecked) private(set) var slotKeyBits: [StringBits] = []
    /// The slots by `slotKeyBits`, found without a scan.
    @exclusivity(unchecked) private(set) var slotBitsTable = SlotBitsTable()

    /// A `String`'s two words as they are stored.
    struct StringBits: Equatable {
        let first: UInt64
        let second: UInt64
    }
    /// Whether an object's values can be handed to a store as they are: no relationship slot to
    /// translate and no transient slot to clear.
    @exclusivity(unchecked) private(set) var storesValuesVerbatim = false
    /// How objects of this entity store their values (set when frozen).
    @exclusivity(unchecked) private(set) var slotLayout: SlotLayout = .empty
    /// A new object's values: each attribute's default, nil elsewhere (shared until written).
    @exclusivity(unchecked) private(set) var defaultValues = SlotValues()
    /// The slots of to-many relationships, which a new object starts with empty.
    @exclusivity(unchecked) private(set) var toManySlots: [Int] = []
    /// The slots of derived attributes, whose values the store computes (see `AttributeDerivation`).
    @exclusivity(unchecked) private(set) var derivedSlots: [Int] = []
    /// The persistent slots a save validates: all but the derived ones, which the store fills.
    @exclusivity(unchecked) private(set) var validatedSlots: [Int] = []
    /// Whether any persistent slot has constraints (see `slotHasConstraints`).
    @exclusivity(unchecked) private(set) var hasConstrainedSlots = true
    /// Whether a slot's attribute has min/max, pattern or predicate constraints (relationships: always checked).
    @exclusivity(unchecked) private(set) var slotHasConstraints: [Bool] = []

    /// The slot of a property name: by its raw bits (`slotBitsTable`), else, for typical
    /// entities, a linear scan of cheap FNV-1a hashes confirmed by string equality, which beats a
    /// dictionary's SipHash.
    @inline(__always)
    func fastSlot(forKey key: String) -> Int? {
        // The same bits as a property name are the same string: a small string holds its bytes
        // inline, a large one is the same storage (kept alive by `slotKeys`). Names passed as
        // literals or taken from the model match here without reading a byte.
        if let slot = slot(forKeyBits: key) { return slot }
        return slot(forKeyReadingBytes: key)
    }

    /// `fastSlot(forKey:)` for a name with a property name's bits only (nil for any other key,
    /// which may still be a property's): a table lookup that calls nothing.
    @inline(__always)
    func slot(forKeyBits key: String) -> Int? {
        slotBitsTable.slot(of: unsafeBitCast(key, to: StringBits.self))
    }

    /// `fastSlot(forKey:)` for a key whose bits no property name has (a string built at run
    /// time): out of line, so the accessors that inline the bits lookup stay small.
    @inline(never)
    private func slot(forKeyReadingBytes key: String) -> Int? {
        if slotKeys.count <= 32 {
            let hash = Self.keyHash(key)
            var index = 0
            for candidate in slotKeyHashes {
                if candidate == hash && slotKeys[index] == key { return index }
                index += 1
            }
            return nil
        }
        return frozenPropertiesByName[key]?.slot
    }

    /// FNV-1a over the key's UTF-8 bytes.
    @inline(__always)
    static func keyHash(_ key: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        return hash
    }

    @exclusivity(unchecked) private(set) var frozenAttributes: [NSAttributeDescription] = []
    @exclusivity(unchecked) private(set) var frozenRelationships: [NSRelationshipDescription] = []
    @exclusivity(unchecked) private(set) var frozenRelationshipsByName: [String: NSRelationshipDescription] = [:]

    /// The slot of a property by name, or nil. Fast path for key-value coding.
    @inline(__always)
    func slot(forKey key: String) -> Int? {
        frozenPropertiesByName[key]?.slot
    }

    // MARK: Description, equality

    open override var description: String {
        "(NSEntityDescription) \(name ?? "<unnamed>"): \(properties.map(\.name).joined(separator: ", "))"
    }

    /// Whether another entity describes the same entity (see `DescriptionEquality`): two loads of
    /// one model version give equal entities.
    open override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? NSEntityDescription else { return false }
        return self === other || DescriptionEquality.equal(self, other)
    }

    /// A hash consistent with `isEqual(_:)`: the name's.
    open override var hash: Int { name.hashValue }
}
