import Foundation
import GRDB

/// Batch update, delete and insert, run as SQL without loading objects.
extension SQLiteStore {
    /// Runs a batch request; nil for a request this store does not run in SQL.
    func runBatch(_ request: NSPersistentStoreRequest, entity: NSEntityDescription, author: TransactionAuthor) throws -> NSPersistentStoreResult? {
        switch request {
        case let update as NSBatchUpdateRequest: return try batchUpdate(update, entity: entity, author: author)
        case let delete as NSBatchDeleteRequest: return try batchDelete(delete, entity: entity, author: author)
        case let insert as NSBatchInsertRequest: return try batchInsert(insert, entity: entity, author: author)
        default: return nil
        }
    }

    /// The rows a predicate selects, as a subquery of primary keys, with its arguments.
    private func selection(_ entity: NSEntityDescription, predicate: NSPredicate?, includesSubentities: Bool) throws -> (builder: SQLFetchBuilder, sql: String) {
        try FetchValidation.validate(Self.request(entity, predicate, includesSubentities), entity: entity)
        let builder = try SQLFetchBuilder(schema: schema, predicates: predicateRegistry, entity: entity, request: Self.request(entity, predicate, includesSubentities))
        return (builder, builder.selectSQL(columns: ["t0.Z_PK"]))
    }

    private static func request(_ entity: NSEntityDescription, _ predicate: NSPredicate?, _ includesSubentities: Bool) -> NSFetchRequest<NSFetchRequestResult> {
        let request = NSFetchRequest<NSFetchRequestResult>()
        request.entity = entity
        request.predicate = predicate
        request.includesSubentities = includesSubentities
        return request
    }

    private func batchUpdate(_ request: NSBatchUpdateRequest, entity: NSEntityDescription, author: TransactionAuthor) throws -> NSBatchUpdateResult {
        guard let mapping = schema.mapping(for: entity), let updates = request.propertiesToUpdate, !updates.isEmpty else {
            throw CoreDataError.make(.coreData, "A batch update needs propertiesToUpdate.")
        }
        var (builder, selectSQL) = try selection(entity, predicate: request.predicate, includesSubentities: request.includesSubentities)
        defer { builder.releaseTokens() }
        let selectArguments = builder.arguments
        // SET clauses: constants are checked against the attribute's type; expressions may use the row's own columns.
        var assignments: [String] = []
        var setArguments: [DatabaseValue] = []
        var updatedSlots: [Int] = []
        for (key, value) in updates {
            let name = (key.base as? String) ?? (key.base as? NSPropertyDescription)?.name ?? "\(key)"
            guard let attribute = entity.frozenPropertiesByName[name] as? NSAttributeDescription, let column = mapping.columnsBySlot[attribute.slot] else {
                throw CoreDataError.make(.coreData, "Batch update: \(entity.name ?? "?") has no stored attribute named '\(name)'.", userInfo: [NSValidationKeyErrorKey: name])
            }
            updatedSlots.append(attribute.slot)
            if let expression = value as? NSExpression, expression.expressionType != .constantValue {
                var expressionBuilder = try SQLFetchBuilder(schema: schema, predicates: predicateRegistry, entity: entity, request: Self.request(entity, nil, true))
                let sql = try expressionBuilder.aggregateSQL(expression).replacingOccurrences(of: "t0.", with: "")
                guard !expressionBuilder.hasJoins else {
                    throw CoreDataError.make(.unsupportedRequest, "Batch update: the value of \(name) may only use the object's own attributes.")
                }
                assignments.append("\(column) = \(sql)")
                setArguments += expressionBuilder.arguments
                continue
            }
            let constant = (value as? NSExpression)?.constantValue ?? value
            if constant is NSNull {
                assignments.append("\(column) = NULL")
                continue
            }
            let normalized = AttributeValueCoding.normalize(constant, for: attribute.attributeType)
            guard AttributeValueCoding.hasCanonicalType(normalized, for: attribute.attributeType) else {
                throw NSError(domain: NSCocoaErrorDomain, code: NSManagedObjectValidationError, userInfo: [
                    NSLocalizedDescriptionKey: "Batch update: \(name) must be a \(attribute.attributeType.xcodeName) value; got \(Swift.type(of: constant)) (\(constant)).",
                    NSValidationKeyErrorKey: name, NSValidationValueErrorKey: constant,
                ])
            }
            assignments.append("\(column) = ?")
            setArguments.append(SQLiteValueCoding.databaseValue(normalized, for: attribute, primaryKeyOf: { $0.primaryKey }))
        }
        var result: Any? = true
        let start = DispatchTime.now().uptimeNanoseconds
        try write { db in
            var ids: [Int64] = []
            if request.resultType == .updatedObjectIDsResultType {
                ids = try Int64.fetchAll(db.cachedStatementKeepingWholeText(sql: selectSQL, arguments: selectArguments))
            }
            if let transaction = try beginBatchTransaction(author, db) {
                try history?.recordRows(db, transaction: transaction, type: .update, of: entity, where: "Z_PK IN (\(selectSQL))",
                                        arguments: selectArguments, updatedSlots: updatedSlots.sorted())
            }
            // Without joins the condition applies to the table itself; otherwise through the selected keys.
            let sql = builder.hasJoins
                ? "UPDATE \(mapping.tableName) SET \(assignments.joined(separator: ", ")), Z_OPT = Z_OPT + 1 WHERE Z_PK IN (\(selectSQL))"
                : "UPDATE \(mapping.tableName) AS t0 SET \(assignments.joined(separator: ", ")), Z_OPT = Z_OPT + 1\(builder.whereClause)"
            try db.executeKeepingWholeText(sql: sql, arguments: setArguments + selectArguments)
            let updatedCount = db.changesCount
            try bumpGeneration(db)
            switch request.resultType {
            case .statusOnlyResultType: result = true
            case .updatedObjectsCountResultType: result = updatedCount
            case .updatedObjectIDsResultType: result = try objectIDs(for: ids, in: mapping, db)
            }
            SQLDebugLog.statement(sql, rows: db.changesCount, start: start, isFetch: false)
        }
        return NSBatchUpdateResult(result: result, resultType: request.resultType)
    }

    private func batchDelete(_ request: NSBatchDeleteRequest, entity: NSEntityDescription, author: TransactionAuthor) throws -> NSBatchDeleteResult {
        guard let mapping = schema.mapping(for: entity) else { throw CoreDataError.make(.coreData, "The store does not hold \(entity.name ?? "?").") }
        var builder: SQLFetchBuilder?
        defer { builder?.releaseTokens() }
        var selectSQL = ""
        if request.objectIDs == nil {
            let selected = try selection(entity, predicate: request.fetchRequest.predicate, includesSubentities: request.fetchRequest.includesSubentities)
            builder = selected.builder
            selectSQL = selected.sql
        }
        let selectArguments = builder?.arguments ?? []
        var result: Any? = true
        let start = DispatchTime.now().uptimeNanoseconds
        try write { db in
            let referenced = isReferenced(entity)
            if request.objectIDs == nil, !referenced, request.resultType != .resultTypeObjectIDs, history == nil, let builder, !builder.hasJoins {
                // Nothing points at these rows: one DELETE with the condition on the table itself.
                let sql = "DELETE FROM \(mapping.tableName) AS t0\(builder.whereClause)"
                try db.executeKeepingWholeText(sql: sql, arguments: selectArguments)
                result = request.resultType == .resultTypeCount ? db.changesCount : true
                try bumpGeneration(db)
                SQLDebugLog.statement(sql, rows: db.changesCount, start: start, isFetch: false)
                return
            }
            try db.execute(sql: "CREATE TEMP TABLE IF NOT EXISTS ocd_batch_keys (pk INTEGER PRIMARY KEY)")
            try db.execute(sql: "DELETE FROM ocd_batch_keys")
            if let objectIDs = request.objectIDs {
                let insert = try db.makeStatement(sql: "INSERT OR IGNORE INTO ocd_batch_keys (pk) VALUES (?)")
                for id in objectIDs where !id.isTemporaryID { try insert.execute(arguments: [id.primaryKey]) }
            } else {
                try db.executeKeepingWholeText(sql: "INSERT OR IGNORE INTO ocd_batch_keys (pk) \(selectSQL)", arguments: selectArguments)
            }
            let deletedIDs = request.resultType == .resultTypeObjectIDs
                ? try objectIDs(for: try Int64.fetchAll(db, sql: "SELECT pk FROM ocd_batch_keys"), in: mapping, db) : []
            let transaction = try beginBatchTransaction(author, db)
            if let transaction {
                try history?.recordRows(db, transaction: transaction, type: .delete, of: entity, where: "Z_PK IN (SELECT pk FROM ocd_batch_keys)")
            }
            try db.execute(sql: "DELETE FROM \(mapping.tableName) WHERE Z_PK IN (SELECT pk FROM ocd_batch_keys)")
            let deleted = db.changesCount
            // Keep the graph consistent: clear to-one links and join rows that pointed at deleted rows.
            for other in schema.entities {
                guard let otherMapping = schema.mapping(for: other) else { continue }
                for relationship in other.frozenRelationships where relationship.entity === other {
                    guard let destination = relationship.destinationEntity, destination.rootEntity === entity.rootEntity else { continue }
                    if !relationship.isToMany, let column = otherMapping.columnsBySlot[relationship.slot] {
                        if let transaction {
                            try history?.recordRows(db, transaction: transaction, type: .update, of: other,
                                                    where: "\(column) IN (SELECT pk FROM ocd_batch_keys)", updatedSlots: [relationship.slot])
                        }
                        let entityColumn = otherMapping.entityColumnsBySlot[relationship.slot].map { ", \($0) = NULL" } ?? ""
                        try db.execute(sql: "UPDATE \(otherMapping.tableName) SET \(column) = NULL\(entityColumn), Z_OPT = Z_OPT + 1 WHERE \(column) IN (SELECT pk FROM ocd_batch_keys)")
                    }
                }
            }
            for join in schema.allJoinTables {
                if join.owner.entity?.rootEntity === entity.rootEntity {
                    try db.execute(sql: "DELETE FROM \(join.name) WHERE \(join.sourceColumn) IN (SELECT pk FROM ocd_batch_keys)")
                }
                if join.owner.destinationEntity?.rootEntity === entity.rootEntity {
                    try db.execute(sql: "DELETE FROM \(join.name) WHERE \(join.destinationColumn) IN (SELECT pk FROM ocd_batch_keys)")
                }
            }
            try db.execute(sql: "DELETE FROM ocd_batch_keys")
            try bumpGeneration(db)
            switch request.resultType {
            case .resultTypeStatusOnly: result = true
            case .resultTypeCount: result = deleted
            case .resultTypeObjectIDs: result = deletedIDs
            }
            SQLDebugLog.statement("DELETE FROM \(mapping.tableName) WHERE Z_PK IN (SELECT pk FROM ocd_batch_keys)", rows: deleted, start: start, isFetch: false)
        }
        return NSBatchDeleteResult(result: result, resultType: request.resultType)
    }

    private func batchInsert(_ request: NSBatchInsertRequest, entity: NSEntityDescription, author: TransactionAuthor) throws -> NSBatchInsertResult {
        guard !entity.isAbstract else {
            throw CoreDataError.make(.coreData, "Batch insert: \(entity.name ?? "?") is abstract; insert one of its subentities.")
        }
        let rows = try request.rows(for: entity).map { try BatchInsertRows.values(for: $0, entity: entity) }
        var inserted: [NSManagedObjectID] = []
        let start = DispatchTime.now().uptimeNanoseconds
        try write { db in
            let keys = try allocate(db, entity: entity, count: rows.count)
            let transaction = try beginBatchTransaction(author, db)
            try insertRows(of: entity, count: rows.count, db, { $0.primaryKey }) { index in (keys[index], rows[index]) }
            for key in keys {
                if let transaction { try history?.recordChange(db, transaction: transaction, type: .insert, entity: entity, primaryKey: key) }
                inserted.append(objectID(for: entity, primaryKey: key))
            }
            try bumpGeneration(db)
        }
        SQLDebugLog.save(inserted: inserted.count, updated: 0, deleted: 0, start: start)
        switch request.resultType {
        case .statusOnly: return NSBatchInsertResult(result: true, resultType: .statusOnly)
        case .count: return NSBatchInsertResult(result: inserted.count, resultType: .count)
        case .objectIDs: return NSBatchInsertResult(result: inserted, resultType: .objectIDs)
        }
    }

    /// Whether any to-one column or join table can point at rows of an entity's hierarchy.
    private func isReferenced(_ entity: NSEntityDescription) -> Bool {
        for other in schema.entities {
            for relationship in other.frozenRelationships where relationship.entity === other && !relationship.isToMany {
                if relationship.destinationEntity?.rootEntity === entity.rootEntity { return true }
            }
        }
        return schema.allJoinTables.contains { $0.owner.entity?.rootEntity === entity.rootEntity || $0.owner.destinationEntity?.rootEntity === entity.rootEntity }
    }

    /// Object IDs for primary keys of one table, with each row's own entity.
    private func objectIDs(for keys: [Int64], in mapping: SQLiteSchema.EntityMapping, _ db: Database) throws -> [NSManagedObjectID] {
        guard !keys.isEmpty else { return [] }
        var result: [NSManagedObjectID] = []
        for chunk in stride(from: 0, to: keys.count, by: 500).map({ Array(keys[$0..<min($0 + 500, keys.count)]) }) {
            let sql = "SELECT Z_PK, Z_ENT FROM \(mapping.tableName) WHERE Z_PK IN (\(chunk.map(String.init).joined(separator: ",")))"
            for row in try Row.fetchAll(db, sql: sql) {
                let entity = schema.entity(number: row[1]) ?? mapping.entity
                result.append(objectID(for: entity, primaryKey: row[0]))
            }
        }
        return result
    }
}
