import Foundation

/// Changes properties of every object matching a predicate directly in the store, without
/// loading them. Contexts learn of the change only through `mergeChanges(fromRemoteContextSave:into:)`.
/// Unchecked Sendable: not locked: set it up first, then execute it in one context at a time.
open class NSBatchUpdateRequest: NSPersistentStoreRequest, @unchecked Sendable {
    /// The entity's name.
    public let entityName: String
    /// The entity: the one given, or the named one once the request has run (nil before). Not
    /// optional in Core Data's declaration, so `request.entity.name` reads as there.
    public private(set) var entity: NSEntityDescription!
    /// Which objects to update (nil: all).
    public var predicate: NSPredicate?
    /// Whether objects of subentities are updated too.
    public var includesSubentities: Bool = true
    /// What the result holds.
    public var resultType: NSBatchUpdateRequestResultType = .statusOnlyResultType
    /// New values by property name (or description): constants or `NSExpression`s of the object's own attributes.
    public var propertiesToUpdate: [AnyHashable: Any]?

    open override var requestType: NSPersistentStoreRequestType { .batchUpdateRequestType }

    /// Updates objects of the named entity.
    public init(entityName: String) {
        self.entityName = entityName
        super.init()
    }

    /// Updates objects of an entity.
    public init(entity: NSEntityDescription) {
        self.entityName = entity.name ?? ""
        self.entity = entity
        super.init()
    }
}

/// Deletes every object a fetch request matches (or a list of IDs) directly in the store, without
/// loading them. Relationships pointing at deleted rows are cleared; delete rules are not run.
/// Unchecked Sendable: not locked: set it up first, then execute it in one context at a time.
open class NSBatchDeleteRequest: NSPersistentStoreRequest, @unchecked Sendable {
    /// The request whose matches are deleted.
    public let fetchRequest: NSFetchRequest<NSFetchRequestResult>
    /// The objects to delete, when created with IDs.
    let objectIDs: [NSManagedObjectID]?
    /// What the result holds.
    public var resultType: NSBatchDeleteRequestResultType = .resultTypeStatusOnly

    open override var requestType: NSPersistentStoreRequestType { .batchDeleteRequestType }

    /// Deletes what a fetch request matches.
    public init(fetchRequest: NSFetchRequest<NSFetchRequestResult>) {
        self.fetchRequest = fetchRequest
        self.objectIDs = nil
        super.init()
    }

    /// Deletes the objects with these IDs (all of one entity hierarchy).
    public init(objectIDs: [NSManagedObjectID]) {
        let request = NSFetchRequest<NSFetchRequestResult>()
        request.entity = objectIDs.first?.entity.rootEntity
        self.fetchRequest = request
        self.objectIDs = objectIDs
        super.init()
    }
}

/// Inserts rows described by dictionaries directly into the store, without creating objects in a context.
/// Unchecked Sendable: not locked: set it up first, then execute it in one context at a time.
open class NSBatchInsertRequest: NSPersistentStoreRequest, @unchecked Sendable {
    /// The entity's name.
    public let entityName: String
    /// The entity: the one given, or the named one once the request has run (nil before). Not
    /// optional in Core Data's declaration, so `request.entity.name` reads as there.
    public private(set) var entity: NSEntityDescription!
    /// The rows to insert, as property-name dictionaries.
    public var objectsToInsert: [[String: Any]]?
    /// Fills one dictionary per call; returns true when there is nothing more to insert.
    public var dictionaryHandler: ((NSMutableDictionary) -> Bool)?
    /// Fills one (unregistered) object per call; returns true when there is nothing more to insert.
    public var managedObjectHandler: ((NSManagedObject) -> Bool)?
    /// What the result holds.
    public var resultType: NSBatchInsertRequestResultType = .statusOnly

    open override var requestType: NSPersistentStoreRequestType { .batchInsertRequestType }

    /// Inserts dictionaries as objects of the named entity.
    public init(entityName: String, objects dictionaries: [[String: Any]]) {
        self.entityName = entityName
        self.objectsToInsert = dictionaries
        super.init()
    }

    /// Inserts dictionaries as objects of an entity.
    public init(entity: NSEntityDescription, objects dictionaries: [[String: Any]]) {
        self.entityName = entity.name ?? ""
        self.entity = entity
        self.objectsToInsert = dictionaries
        super.init()
    }

    /// Inserts objects of the named entity from dictionaries a handler fills.
    public init(entityName: String, dictionaryHandler handler: @escaping (NSMutableDictionary) -> Bool) {
        self.entityName = entityName
        self.dictionaryHandler = handler
        super.init()
    }

    /// Inserts objects of an entity from dictionaries a handler fills.
    public init(entity: NSEntityDescription, dictionaryHandler handler: @escaping (NSMutableDictionary) -> Bool) {
        self.entityName = entity.name ?? ""
        self.entity = entity
        self.dictionaryHandler = handler
        super.init()
    }

    /// Inserts objects of the named entity from objects a handler fills.
    public init(entityName: String, managedObjectHandler handler: @escaping (NSManagedObject) -> Bool) {
        self.entityName = entityName
        self.managedObjectHandler = handler
        super.init()
    }

    /// Inserts objects of an entity from objects a handler fills.
    public init(entity: NSEntityDescription, managedObjectHandler handler: @escaping (NSManagedObject) -> Bool) {
        self.entityName = entity.name ?? ""
        self.entity = entity
        self.managedObjectHandler = handler
        super.init()
    }

    /// The rows to insert, drawing on the handlers when the request has them.
    func rows(for entity: NSEntityDescription) -> [[String: Any]] {
        if let objectsToInsert { return objectsToInsert }
        var rows: [[String: Any]] = []
        if let dictionaryHandler {
            while true {
                let dictionary = NSMutableDictionary()
                if dictionaryHandler(dictionary) { break }
                var row: [String: Any] = [:]
                for (key, value) in dictionary { if let key = key as? String { row[key] = value } }
                rows.append(row)
            }
        } else if let managedObjectHandler {
            while true {
                let object = entity.instantiableClass.init(entity: entity, insertInto: nil)
                object.allocateStorage()
                object.applyDefaultValues()
                if managedObjectHandler(object) { break }
                var row: [String: Any] = [:]
                for attribute in entity.frozenAttributes { if let value = object.values[attribute.slot] { row[attribute.name] = value } }
                rows.append(row)
            }
        }
        return rows
    }
}

/// Runs a fetch asynchronously on the context's queue and hands the result to a completion block.
/// Unchecked Sendable: not locked: set it up first, then execute it in one context at a time.
open class NSAsynchronousFetchRequest<ResultType>: NSPersistentStoreRequest, @unchecked Sendable {
    /// The fetch to run.
    public let fetchRequest: NSFetchRequest<ResultType>
    /// Called on the context's queue when the fetch finished (or failed, or was cancelled).
    public let completionBlock: ((NSAsynchronousFetchResult<ResultType>) -> Void)?
    /// An estimate of the number of results, for progress reporting (0: unknown).
    public var estimatedResultCount: Int = 0

    open override var requestType: NSPersistentStoreRequestType { .fetchRequestType }

    /// Creates an asynchronous fetch.
    public init(fetchRequest request: NSFetchRequest<ResultType>, completionBlock blk: ((NSAsynchronousFetchResult<ResultType>) -> Void)? = nil) {
        self.fetchRequest = request
        self.completionBlock = blk
        super.init()
    }
}
