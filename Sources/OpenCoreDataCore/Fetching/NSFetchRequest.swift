import Foundation

/// A description of what to fetch: an entity, a predicate, an order, limits and the result shape.
///
/// `ResultType` is the type of each result (`NSManagedObject` or a subclass, `NSManagedObjectID`,
/// `NSDictionary`, `NSNumber`) or the existential `NSFetchRequestResult`.
/// Unchecked Sendable: not locked: set it up first; fetches only read it, so don't change one in use.
open class NSFetchRequest<ResultType>: NSPersistentStoreRequest, NSCopying, @unchecked Sendable {
    /// The name of the entity to fetch.
    public var entityName: String?
    private var explicitEntity: NSEntityDescription?
    /// The entity name recorded by a model file's template, resolved when the request runs.
    var templateEntityName: String?

    /// Which objects to return; nil returns all.
    public var predicate: NSPredicate?
    /// The order of the results.
    public var sortDescriptors: [NSSortDescriptor]?
    /// The most results to return (0: no limit).
    public var fetchLimit: Int = 0
    /// How many results to skip.
    public var fetchOffset: Int = 0
    /// How many objects to load at a time (0: all at once).
    public var fetchBatchSize: Int = 0
    /// Whether objects of subentities match too.
    public var includesSubentities: Bool = true
    /// Whether unsaved changes in the context are reflected in the results.
    public var includesPendingChanges: Bool = true
    /// Whether returned objects are faults until a property is read.
    public var returnsObjectsAsFaults: Bool = true
    /// Whether property values are loaded with the objects.
    public var includesPropertyValues: Bool = true
    /// Whether a dictionary fetch returns only distinct dictionaries.
    public var returnsDistinctResults: Bool = false
    /// Whether fetched objects' values replace the values of already registered unchanged objects.
    public var shouldRefreshRefetchedObjects: Bool = false
    /// The shape of the results.
    public var resultType: NSFetchRequestResultType = .managedObjectResultType
    /// For dictionary results: property names, property descriptions or expression descriptions.
    public var propertiesToFetch: [Any]?
    /// For dictionary results: the properties to group by.
    public var propertiesToGroupBy: [Any]?
    /// For grouped dictionary results: a predicate on the groups.
    public var havingPredicate: NSPredicate?
    /// Relationship key paths whose destinations are loaded along with the results.
    public var relationshipKeyPathsForPrefetching: [String]?

    open override var requestType: NSPersistentStoreRequestType { .fetchRequestType }

    /// Creates a request with no entity.
    public override init() {
        super.init()
    }

    /// Creates a request for an entity by name.
    public init(entityName: String) {
        self.entityName = entityName
        super.init()
    }

    /// The entity to fetch. Setting it also sets `entityName`.
    public var entity: NSEntityDescription? {
        get { explicitEntity }
        set {
            explicitEntity = newValue
            entityName = newValue?.name
        }
    }

    /// Runs the request in the context whose `perform` block is executing on this thread.
    public func execute() throws -> [ResultType] {
        guard let context = NSManagedObjectContext.currentlyPerforming else {
            coreDataMisuse("NSFetchRequest.execute() must be called inside a managed object context's perform block.")
        }
        return try context.fetch(self)
    }

    /// A copy with the same settings, typed.
    func copied() -> NSFetchRequest<ResultType> {
        let copy = NSFetchRequest<ResultType>()
        copy.copySettings(from: self)
        return copy
    }

    /// A copy with the same settings (`NSCopying`; `copy()` returns it as `Any`, as Apple's does).
    open func copy(with zone: NSZone? = nil) -> Any { copied() }

    func copySettings<Other>(from other: NSFetchRequest<Other>) {
        entityName = other.entityName
        explicitEntity = other.explicitEntity
        templateEntityName = other.templateEntityName
        predicate = other.predicate
        sortDescriptors = other.sortDescriptors
        fetchLimit = other.fetchLimit
        fetchOffset = other.fetchOffset
        fetchBatchSize = other.fetchBatchSize
        includesSubentities = other.includesSubentities
        includesPendingChanges = other.includesPendingChanges
        returnsObjectsAsFaults = other.returnsObjectsAsFaults
        includesPropertyValues = other.includesPropertyValues
        returnsDistinctResults = other.returnsDistinctResults
        shouldRefreshRefetchedObjects = other.shouldRefreshRefetchedObjects
        resultType = other.resultType
        propertiesToFetch = other.propertiesToFetch
        propertiesToGroupBy = other.propertiesToGroupBy
        havingPredicate = other.havingPredicate
        relationshipKeyPathsForPrefetching = other.relationshipKeyPathsForPrefetching
        affectedStores = other.affectedStores
    }

    /// The same request typed for any result, as the stores see it.
    var erased: NSFetchRequest<NSFetchRequestResult> {
        if let same = self as? NSFetchRequest<NSFetchRequestResult> { return same }
        let copy = NSFetchRequest<NSFetchRequestResult>()
        copy.copySettings(from: self)
        return copy
    }

    /// Resolves the entity against a model, or throws a clear error.
    func resolvedEntity(in model: NSManagedObjectModel) throws -> NSEntityDescription {
        if let entity = explicitEntity { return entity }
        guard let name = entityName ?? templateEntityName else {
            throw CoreDataError.make(.coreData, "The fetch request has no entity: set entityName or entity.")
        }
        guard let entity = model.entitiesByName[name] else {
            throw CoreDataError.make(.coreData, "The fetch request's entity '\(name)' is not in the model.")
        }
        return entity
    }

    open override var description: String {
        var parts = ["<NSFetchRequest> entity: \(entityName ?? templateEntityName ?? "nil")"]
        if let predicate { parts.append("predicate: (\(predicate))") }
        if let sortDescriptors, !sortDescriptors.isEmpty { parts.append("sortDescriptors: (\(sortDescriptors.map(\.description).joined(separator: ", ")))") }
        parts.append("limit: \(fetchLimit)")
        return parts.joined(separator: "; ")
    }

    /// Whether another request asks for the same results: the same entity, predicates, sort
    /// descriptors, limits, batch size, result type, properties and flags.
    open override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? NSFetchRequest<ResultType> else { return false }
        if self === other { return true }
        func names(_ properties: [Any]?) -> [String]? {
            properties?.map { ($0 as? NSPropertyDescription)?.name ?? ($0 as? String) ?? "\($0)" }
        }
        return (entityName ?? templateEntityName) == (other.entityName ?? other.templateEntityName)
            && predicate == other.predicate && sortDescriptors == other.sortDescriptors
            && fetchLimit == other.fetchLimit && fetchOffset == other.fetchOffset && fetchBatchSize == other.fetchBatchSize
            && resultType == other.resultType && includesSubentities == other.includesSubentities
            && includesPendingChanges == other.includesPendingChanges && returnsObjectsAsFaults == other.returnsObjectsAsFaults
            && includesPropertyValues == other.includesPropertyValues && returnsDistinctResults == other.returnsDistinctResults
            && shouldRefreshRefetchedObjects == other.shouldRefreshRefetchedObjects
            && names(propertiesToFetch) == names(other.propertiesToFetch) && names(propertiesToGroupBy) == names(other.propertiesToGroupBy)
            && havingPredicate == other.havingPredicate && relationshipKeyPathsForPrefetching == other.relationshipKeyPathsForPrefetching
    }

    /// A hash consistent with `isEqual(_:)`.
    open override var hash: Int {
        var hasher = Hasher()
        hasher.combine(entityName ?? templateEntityName)
        hasher.combine(predicate)
        hasher.combine(fetchLimit)
        return hasher.finalize()
    }
}

/// A fetch request of any result type, seen as one of `NSFetchRequestResult` (a request held as
/// `Any`, as an expression's value is).
protocol FetchRequestErasing {
    /// The request with `NSFetchRequestResult` results: itself, or a copy of its settings.
    var erased: NSFetchRequest<NSFetchRequestResult> { get }
}

extension NSFetchRequest: FetchRequestErasing {}
