import Foundation

/// A request `execute(_:)` starts itself (the asynchronous fetch, whose result type is generic).
protocol SelfExecutingRequest {
    func start(in context: NSManagedObjectContext) -> NSPersistentStoreResult
}

extension NSAsynchronousFetchRequest: SelfExecutingRequest {
    func start(in context: NSManagedObjectContext) -> NSPersistentStoreResult {
        let progress = Progress(totalUnitCount: Int64(max(estimatedResultCount, 1)))
        let result = NSAsynchronousFetchResult(fetchRequest: self, context: context, progress: progress)
        let box = UncheckedSendable((self, result))
        context.perform {
            let (request, result) = box.value
            if progress.isCancelled {
                result.operationError = NSError(domain: NSCocoaErrorDomain, code: NSUserCancelledError, userInfo: [NSLocalizedDescriptionKey: "The asynchronous fetch was cancelled."])
            } else {
                do {
                    let objects = try context.fetch(request.fetchRequest)
                    progress.totalUnitCount = Int64(max(objects.count, 1))
                    if progress.isCancelled {
                        result.operationError = NSError(domain: NSCocoaErrorDomain, code: NSUserCancelledError, userInfo: [NSLocalizedDescriptionKey: "The asynchronous fetch was cancelled."])
                    } else {
                        result.finalResult = objects
                        progress.completedUnitCount = progress.totalUnitCount
                    }
                } catch {
                    result.operationError = error
                }
            }
            request.completionBlock?(result)
        }
        return result
    }
}

extension NSManagedObjectContext {
    /// Executes a request: an asynchronous fetch (started on the context's queue), a batch
    /// update, delete or insert (run directly in the store; merge their object IDs into contexts
    /// with `mergeChanges(fromRemoteContextSave:into:)`), or a persistent history request.
    @discardableResult
    public func execute(_ request: NSPersistentStoreRequest) throws -> NSPersistentStoreResult {
        checkQueue("execute(_:)")
        if let asynchronous = request as? SelfExecutingRequest {
            return asynchronous.start(in: self)
        }
        guard let coordinator = persistentStoreCoordinator else {
            throw CoreDataError.make(.coreData, "The context has no persistent store coordinator.")
        }
        if let history = request as? NSPersistentHistoryChangeRequest { return try coordinator.executeHistory(history) }
        return try coordinator.executeBatch(request, author: historyAuthor)
    }
}

extension NSPersistentStoreCoordinator {
    /// Runs a batch request in the store that holds its entity; `author` is recorded in its history.
    func executeBatch(_ request: NSPersistentStoreRequest, author: TransactionAuthor) throws -> NSPersistentStoreResult {
        try withLock {
            let entity: NSEntityDescription
            switch request {
            case let update as NSBatchUpdateRequest:
                entity = try resolve(update.entity, update.entityName)
            case let delete as NSBatchDeleteRequest:
                entity = try delete.fetchRequest.resolvedEntity(in: managedObjectModel)
            case let insert as NSBatchInsertRequest:
                entity = try resolve(insert.entity, insert.entityName)
            default:
                throw CoreDataError.make(.unsupportedRequest, "execute(_:) takes an asynchronous fetch or a batch update, delete or insert request; got \(type(of: request)).")
            }
            guard let store = (request.affectedStores ?? persistentStores).first(where: { $0.holds(entity) }) else {
                throw CoreDataError.make(.coreData, "No persistent store holds entity '\(entity.name ?? "?")'.")
            }
            guard !store.isReadOnly else {
                throw CoreDataError.make(.saveFailed, "The store at \(store.url?.path ?? "memory") is read-only.")
            }
            return try store.executeBatch(request, entity: entity, author: author)
        }
    }

    private func resolve(_ entity: NSEntityDescription?, _ name: String) throws -> NSEntityDescription {
        if let entity { return entity }
        guard let found = managedObjectModel.entitiesByName[name] else {
            throw CoreDataError.make(.coreData, "The batch request's entity '\(name)' is not in the model.")
        }
        return found
    }
}

/// Turns batch-insert dictionaries into stored rows, checking them as a save would.
enum BatchInsertRows {
    static func values(for dictionary: [String: Any], entity: NSEntityDescription) throws -> SlotValues {
        var values = entity.defaultValues
        for slot in entity.toManySlots { values[slot] = nil }
        for (key, raw) in dictionary {
            guard let slot = entity.fastSlot(forKey: key), case .attribute(let type) = entity.slotKinds[slot] else {
                throw CoreDataError.make(.coreData, "Batch insert: \(entity.name ?? "?") has no attribute named '\(key)'.", userInfo: [NSValidationKeyErrorKey: key])
            }
            if raw is NSNull { values[slot] = nil; continue }
            let value = AttributeValueCoding.normalize(raw, for: type)
            guard AttributeValueCoding.hasCanonicalType(value, for: type) else {
                throw NSError(domain: NSCocoaErrorDomain, code: NSManagedObjectValidationError, userInfo: [
                    NSLocalizedDescriptionKey: "Batch insert: \(key) must be a \(type.xcodeName) value; got \(Swift.type(of: raw)) (\(raw)).",
                    NSValidationKeyErrorKey: key, NSValidationValueErrorKey: raw,
                ])
            }
            values[slot] = value
        }
        for attribute in entity.frozenAttributes where !attribute.isOptional && !attribute.isTransient && values[attribute.slot] == nil {
            throw NSError(domain: NSCocoaErrorDomain, code: NSValidationMissingMandatoryPropertyError, userInfo: [
                NSLocalizedDescriptionKey: "Batch insert: \(attribute.name) is a required value.", NSValidationKeyErrorKey: attribute.name,
            ])
        }
        for property in entity.frozenProperties where property.isTransient { values[property.slot] = nil }
        return values
    }
}

/// Applies a batch update's `propertiesToUpdate` to one stored row, in stores that evaluate
/// requests in Swift (the atomic and server stores): constants are checked against the
/// attribute's type, expressions are evaluated on the row.
enum BatchUpdateValues {
    /// The row's values with the updates applied, and the slots they changed.
    static func apply(_ updates: [AnyHashable: Any], to values: SlotValues, of entity: NSEntityDescription,
                      reader: RowReader) throws -> (values: SlotValues, slots: [Int]) {
        var values = values
        var slots: [Int] = []
        for (key, value) in updates {
            let name = (key.base as? String) ?? (key.base as? NSPropertyDescription)?.name ?? "\(key)"
            guard let slot = entity.fastSlot(forKey: name), case .attribute(let type) = entity.slotKinds[slot] else {
                throw CoreDataError.make(.coreData, "Batch update: \(entity.name ?? "?") has no attribute named '\(name)'.", userInfo: [NSValidationKeyErrorKey: name])
            }
            var newValue: Any? = value
            if let expression = value as? NSExpression { newValue = expression.expressionValue(with: reader, context: nil) }
            if newValue is NSNull { newValue = nil }
            if let present = newValue {
                let normalized = AttributeValueCoding.normalize(present, for: type)
                guard AttributeValueCoding.hasCanonicalType(normalized, for: type) else {
                    throw NSError(domain: NSCocoaErrorDomain, code: NSManagedObjectValidationError, userInfo: [
                        NSLocalizedDescriptionKey: "Batch update: \(name) must be a \(type.xcodeName) value; got \(Swift.type(of: present)) (\(present)).",
                        NSValidationKeyErrorKey: name, NSValidationValueErrorKey: present,
                    ])
                }
                newValue = normalized
            }
            values[slot] = newValue
            slots.append(slot)
        }
        return (values, slots.sorted())
    }
}
