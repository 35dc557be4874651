import Foundation
import OrderedCollections

/// The superclass of stores that read their whole file when added and write it whole when
/// saved, in a format of their own (JSON, XML, a property list): a subclass turns the file into
/// cache nodes and back, and the store does the rest: fetching (predicates and sort descriptors
/// evaluated in memory), faults, relationships, optimistic locking and fetched results
/// controllers work on it as on any store.
///
/// Register the subclass for a store type with
/// `NSPersistentStoreCoordinator.registerStoreClass(_:forStoreType:)`, then add a store of that
/// type. As in Apple's Core Data, a subclass overrides:
/// - `load()`: read the file at `url` (a missing or empty file is a new store), set `metadata`
///   from it, make a node for each object with an ID from `objectID(for:withReferenceObject:)`,
///   and register the nodes with `addCacheNodes(_:)`;
/// - `save()`: write `cacheNodes()` and `metadata` to `url`;
/// - `newReferenceObject(for:)`: the reference a newly inserted object is known by in the file.
///
/// `newCacheNode(for:)` and `updateCacheNode(_:from:)` copy an object's persistent values into
/// a node; their implementations here do that generically, so a subclass overrides them only to
/// keep something else. For a save the store calls `newReferenceObject(for:)` for each inserted
/// object (when it takes its permanent ID), then `newCacheNode(for:)` for each inserted object,
/// `updateCacheNode(_:from:)` for each inserted object again (now that every inserted object has
/// a node, so relationships between them resolve) and each updated one, `willRemoveCacheNodes(_:)`
/// with the deleted objects' nodes, and `save()`. When `save()` throws, the nodes are put back as
/// they were and the context's save fails with nothing changed.
///
/// A store starts with metadata of its own (`NSStoreUUIDKey`, `NSStoreTypeKey` and the model's
/// version hashes); `load()` replaces it with the metadata its file kept. When that metadata has
/// version hashes that don't match the model, adding the store fails with 134100. Override the
/// class methods `metadataForPersistentStore(with:)` and `setMetadata(_:forPersistentStoreAt:)` so
/// that `NSPersistentStoreCoordinator` can read and write a file's metadata without adding it.
///
/// The coordinator calls a store under its lock: the nodes are read and changed on one thread at
/// a time.
open class NSAtomicStore: NSPersistentStore, StoredValueSource {
    /// Reference objects and the keys of the IDs made from them.
    private let references = LockedValue(ReferenceObjectTable())
    /// The registered nodes, by ID.
    private var nodes: [NSManagedObjectID: NSAtomicStoreCacheNode] = [:]
    /// The registered IDs in the order their nodes were added: the order of unsorted fetches.
    private var order: OrderedSet<NSManagedObjectID> = []
    /// Each node's optimistic-locking version: 1 when loaded or inserted, one more per saved change.
    private var versions: [NSManagedObjectID: Int64] = [:]

    /// Creates a store for a coordinator, with new metadata (a new `NSStoreUUIDKey`) until
    /// `load()` reads the file's.
    public override init(persistentStoreCoordinator root: NSPersistentStoreCoordinator?, configurationName name: String?, at url: URL,
                         options: [AnyHashable: Any]? = nil) {
        super.init(persistentStoreCoordinator: root, configurationName: name, at: url, options: options)
        let initial = initialMetadata()
        metadata = initial
        identifier = initial[NSStoreUUIDKey] as? String
    }

    /// The store's metadata; setting metadata with an `NSStoreUUIDKey` makes it the store's
    /// `identifier`, which the IDs made afterwards carry.
    open override var metadata: [String: Any]! {
        didSet {
            if let uuid = metadata?[NSStoreUUIDKey] as? String, !uuid.isEmpty, uuid != identifier { identifier = uuid }
        }
    }

    // MARK: What a subclass overrides

    /// Reads the file at `url` into cache nodes (see the class's discussion). Subclasses must
    /// override it; a missing or empty file is a new store, with no nodes.
    open override func load() throws {
        throw CoreDataError.make(.coreData, "\(Swift.type(of: self)) must override load() (NSAtomicStore subclasses read their file there).")
    }

    /// Writes the registered nodes and the metadata to `url`. Subclasses must override it; a
    /// thrown error fails the context's save, with nothing changed.
    open func save() throws {
        throw CoreDataError.make(.coreData, "\(Swift.type(of: self)) must override save() (NSAtomicStore subclasses write their file there).")
    }

    /// The reference object the file will know a newly inserted object by: positive integers
    /// name their IDs across launches (`…/p42`); other `Hashable` values are numbered for the
    /// store's lifetime. Subclasses override it; this one returns a new UUID string.
    open func newReferenceObject(for managedObject: NSManagedObject) -> Any {
        UUID().uuidString
    }

    /// A node for a newly inserted object, holding its values. This one makes an
    /// `NSAtomicStoreCacheNode` and fills it with `updateCacheNode(_:from:)`.
    open func newCacheNode(for managedObject: NSManagedObject) -> NSAtomicStoreCacheNode {
        let node = NSAtomicStoreCacheNode(objectID: managedObject.objectID)
        updateCacheNode(node, from: managedObject)
        return node
    }

    /// Copies an object's persistent values into its node. This one sets every persistent
    /// attribute's value, and each relationship's destinations as their nodes (or, for an object
    /// without a node yet, its ID).
    open func updateCacheNode(_ node: NSAtomicStoreCacheNode, from managedObject: NSManagedObject) {
        for property in managedObject.entity.frozenProperties where !property.isTransient {
            switch property {
            case let relationship as NSRelationshipDescription:
                if relationship.isToMany {
                    let value = managedObject.value(forKey: relationship.name)
                    let destinations = (value.flatMap(NSIncrementalStore.array) ?? []).compactMap { $0 as? NSManagedObject }
                    let members = destinations.map { cacheNode(for: $0.objectID) ?? $0.objectID as Any }
                    if relationship.isOrdered {
                        node.setValue(members, forKey: relationship.name)
                    } else {
                        node.setValue(NSSet(array: members), forKey: relationship.name)
                    }
                } else {
                    let destination = managedObject.value(forKey: relationship.name) as? NSManagedObject
                    node.setValue(destination.map { cacheNode(for: $0.objectID) ?? $0.objectID as Any }, forKey: relationship.name)
                }
            case is NSAttributeDescription:
                node.setValue(managedObject.value(forKey: property.name), forKey: property.name)
            default:
                continue
            }
        }
    }

    /// Told, before `save()`, of the nodes of the objects a save deletes; they are unregistered
    /// after the call. Override it to forget them in the file.
    open func willRemoveCacheNodes(_ cacheNodes: Set<NSAtomicStoreCacheNode>) {}

    // MARK: Nodes

    /// The registered nodes.
    open func cacheNodes() -> Set<NSAtomicStoreCacheNode> {
        Set(nodes.values)
    }

    /// Registers nodes (from `load()`); a node for an ID already registered replaces it.
    open func addCacheNodes(_ cacheNodes: Set<NSAtomicStoreCacheNode>) {
        for node in cacheNodes.sorted(by: { $0.objectID.primaryKey < $1.objectID.primaryKey }) { register(node) }
    }

    /// The registered node of an object, if any.
    open func cacheNode(for objectID: NSManagedObjectID) -> NSAtomicStoreCacheNode? {
        nodes[objectID]
    }

    // MARK: IDs and reference objects

    /// The ID of the object of an entity that the file knows by `data`; the same reference gives
    /// an equal ID every time (see `newReferenceObject(for:)`).
    public final func objectID(for entity: NSEntityDescription, withReferenceObject data: Any) -> NSManagedObjectID {
        let key = references.key(forReference: data, caller: "objectID(for:withReferenceObject:)")
        return objectID(for: entity, primaryKey: key)
    }

    /// The reference object an ID of this store was made from.
    public final func referenceObject(for objectID: NSManagedObjectID) -> Any {
        references.reference(of: objectID, in: self, caller: "referenceObject(for:)", maker: "objectID(for:withReferenceObject:)")
    }

    // MARK: The engine, through the methods above

    override func didAttach(to coordinator: NSPersistentStoreCoordinator) throws {
        var metadata = self.metadata ?? [:]
        if (metadata[NSStoreTypeKey] as? String ?? "").isEmpty { metadata[NSStoreTypeKey] = type }
        guard let uuid = metadata[NSStoreUUIDKey] as? String, !uuid.isEmpty else {
            throw CoreDataError.make(.invalidType, "\(Swift.type(of: self)).load() left the store's metadata without NSStoreUUIDKey.", url: url)
        }
        if metadata[NSStoreModelVersionHashesKey] != nil {
            let changed = StoreModelMatching.changedEntities(entities, against: metadata)
            guard changed.isEmpty else {
                throw CoreDataError.make(.incompatibleVersionHash, "The model used to open the store is incompatible with the one used to create the store at \(url?.path ?? "?") (changed entities: \(changed.joined(separator: ", "))).", url: url)
            }
        }
        self.metadata = StoreModelMatching.typed(metadata)
        identifier = uuid
    }

    override func fetchRows(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription) throws -> FetchedRows {
        let ids = matching(request, entity: entity)
        let rows = try ids.map { id in FetchedRow(id, request.includesPropertyValues ? try storedRow(of: id) : nil) }
        return FetchedRows(rows.lazy)
    }

    override func countRows(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription) throws -> Int {
        matching(request, entity: entity).count
    }

    override func fetchDictionaries(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription) throws -> [[String: Any]] {
        StoredRowEvaluation.dictionaries(request, entity: entity, in: self) { matching($0, entity: entity) }
    }

    override func loadRow(_ objectID: NSManagedObjectID) throws -> StoredRow? {
        nodes[objectID] == nil ? nil : try storedRow(of: objectID)
    }

    override func loadToManyIDs(_ objectID: NSManagedObjectID, relationship: NSRelationshipDescription) throws -> [NSManagedObjectID] {
        destinationIDs(nodes[objectID]?.value(forKey: relationship.name))
    }

    /// Reads a node's value for the in-memory evaluator.
    func value(of id: NSManagedObjectID, forKey key: String) -> Any? {
        guard let node = nodes[id], let property = id.entity.frozenPropertiesByName[key] else { return nil }
        if let relationship = property as? NSRelationshipDescription {
            if relationship.isToMany { return destinationIDs(node.value(forKey: key)).map { RowReader(store: self, id: $0) } }
            return destinationID(node.value(forKey: key)).map { RowReader(store: self, id: $0) }
        }
        guard let attribute = property as? NSAttributeDescription, let value = node.value(forKey: key) else { return nil }
        return AttributeValueCoding.normalize(value, for: attribute.attributeType)
    }

    override func permanentKeys(for ids: [NSManagedObjectID]) throws -> [Int64] {
        let context = try requestingContext(for: "newReferenceObject(for:)")
        return try ids.map { id in
            let object = try registeredObject(id, in: context)
            let reference = newReferenceObject(for: object)
            guard let key = references.withLock({ $0.key(for: reference) }) else {
                throw CoreDataError.make(.coreData, "\(Swift.type(of: self)).newReferenceObject(for:) returned \(Swift.type(of: reference)), which is not Hashable; return a string, a number or another Hashable value.")
            }
            return key
        }
    }

    override func save(_ changes: SaveChanges) throws -> PermanentIDs {
        let context = try requestingContext(for: "a save")
        try checkVersions(of: changes)
        let saved = (nodes, order, versions)
        var caches: [(NSAtomicStoreCacheNode, NSMutableDictionary?)] = []
        do {
            let inserted = try changes.inserted.map { record -> (NSManagedObject, NSAtomicStoreCacheNode) in
                let object = try registeredObject(record.objectID, in: context)
                let node = newCacheNode(for: object)
                guard node.objectID == record.objectID else {
                    throw CoreDataError.make(.coreData, "\(Swift.type(of: self)).newCacheNode(for:) returned a node for \(node.objectID), not for \(record.objectID).")
                }
                return (object, node)
            }
            for (_, node) in inserted {
                register(node)
                versions[node.objectID] = 1
            }
            for (object, node) in inserted { updateCacheNode(node, from: object) }
            for record in changes.updated {
                guard let node = nodes[record.objectID] else { continue }
                caches.append((node, node.propertyCache?.mutableCopy() as? NSMutableDictionary))
                updateCacheNode(node, from: try registeredObject(record.objectID, in: context))
                versions[record.objectID, default: 1] += 1
            }
            let removed = Set(changes.deleted.compactMap { nodes[$0.objectID] })
            if !removed.isEmpty { willRemoveCacheNodes(removed) }
            for node in removed { unregister(node.objectID) }
            try save()
            return [:]
        } catch {
            (nodes, order, versions) = saved
            for (node, cache) in caches { node.propertyCache = cache }
            throw error
        }
    }

    // MARK: Helpers

    private func register(_ node: NSAtomicStoreCacheNode) {
        nodes[node.objectID] = node
        order.append(node.objectID)
        if versions[node.objectID] == nil { versions[node.objectID] = 1 }
    }

    private func unregister(_ id: NSManagedObjectID) {
        nodes[id] = nil
        order.remove(id)
        versions[id] = nil
    }

    private func matching(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription) -> [NSManagedObjectID] {
        let ids = order.elements.filter { id in
            request.includesSubentities ? id.entity.isKindOf(entity: entity) : id.entity === entity
        }
        return StoredRowEvaluation.matching(ids, in: self, request: request)
    }

    /// Optimistic locking: a changed or locked object read at an older version than its node's,
    /// or whose node is gone, and a deleted object read at an older version, are conflicts.
    private func checkVersions(of changes: SaveChanges) throws {
        var conflicting: [NSManagedObjectID] = []
        for (records, goneIsConflict) in [(changes.updated, true), (changes.checked, true), (changes.deleted, false)] {
            for record in records where !record.objectID.isTemporaryID {
                if let version = versions[record.objectID] {
                    if version > record.version { conflicting.append(record.objectID) }
                } else if goneIsConflict {
                    conflicting.append(record.objectID)
                }
            }
        }
        if !conflicting.isEmpty { throw StoreVersionConflicts(objectIDs: conflicting) }
    }

    /// A node's values as the slots of a stored row: attributes in their canonical types, to-one
    /// relationships as IDs.
    private func storedRow(of id: NSManagedObjectID) throws -> StoredRow {
        let entity = id.entity
        var values = SlotValues(layout: entity.slotLayout)
        guard let node = nodes[id] else { return StoredRow(values: values, version: 0) }
        for property in entity.frozenProperties where !property.isTransient {
            if let attribute = property as? NSAttributeDescription {
                guard let value = node.value(forKey: attribute.name) else { continue }
                let normalized = AttributeValueCoding.normalize(value, for: attribute.attributeType)
                guard AttributeValueCoding.hasCanonicalType(normalized, for: attribute.attributeType) else {
                    throw CoreDataError.make(.typeMismatch, "\(Swift.type(of: self)) holds \(Swift.type(of: value)) for '\(attribute.name)' of \(id), which is \(attribute.attributeType.xcodeName).")
                }
                values[attribute.slot] = normalized
            } else if let relationship = property as? NSRelationshipDescription, !relationship.isToMany {
                values[relationship.slot] = destinationID(node.value(forKey: relationship.name))
            }
        }
        return StoredRow(values: values, version: versions[id] ?? 1)
    }

    /// The ID a to-one value names (a node, an ID or an object), when its object is in the store.
    private func destinationID(_ value: Any?) -> NSManagedObjectID? {
        let id: NSManagedObjectID?
        switch value {
        case let node as NSAtomicStoreCacheNode: id = node.objectID
        case let objectID as NSManagedObjectID: id = objectID
        case let object as NSManagedObject: id = object.objectID
        default: id = nil
        }
        guard let id, nodes[id] != nil else { return nil }
        return id
    }

    /// The IDs a to-many value names, in its order, leaving out objects no longer in the store.
    private func destinationIDs(_ value: Any?) -> [NSManagedObjectID] {
        guard let value else { return [] }
        let members: [Any]
        if let nodes = value as? Set<NSAtomicStoreCacheNode> {
            members = nodes.sorted { $0.objectID.primaryKey < $1.objectID.primaryKey }
        } else if let items = NSIncrementalStore.array(value) {
            members = items
        } else {
            members = [value]
        }
        return members.compactMap(destinationID)
    }

    private func registeredObject(_ id: NSManagedObjectID, in context: NSManagedObjectContext) throws -> NSManagedObject {
        guard let object = context.registeredObject(for: id) else {
            throw CoreDataError.make(.coreData, "The object \(id) is not registered in the saving context.")
        }
        return object
    }

    private func requestingContext(for call: String) throws -> NSManagedObjectContext {
        guard let context = RequestingContext.current else {
            throw CoreDataError.make(.coreData, "\(Swift.type(of: self)): \(call) needs the context that asks, and none is known on this thread.")
        }
        return context
    }
}
