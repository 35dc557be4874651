import Foundation

/// Batch update, delete and insert on a server store. The rows are chosen as a fetch chooses them
/// (the predicate evaluated in Swift), then written as one save's transaction, with its history
/// record, change notice and uniqueness checks; updates and deletes hold every other save of the
/// store meanwhile, so no row changes between the read and the write.
extension SQLServerStore {
    /// Runs a batch request; nil for a request that isn't one.
    func runBatch(_ request: NSPersistentStoreRequest, entity: NSEntityDescription, author: TransactionAuthor) throws -> NSPersistentStoreResult? {
        switch request {
        case let update as NSBatchUpdateRequest: try holdingWrites { try batchUpdate(update, entity: entity, author: author) }
        case let delete as NSBatchDeleteRequest: try holdingWrites { try batchDelete(delete, entity: entity, author: author) }
        case let insert as NSBatchInsertRequest: try batchInsert(insert, entity: entity, author: author)
        default: nil
        }
    }

    /// The stored rows a predicate selects, with the source that read them.
    private func selectedRows(_ entity: NSEntityDescription, _ predicate: NSPredicate?, subentities: Bool,
                              _ source: SQLServerRowSource) throws -> [(NSManagedObjectID, StoredRow)] {
        let fetch = NSFetchRequest<NSFetchRequestResult>()
        fetch.entity = entity
        fetch.predicate = predicate
        fetch.includesSubentities = subentities
        try FetchValidation.validate(fetch, entity: entity)
        return try matching(fetch, entity: entity, source: source)
    }

    /// Writes a batch's changes; conflicts become Core Data's errors (the batch has no merge policy).
    /// Its notice names no origin, so this coordinator's listener posts its objects too: contexts
    /// learn of a batch only by merging.
    private func saveBatch(_ changes: SaveChanges) throws -> PermanentIDs {
        do {
            return try saveInOneTransaction(changes, origin: "")
        } catch let conflicts as StoreConstraintConflicts {
            let names = conflicts.violations.map { $0.constraint.joined(separator: ", ") }
            throw CoreDataError.make(.constraintConflict,
                "The batch request would give objects the same values of a uniqueness constraint (\(names.joined(separator: "; "))) in the store \(locationDescription).")
        } catch let conflicts as StoreVersionConflicts {
            throw CoreDataError.make(.mergeConflict, "Rows the batch request read changed before it wrote them (\(conflicts.objectIDs.count)).")
        }
    }

    private func batchUpdate(_ request: NSBatchUpdateRequest, entity: NSEntityDescription, author: TransactionAuthor) throws -> NSBatchUpdateResult {
        guard let updates = request.propertiesToUpdate, !updates.isEmpty else {
            throw CoreDataError.make(.coreData, "A batch update needs propertiesToUpdate.")
        }
        let source = SQLServerRowSource(store: self)
        let rows = try selectedRows(entity, request.predicate, subentities: request.includesSubentities, source)
        var changes = SaveChanges()
        changes.author = author
        for (id, row) in rows {
            let (values, slots) = try BatchUpdateValues.apply(updates, to: row.values, of: id.entity, reader: RowReader(store: source, id: id))
            if let error = source.firstError { throw error }
            changes.changedSlots[id.key] = slots
            changes.updated.append(SaveRecord(objectID: id, entity: id.entity, values: values, toMany: [:], version: row.version))
        }
        _ = try saveBatch(changes)
        switch request.resultType {
        case .statusOnlyResultType: return NSBatchUpdateResult(result: true, resultType: .statusOnlyResultType)
        case .updatedObjectsCountResultType: return NSBatchUpdateResult(result: rows.count, resultType: .updatedObjectsCountResultType)
        case .updatedObjectIDsResultType: return NSBatchUpdateResult(result: rows.map(\.0), resultType: .updatedObjectIDsResultType)
        }
    }

    private func batchDelete(_ request: NSBatchDeleteRequest, entity: NSEntityDescription, author: TransactionAuthor) throws -> NSBatchDeleteResult {
        var deleted: [(NSManagedObjectID, StoredRow)]
        if let objectIDs = request.objectIDs {
            let stored = objectIDs.filter { !$0.isTemporaryID && holds($0.entity) }
            let rows = try loadRows(stored)
            deleted = stored.compactMap { id in rows[id.key].map { (id, $0) } }
        } else {
            deleted = try selectedRows(entity, request.fetchRequest.predicate, subentities: request.fetchRequest.includesSubentities,
                                       SQLServerRowSource(store: self))
        }
        var changes = SaveChanges()
        changes.author = author
        changes.deleted = deleted.map { SaveRecord(objectID: $0.0, entity: $0.0.entity, values: $0.1.values, toMany: [:], version: $0.1.version) }
        for (record, slots) in try rowsLosingTheirLinks(to: deleted.map(\.0)) {
            changes.updated.append(record)
            changes.changedSlots[record.key] = slots
        }
        _ = try saveBatch(changes)
        switch request.resultType {
        case .resultTypeStatusOnly: return NSBatchDeleteResult(result: true, resultType: .resultTypeStatusOnly)
        case .resultTypeCount: return NSBatchDeleteResult(result: deleted.count, resultType: .resultTypeCount)
        case .resultTypeObjectIDs: return NSBatchDeleteResult(result: deleted.map(\.0), resultType: .resultTypeObjectIDs)
        }
    }

    /// The rows whose to-one relationships point at objects being deleted, with those links
    /// cleared, as updates, and the slots cleared in each.
    private func rowsLosingTheirLinks(to gone: [NSManagedObjectID]) throws -> [(SaveRecord, [Int])] {
        guard !gone.isEmpty else { return [] }
        let goneSet = Set(gone)
        let roots = Set(gone.map { ObjectIdentifier($0.entity.rootEntity) })
        var cleared: [NSManagedObjectID: Set<Int>] = [:]
        for other in entities {
            guard let mapping = schema.mapping(for: other) else { continue }
            for relationship in other.frozenRelationships where relationship.entity === other && !relationship.isToMany {
                guard let destination = relationship.destinationEntity, roots.contains(ObjectIdentifier(destination.rootEntity)),
                      let column = mapping.columnsBySlot[relationship.slot] else { continue }
                let keys = gone.filter { $0.entity.rootEntity === destination.rootEntity }.map(\.primaryKey)
                try Self.forEachChunk(of: keys) { placeholders, values in
                    let sql = "SELECT Z_PK, Z_ENT FROM \(mapping.tableName) WHERE \(column) IN (\(placeholders)) AND \(entityCondition(other, subentities: true))"
                    for row in try withConnection({ try $0.run(sql, values) }) {
                        guard row.count == 2, let key = SQLServerValueCoding.integer(row[0]),
                              let found = SQLServerValueCoding.integer(row[1]).flatMap({ schema.entity(number: Int($0)) }) else { continue }
                        let id = objectID(for: found, primaryKey: key)
                        if !goneSet.contains(id) { cleared[id, default: []].insert(relationship.slot) }
                    }
                }
            }
        }
        let rows = try loadRows(Array(cleared.keys))
        return cleared.compactMap { id, slots in
            guard var row = rows[id.key] else { return nil }
            for slot in slots { row.values[slot] = nil }
            return (SaveRecord(objectID: id, entity: id.entity, values: row.values, toMany: [:], version: row.version), slots.sorted())
        }
    }

    private func batchInsert(_ request: NSBatchInsertRequest, entity: NSEntityDescription, author: TransactionAuthor) throws -> NSBatchInsertResult {
        guard !entity.isAbstract else {
            throw CoreDataError.make(.coreData, "Batch insert: \(entity.name ?? "?") is abstract; insert one of its subentities.")
        }
        var changes = SaveChanges()
        changes.author = author
        changes.inserted = try request.rows(for: entity).map {
            SaveRecord(objectID: NSManagedObjectID(temporaryFor: entity), entity: entity, values: try BatchInsertRows.values(for: $0, entity: entity),
                       toMany: [:], version: 0)
        }
        let mapping = try saveBatch(changes)
        let ids = changes.inserted.compactMap { mapping.permanentID(for: $0.objectID) }
        switch request.resultType {
        case .statusOnly: return NSBatchInsertResult(result: true, resultType: .statusOnly)
        case .count: return NSBatchInsertResult(result: ids.count, resultType: .count)
        case .objectIDs: return NSBatchInsertResult(result: ids, resultType: .objectIDs)
        }
    }
}
