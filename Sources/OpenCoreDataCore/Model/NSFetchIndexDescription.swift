import Foundation

/// An index over one or more properties of an entity, created in the store.
/// Unchecked Sendable: part of a model: left unchanged once the model is frozen (`freeze()`).
open class NSFetchIndexDescription: NSObject, @unchecked Sendable {
    /// The index's name, unique within its entity.
    public var name: String
    /// The indexed properties, in order.
    public var elements: [NSFetchIndexElementDescription] {
        didSet { for element in elements { element.indexDescription = self } }
    }
    /// A predicate limiting the index to some rows (a partial index).
    public var partialIndexPredicate: NSPredicate?
    /// The entity the index belongs to (nil once the entity is gone, as a weak reference).
    public internal(set) var entity: NSEntityDescription? {
        get { entityReference?.entity }
        set { entityReference = newValue?.backReference }
    }
    private var entityReference: EntityBackReference?

    /// Creates an index with a name and its elements.
    public init(name: String, elements: [NSFetchIndexElementDescription]?) {
        self.name = name
        self.elements = elements ?? []
        super.init()
        for element in self.elements { element.indexDescription = self }
    }
}

/// One property of a fetch index and its order.
/// Unchecked Sendable: part of a model: left unchanged once the model is frozen (`freeze()`).
open class NSFetchIndexElementDescription: NSObject, @unchecked Sendable {
    /// How an index element is stored.
    public enum CollationType: UInt, Sendable {
        /// An ordinary B-tree index.
        case binary = 0
        /// An R-tree index (stored as an ordinary index here).
        case rTree = 1
    }
    /// The indexed property.
    public var property: NSPropertyDescription?
    /// The property's name, kept while a model file is being loaded.
    public var propertyName: String?
    /// Whether the index is in ascending order.
    public var isAscending: Bool = true
    /// The index's storage.
    public var collationType: CollationType = .binary
    /// The index the element belongs to.
    public internal(set) weak var indexDescription: NSFetchIndexDescription?

    /// Creates an element for a property.
    public init(property: NSPropertyDescription, collationType: CollationType) {
        self.property = property
        self.propertyName = property.name
        self.collationType = collationType
    }

    init(propertyName: String, ascending: Bool, collationType: CollationType) {
        self.propertyName = propertyName
        self.isAscending = ascending
        self.collationType = collationType
    }
}

/// The kind of index a fetch index element makes (Apple's top-level name of
/// `NSFetchIndexElementDescription.CollationType`).
public typealias NSFetchIndexElementType = NSFetchIndexElementDescription.CollationType
