import Foundation

/// The superclass of stores written outside the framework: a subclass loads and saves objects
/// wherever it keeps them (a web service, a file of its own format, another database), and
/// contexts, faults, relationships and fetched results controllers work on it as on any store.
///
/// Register the subclass for a store type with
/// `NSPersistentStoreCoordinator.registerStoreClass(_:forStoreType:)`, then add a store of that
/// type. The coordinator calls, as Apple's Core Data does:
/// - `loadMetadata()` when the store is added: it must set `metadata` with `NSStoreUUIDKey` and
///   `NSStoreTypeKey`;
/// - `execute(_:with:)` for fetch requests (every result type), save requests
///   (`NSSaveChangesRequest`) and batch requests;
/// - `newValuesForObject(with:with:)` when a fault fires, and
///   `newValue(forRelationship:forObjectWith:with:)` for a to-many relationship, or a to-one the
///   node left out;
/// - `obtainPermanentIDs(for:)` before inserted objects are saved;
/// - `managedObjectContextDidRegisterObjects(with:)` and `…DidUnregisterObjects(with:)` as
///   contexts start and stop using objects.
///
/// Object IDs are made from the store's reference objects with `newObjectID(for:referenceObject:)`
/// and read back with `referenceObject(for:)`.
///
/// Optimistic locking: a store gives each node a version and adds one whenever it saves a change
/// to the object. A save whose object was read at an older version than the store's meets a
/// conflict, resolved by the context's merge policy. A store may also throw
/// `NSPersistentStoreSaveConflictsError` (134050) with `NSMergeConflict`s of its own.
///
/// The coordinator calls a store under its lock; the reference table and the record of objects in
/// use have locks of their own, as a subclass may make IDs or hear of contexts on any thread.
open class NSIncrementalStore: NSPersistentStore {
    /// Reference objects and the keys of the IDs made from them.
    private let references = LockedValue(ReferenceObjectTable())
    /// The IDs each context was told about in `managedObjectContextDidRegisterObjects(with:)`,
    /// by context, to tell the store when the context lets them go.
    private var registered: [ObjectIdentifier: Set<NSManagedObjectID>] = [:]
    private let registeredLock = NSLock()

    // MARK: What a subclass overrides

    /// Reads the store's metadata and sets `metadata` (with `NSStoreUUIDKey` and
    /// `NSStoreTypeKey`). Subclasses must override it.
    override open func loadMetadata() throws {
        throw Self.notOverridden("loadMetadata()")
    }

    /// Runs a request: an `NSFetchRequest` (return an array of objects, object IDs, dictionaries,
    /// or one `NSNumber` count, by its `resultType`), an `NSSaveChangesRequest` (save it all or
    /// nothing and return an empty array), or a batch request (return its result). Subclasses
    /// must override it.
    open func execute(_ request: NSPersistentStoreRequest, with context: NSManagedObjectContext?) throws -> Any {
        throw Self.notOverridden("execute(_:with:)")
    }

    /// The stored values of an object, as a node with its version. Throw when the object is not
    /// in the store (an error of code 133000 says it no longer exists). Subclasses must override it.
    open func newValuesForObject(with objectID: NSManagedObjectID, with context: NSManagedObjectContext) throws -> NSIncrementalStoreNode {
        throw Self.notOverridden("newValuesForObject(with:with:)")
    }

    /// The destination of a relationship: an `NSManagedObjectID` (or `NSNull`) for a to-one, a
    /// collection of `NSManagedObjectID`s for a to-many. Subclasses must override it.
    open func newValue(forRelationship relationship: NSRelationshipDescription, forObjectWith objectID: NSManagedObjectID,
                       with context: NSManagedObjectContext?) throws -> Any {
        throw Self.notOverridden("newValue(forRelationship:forObjectWith:with:)")
    }

    /// Permanent IDs for newly inserted objects, in the same order (made with
    /// `newObjectID(for:referenceObject:)`). Subclasses must override it.
    open func obtainPermanentIDs(for array: [NSManagedObject]) throws -> [NSManagedObjectID] {
        throw Self.notOverridden("obtainPermanentIDs(for:)")
    }

    /// Tells the store that a context started using the objects with these IDs.
    open func managedObjectContextDidRegisterObjects(with objectIDs: [NSManagedObjectID]) {}

    /// Tells the store that a context stopped using the objects with these IDs.
    open func managedObjectContextDidUnregisterObjects(with objectIDs: [NSManagedObjectID]) {}

    /// A new identifier for a store at a URL (a UUID string), for `loadMetadata()` to put under
    /// `NSStoreUUIDKey` when the store is new.
    open class func identifierForNewStore(at storeURL: URL) -> Any {
        UUID().uuidString
    }

    // MARK: IDs and reference objects

    /// The ID of the object of an entity that the store knows by `data`. The same reference gives
    /// an equal ID every time: positive integers name themselves, other references (strings,
    /// UUIDs, any `Hashable` value) are numbered for the store's lifetime.
    public final func newObjectID(for entity: NSEntityDescription, referenceObject data: Any) -> NSManagedObjectID {
        coreDataPrecondition(identifier != nil,
                             "newObjectID(for:referenceObject:): the store has no identifier yet; set metadata[NSStoreUUIDKey] in loadMetadata() first.")
        let key = references.key(forReference: data, caller: "newObjectID(for:referenceObject:)")
        return objectID(for: entity, primaryKey: key)
    }

    /// The reference object an ID of this store was made from.
    public final func referenceObject(for objectID: NSManagedObjectID) -> Any {
        references.reference(of: objectID, in: self, caller: "referenceObject(for:)", maker: "newObjectID(for:referenceObject:)")
    }

    // MARK: The engine, through the methods above

    override func load() throws {
        try loadMetadata()
        guard let metadata, let uuid = metadata[NSStoreUUIDKey] as? String, !uuid.isEmpty, metadata[NSStoreTypeKey] is String else {
            throw CoreDataError.make(.invalidType, "\(Swift.type(of: self)).loadMetadata() must set metadata with NSStoreUUIDKey and NSStoreTypeKey.", url: url)
        }
        identifier = uuid
    }

    override func close() {
        registeredLock.lock()
        let all = registered
        registered.removeAll()
        registeredLock.unlock()
        for ids in all.values where !ids.isEmpty { managedObjectContextDidUnregisterObjects(with: Array(ids)) }
    }

    override func fetchRows(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription) throws -> FetchedRows {
        let context = RequestingContext.current
        // A store reads `request.entity`, as Core Data sets it before a request reaches a store.
        if request.entity == nil { request.entity = entity }
        let result = try execute(request, with: context)
        guard let items = Self.array(result) else { throw badResult(result, for: "a fetch request") }
        let ids = try items.map { item -> NSManagedObjectID in
            if let id = item as? NSManagedObjectID { return id }
            if let object = item as? NSManagedObject { return object.objectID }
            throw badResult(item, for: "a fetch request of objects")
        }
        announce(ids, to: context)
        return FetchedRows(ids.lazy.map { FetchedRow($0, nil) })
    }

    override func countRows(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription) throws -> Int {
        let counting = request.copied()
        counting.resultType = .countResultType
        if counting.entity == nil { counting.entity = entity }
        let result = try execute(counting, with: RequestingContext.current)
        if let count = Self.integer(result) { return count }
        if let items = Self.array(result) {
            if items.count == 1, let count = Self.integer(items[0]) { return count }
            return items.count
        }
        throw badResult(result, for: "a count request")
    }

    override func fetchDictionaries(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription) throws -> [[String: Any]] {
        if request.entity == nil { request.entity = entity }
        let result = try execute(request, with: RequestingContext.current)
        guard let items = Self.array(result) else { throw badResult(result, for: "a dictionary fetch request") }
        return try items.map { item in
            if let dictionary = item as? [String: Any] { return dictionary }
            if let dictionary = item as? NSDictionary, let bridged = dictionary as? [String: Any] { return bridged }
            throw badResult(item, for: "a dictionary fetch request")
        }
    }

    override func loadRow(_ objectID: NSManagedObjectID) throws -> StoredRow? {
        let context = try requestingContext(for: "newValuesForObject(with:with:)")
        let node: NSIncrementalStoreNode
        do {
            node = try newValuesForObject(with: objectID, with: context)
        } catch let error as NSError where error.domain == NSCocoaErrorDomain && error.code == CoreDataError.Code.referentialIntegrity.rawValue {
            return nil
        }
        announce([objectID], to: context)
        return try storedRow(of: node, entity: objectID.entity, context: context)
    }

    override func loadToManyIDs(_ objectID: NSManagedObjectID, relationship: NSRelationshipDescription) throws -> [NSManagedObjectID] {
        let value = try newValue(forRelationship: relationship, forObjectWith: objectID, with: RequestingContext.current)
        if value is NSNull { return [] }
        guard let items = Self.array(value) else { throw badResult(value, for: "the to-many relationship '\(relationship.name)'") }
        return try items.map { item in
            guard let id = item as? NSManagedObjectID else { throw badResult(item, for: "the to-many relationship '\(relationship.name)'") }
            return id
        }
    }

    override func permanentKeys(for ids: [NSManagedObjectID]) throws -> [Int64] {
        let context = try requestingContext(for: "obtainPermanentIDs(for:)")
        let objects = try ids.map { id in
            guard let object = context.registeredObject(for: id) else {
                throw CoreDataError.make(.coreData, "The object \(id) is not registered in the saving context.")
            }
            return object
        }
        let permanent = try obtainPermanentIDs(for: objects)
        guard permanent.count == objects.count else {
            throw CoreDataError.make(.coreData, "\(Swift.type(of: self)).obtainPermanentIDs(for:) returned \(permanent.count) IDs for \(objects.count) objects.")
        }
        return try zip(objects, permanent).map { object, id in
            guard !id.isTemporaryID, id.storeIdentifier == identifier, id.entity.rootEntity === object.entity.rootEntity else {
                throw CoreDataError.make(.coreData, "\(Swift.type(of: self)).obtainPermanentIDs(for:) returned \(id) for \(object.objectID): make IDs with newObjectID(for:referenceObject:) and the object's entity.")
            }
            return id.primaryKey
        }
    }

    override func save(_ changes: SaveChanges) throws -> PermanentIDs {
        let context = try requestingContext(for: "a save request")
        try checkVersions(of: changes, in: context)
        func objects(_ records: [SaveRecord]) -> Set<NSManagedObject>? {
            records.isEmpty ? nil : Set(records.compactMap { context.registeredObject(for: $0.objectID) })
        }
        // Inserted objects took permanent IDs before the save (`NSManagedObjectContext.save`).
        let request = NSSaveChangesRequest(inserted: objects(changes.inserted), updated: objects(changes.updated),
                                           deleted: objects(changes.deleted), locked: objects(changes.checked))
        do {
            _ = try execute(request, with: context)
        } catch let error as NSError where error.domain == NSCocoaErrorDomain && error.code == 134050 {
            let conflicts = (error.userInfo[NSPersistentStoreSaveConflictsErrorKey] as? [NSMergeConflict]) ?? []
            guard !conflicts.isEmpty else { throw error }
            throw StoreVersionConflicts(objectIDs: conflicts.map(\.sourceObject.objectID))
        }
        announce(changes.inserted.map(\.objectID), to: context)
        return [:]
    }

    override func executeBatch(_ request: NSPersistentStoreRequest, entity: NSEntityDescription, author: TransactionAuthor) throws -> NSPersistentStoreResult {
        let result = try execute(request, with: RequestingContext.current)
        guard let result = result as? NSPersistentStoreResult else { throw badResult(result, for: "\(Swift.type(of: request))") }
        return result
    }

    /// A context forgot its objects (reset, or freed): the store is told it stopped using them.
    override func contextDidForgetObjects(_ context: ObjectIdentifier) {
        registeredLock.lock()
        let ids = registered.removeValue(forKey: context)
        registeredLock.unlock()
        if let ids, !ids.isEmpty { managedObjectContextDidUnregisterObjects(with: Array(ids)) }
    }

    // MARK: Helpers

    /// Optimistic locking: changed, deleted and locked objects read at an older version than the
    /// store's node now has, or changed objects the store no longer has, are conflicts.
    private func checkVersions(of changes: SaveChanges, in context: NSManagedObjectContext) throws {
        var conflicting: [NSManagedObjectID] = []
        for (records, goneIsConflict) in [(changes.updated, true), (changes.checked, true), (changes.deleted, false)] {
            for record in records where !record.objectID.isTemporaryID {
                do {
                    let node = try newValuesForObject(with: record.objectID, with: context)
                    if Int64(clamping: node.version) > record.version { conflicting.append(record.objectID) }
                } catch let error as NSError where error.domain == NSCocoaErrorDomain && error.code == CoreDataError.Code.referentialIntegrity.rawValue {
                    if goneIsConflict { conflicting.append(record.objectID) }
                }
            }
        }
        if !conflicting.isEmpty { throw StoreVersionConflicts(objectIDs: conflicting) }
    }

    /// A node's values as the slots of a stored row: attributes in their canonical types, to-one
    /// relationships as IDs (asked for when the node leaves them out).
    private func storedRow(of node: NSIncrementalStoreNode, entity: NSEntityDescription, context: NSManagedObjectContext) throws -> StoredRow {
        var values = SlotValues(layout: entity.slotLayout)
        for property in entity.frozenProperties where !property.isTransient {
            if let attribute = property as? NSAttributeDescription {
                guard let value = node.value(for: attribute), !(value is NSNull) else { continue }
                let normalized = AttributeValueCoding.normalize(value, for: attribute.attributeType)
                guard AttributeValueCoding.hasCanonicalType(normalized, for: attribute.attributeType) else {
                    throw CoreDataError.make(.typeMismatch, "\(Swift.type(of: self)) gave \(Swift.type(of: value)) for '\(attribute.name)' of \(node.objectID), which is \(attribute.attributeType.xcodeName).")
                }
                values[attribute.slot] = normalized
            } else if let relationship = property as? NSRelationshipDescription, !relationship.isToMany {
                let value = try node.value(for: relationship) ?? newValue(forRelationship: relationship, forObjectWith: node.objectID, with: context)
                if value is NSNull { continue }
                guard let id = value as? NSManagedObjectID else { throw badResult(value, for: "the to-one relationship '\(relationship.name)'") }
                values[relationship.slot] = id
            }
        }
        return StoredRow(values: values, version: Int64(clamping: node.version))
    }

    /// Tells the store about IDs a context now uses, once each.
    private func announce(_ ids: [NSManagedObjectID], to context: NSManagedObjectContext?) {
        guard let context, !ids.isEmpty else { return }
        registeredLock.lock()
        var known = registered[ObjectIdentifier(context)] ?? []
        let new = ids.filter { known.insert($0).inserted }
        registered[ObjectIdentifier(context)] = known
        registeredLock.unlock()
        if !new.isEmpty { managedObjectContextDidRegisterObjects(with: new) }
    }

    private func requestingContext(for call: String) throws -> NSManagedObjectContext {
        guard let context = RequestingContext.current else {
            throw CoreDataError.make(.coreData, "\(Swift.type(of: self)): \(call) needs the context that asks, and none is known on this thread.")
        }
        return context
    }

    private func badResult(_ value: Any, for what: String) -> NSError {
        CoreDataError.make(.coreData, "\(Swift.type(of: self)).execute or newValue returned \(Swift.type(of: value)) for \(what).")
    }

    private static func notOverridden(_ method: String) -> NSError {
        CoreDataError.make(.coreData, "\(self) must override \(method) (NSIncrementalStore subclasses implement it).")
    }

    /// The elements of an array, set or ordered set a store returned.
    static func array(_ value: Any) -> [Any]? {
        switch value {
        case let array as [Any]: return array
        case let set as Set<NSManagedObjectID>: return Array(set)
        case let set as Set<NSManagedObject>: return Array(set)
        case let set as Set<AnyHashable>: return set.map(\.base)
        case let array as NSArray: return array.map { $0 }
        case let set as NSSet: return set.map { $0 }
        case let ordered as NSOrderedSet: return ordered.array
        default: return nil
        }
    }

    private static func integer(_ value: Any) -> Int? {
        switch value {
        case let count as Int: return count
        case let count as NSNumber: return count.intValue
        default: return nil
        }
    }
}
