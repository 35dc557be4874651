import Foundation

extension NSManagedObjectContext {
    /// Runs a fetch request and returns its results, reflecting unsaved changes when
    /// `includesPendingChanges` is true (inserted objects that match, deleted objects left out,
    /// updated objects judged by their current values).
    public func fetch<T>(_ request: NSFetchRequest<T>) throws -> [T] {
        checkQueue("fetch(_:)")
        let (parent, erased, entity) = try prepare(request)
        if let managedType = T.self as? NSManagedObject.Type { EntityClassRegistry.register(managedType) }

        let results: [Any]
        switch erased.resultType {
        case .countResultType:
            results = [NSNumber(value: try count(for: erased))]
        case .dictionaryResultType:
            var dictionaries = DictionaryResultMaker()
            results = try asRequester { try parent.fetchDictionaries(erased, entity: entity) }.map { dictionaries.make($0) }
        default:
            let objects = try fetchObjects(erased, entity: entity, parent: parent)
            if erased.resultType == .managedObjectIDResultType {
                results = objects.map(\.objectID)
            } else {
                return try Self.castObjects(objects, to: T.self)
            }
        }
        return try Self.cast(results, to: T.self)
    }

    /// Casts managed objects to the request's result type, checking each class once.
    private static func castObjects<T>(_ objects: [NSManagedObject], to _: T.Type) throws -> [T] {
        if T.self == NSManagedObject.self { return unsafeBitCast(objects, to: [T].self) }
        // T a class (one reference, as the array holds): each class is checked once, then the
        // array itself is reinterpreted, with no second array of the same references.
        guard T.self is AnyObject.Type, MemoryLayout<T>.size == MemoryLayout<NSManagedObject>.size else { return try cast(objects, to: T.self) }
        var checked: ObjectIdentifier?
        for object in objects {
            let cls = ObjectIdentifier(type(of: object))
            if cls != checked {
                guard object is T else { throw mismatch(object, T.self) }
                checked = cls
            }
        }
        return unsafeBitCast(objects, to: [T].self)
    }

    /// Casts results to the request's result type, checking each class once.
    private static func cast<T>(_ results: [Any], to _: T.Type) throws -> [T] {
        var typed: [T] = []
        typed.reserveCapacity(results.count)
        if T.self is AnyObject.Type {
            // T is a class: a checked class needs no further casts.
            var checked: ObjectIdentifier?
            for result in results {
                let object = result as AnyObject
                let cls = ObjectIdentifier(type(of: object))
                if cls != checked {
                    guard result is T else { throw mismatch(result, T.self) }
                    checked = cls
                }
                typed.append(unsafeBitCast(object, to: T.self))
            }
            return typed
        }
        for result in results {
            guard let value = result as? T else { throw mismatch(result, T.self) }
            typed.append(value)
        }
        return typed
    }

    private static func mismatch<T>(_ result: Any, _: T.Type) -> NSError {
        CoreDataError.make(.coreData, "A fetch result of type \(type(of: result)) can't be returned as \(T.self); check the entity's representedClassName and the request's resultType.")
    }

    /// The number of objects a request would return.
    public func count<T>(for request: NSFetchRequest<T>) throws -> Int {
        checkQueue("count(for:)")
        let (parent, erased, entity) = try prepare(request)
        if erased.includesPendingChanges && hasPendingChanges(affecting: entity) {
            let copy = erased.copied()
            copy.resultType = .managedObjectIDResultType
            return try fetchObjects(copy, entity: entity, parent: parent).count
        }
        return try asRequester { try parent.countRows(erased, entity: entity) }
    }

    /// The parent to ask, the request as the stores take it, and its entity, checked against the model.
    private func prepare<T>(_ request: NSFetchRequest<T>) throws -> (ParentStore, NSFetchRequest<NSFetchRequestResult>, NSEntityDescription) {
        let parent = try requireParentStore()
        let erased = request.erased
        let entity = try erased.resolvedEntity(in: parent.managedObjectModel)
        try FetchValidation.validate(erased, entity: entity)
        return (parent, erased, entity)
    }

    func requireParentStore() throws -> ParentStore {
        guard let parentStore else {
            throw CoreDataError.make(.coreData, "The context has neither a persistent store coordinator nor a parent context.")
        }
        return parentStore
    }

    /// How many of the store's first rows the window of `limit` results after `offset` needs when
    /// up to `judgedInMemory` of those rows are objects judged again in memory (changed or deleted
    /// since they were stored) and the rest keep the store's order; 0 (every row) when `limit` is 0
    /// or the sum is too large for an `Int`.
    ///
    /// An unchanged object in the window has fewer than `offset + limit` unchanged objects before
    /// it, in the store's order as in memory, and at most `judgedInMemory` rows of other objects
    /// lie among them: so it is among the first `offset + limit + judgedInMemory` rows. The objects
    /// judged in memory are added to the rows whatever their place in the store.
    static func storeRowsCovering(offset: Int, limit: Int, judgedInMemory: Int) -> Int {
        guard limit > 0 else { return 0 }
        let (window, overflow) = max(offset, 0).addingReportingOverflow(limit)
        let (rows, overflowAgain) = window.addingReportingOverflow(judgedInMemory)
        return overflow || overflowAgain ? 0 : rows
    }

    private func fetchObjects(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription, parent: ParentStore) throws -> [NSManagedObject] {
        let merging = request.includesPendingChanges && hasPendingChanges(affecting: entity)
        var storeRequest = request
        if merging && (request.fetchLimit > 0 || request.fetchOffset > 0) {
            storeRequest = request.copied()
            storeRequest.fetchLimit = Self.storeRowsCovering(offset: request.fetchOffset, limit: request.fetchLimit, judgedInMemory: updated.count + deleted.count)
            storeRequest.fetchOffset = 0
        }
        let batching = request.fetchBatchSize > 0 && request.resultType == .managedObjectResultType
        if batching {
            // Only the IDs now; rows are loaded a batch at a time as faults fire.
            if storeRequest === request { storeRequest = request.copied() }
            storeRequest.includesPropertyValues = false
        }
        var rows = try asRequester { try parent.fetchRows(storeRequest, entity: entity) }
        let asFault = (request.returnsObjectsAsFaults || batching) && request.resultType == .managedObjectResultType
        let refresh = request.shouldRefreshRefetchedObjects
        reserveRegistryCapacity(for: rows)
        var objects: [NSManagedObject] = []
        objects.reserveCapacity(rows.count)
        var ids: [NSManagedObjectID] = []
        if batching { ids.reserveCapacity(rows.count) }
        // Each chunk of rows is freed once its objects exist (see `FetchedRows`).
        rows.consume { row in
            objects.append(registerFetched(row, asFault: asFault, refresh: refresh))
            if batching { ids.append(row.pointee.objectID) }
        }
        if batching {
            let batch = FaultBatch(ids: ids, size: request.fetchBatchSize)
            for (index, object) in objects.enumerated() where object.committedValues == nil && !object.isInserted {
                object.faultBatch = batch
                object.faultBatchIndex = Int32(index)
            }
        }
        if let keyPaths = request.relationshipKeyPathsForPrefetching, !keyPaths.isEmpty, !batching {
            try prefetch(keyPaths, for: objects)
        }
        guard merging else { return objects }

        // Reflect unsaved changes: drop deleted objects, re-judge changed ones in memory.
        let matchesEntity: (NSManagedObject) -> Bool = { object in
            request.includesSubentities ? object.entity.isKindOf(entity: entity) : object.entity === entity
        }
        objects.rejudge(dropping: { $0.isDeleted || ($0.hasChanges && !(request.predicate?.evaluate(with: $0) ?? true)) },
                        adding: insertedObjects.union(updatedObjects).filter(matchesEntity),
                        where: { request.predicate?.evaluate(with: $0) ?? true },
                        sortedBy: request.sortDescriptors ?? [], offset: request.fetchOffset, limit: request.fetchLimit)
        return objects
    }
}

/// Checks a fetch request against the model before it runs, so bad input is a thrown error.
enum FetchValidation {
    static func validate(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription) throws {
        if let predicate = request.predicate {
            try PredicateValidation.validate(predicate, for: entity)
        }
        for descriptor in request.sortDescriptors ?? [] {
            guard let key = descriptor.key else { continue }
            try PredicateValidation.validateKeyPath(key, from: entity, allowToMany: false)
        }
    }
}
