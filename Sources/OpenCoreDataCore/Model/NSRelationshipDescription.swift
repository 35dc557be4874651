import Foundation

/// A relationship between two entities: to-one, to-many or ordered to-many.
/// Unchecked Sendable: immutable once the model is frozen (`freeze()`), which a coordinator does before use.
open class NSRelationshipDescription: NSPropertyDescription, @unchecked Sendable {
    /// The entity the relationship points to (held weakly: nil once the entity is gone).
    public var destinationEntity: NSEntityDescription? {
        get { destinationReference?.entity }
        set {
            destinationReference = newValue?.backReference
            destinationEntityName = newValue?.name
        }
    }
    private var destinationReference: EntityBackReference?
    /// The relationship on the destination that points back (held weakly).
    public weak var inverseRelationship: NSRelationshipDescription? {
        didSet { inverseName = inverseRelationship?.name }
    }
    /// The fewest objects the relationship may hold when saved (0: no minimum).
    public var minCount: Int = 0
    /// The most objects the relationship may hold (1: to-one, 0: unbounded to-many).
    public var maxCount: Int = 1
    /// What deleting the source does to the destination objects.
    public var deleteRule: NSDeleteRule = .nullifyDeleteRule
    /// Whether a to-many relationship keeps its objects in order (values are `NSOrderedSet`).
    public var isOrdered: Bool = false

    /// The destination's name: recorded while a model file is loaded, before entities are linked,
    /// and kept when the destination is set, so the relationship's hash outlives its model.
    var destinationEntityName: String?
    /// The inverse's name, recorded and kept like `destinationEntityName`.
    var inverseName: String?

    /// Whether the relationship holds at most one object.
    public var isToMany: Bool { maxCount != 1 }

    /// Creates a relationship with no name or destination.
    public override init() {
        super.init()
    }

    /// Creates a relationship to an entity.
    public init(name: String, destination: NSEntityDescription?, toMany: Bool = false, deleteRule: NSDeleteRule = .nullifyDeleteRule, ordered: Bool = false) {
        super.init(name: name)
        self.destinationEntity = destination
        self.maxCount = toMany ? 0 : 1
        self.deleteRule = deleteRule
        self.isOrdered = ordered
    }

    /// A copy with the same settings, in no entity (`NSCopying`): it points to the same
    /// destination and inverse until it is put in a copied model.
    open override func copy(with zone: NSZone? = nil) -> Any {
        let copy = NSRelationshipDescription()
        copySettings(to: copy)
        copy.destinationReference = destinationReference
        copy.destinationEntityName = destinationEntityName
        copy.inverseRelationship = inverseRelationship
        copy.inverseName = inverseName
        copy.minCount = minCount
        copy.maxCount = maxCount
        copy.deleteRule = deleteRule
        copy.isOrdered = isOrdered
        return copy
    }

    open override var description: String {
        "(NSRelationshipDescription) \(name) -> \(destinationEntity?.name ?? destinationEntityName ?? "?")\(isToMany ? " (to-many\(isOrdered ? ", ordered" : ""))" : "")"
    }
}

/// A property whose value is the result of a fetch request evaluated lazily.
/// Unchecked Sendable: immutable once the model is frozen (`freeze()`), which a coordinator does before use.
open class NSFetchedPropertyDescription: NSPropertyDescription, @unchecked Sendable {
    /// The fetch request the property evaluates.
    public var fetchRequest: NSFetchRequest<NSFetchRequestResult>?

    /// A copy with the same settings and a copy of the fetch request, in no entity (`NSCopying`).
    open override func copy(with zone: NSZone? = nil) -> Any {
        let copy = NSFetchedPropertyDescription()
        copySettings(to: copy)
        copy.fetchRequest = fetchRequest?.copied()
        return copy
    }
}
