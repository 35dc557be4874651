import Foundation
import OrderedCollections

/// The in-memory store and the binary store: the whole object graph's rows held in memory.
///
/// The binary store loads its file whole when added and writes it whole, atomically (a temporary
/// file renamed over the old one), on every save. Fetches evaluate predicates and sort in memory,
/// with the same evaluator the contexts use.
/// Unchecked Sendable: its rows are read and written only under its coordinator's lock.
final class AtomicStore: NSPersistentStore, StoredValueSource, @unchecked Sendable {
    enum Kind { case inMemory, binary }

    /// One stored object.
    struct Record {
        var entity: NSEntityDescription
        var values: SlotValues
        var version: Int64
        /// Members of to-many relationships by slot.
        var toMany: [Int: [NSManagedObjectID]]
    }

    let kind: Kind
    private var records: [NSManagedObjectID: Record] = [:]
    private var order: OrderedSet<NSManagedObjectID> = []
    private var maxPrimaryKey: [String: Int64] = [:]

    init(kind: Kind, model: NSManagedObjectModel, configurationName: String?, url: URL?, options: [AnyHashable: Any]?) {
        self.kind = kind
        super.init(persistentStoreCoordinator: nil, configurationName: configurationName, at: url ?? URL(fileURLWithPath: "/dev/null"), options: options)
        self.model = model
        self.url = url
    }

    /// Not registrable: the coordinator makes the atomic stores itself.
    required convenience init(registeredFor coordinator: NSPersistentStoreCoordinator, configurationName name: String?, at url: URL, options: [AnyHashable: Any]?) {
        self.init(kind: .binary, model: coordinator.managedObjectModel, configurationName: name, url: url, options: options)
    }

    override var type: String { kind == .binary ? NSBinaryStoreType : NSInMemoryStoreType }

    // MARK: Loading

    override func load() throws {
        metadata = initialMetadata()
        identifier = metadata[NSStoreUUIDKey] as? String
        guard kind == .binary, let url else { return }
        if !isReadOnly { try checkWritable(url) }
        guard FileManager.default.fileExists(atPath: url.path) else { return }
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw CoreDataError.make(.fileReadNoPermission, "The binary store at \(url.path) can't be read.", url: url)
        }
        try decode(data, url: url)
    }

    static func readMetadata(at url: URL) throws -> [String: Any] {
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw CoreDataError.make(.fileReadNoSuchFile, "No store at \(url.path).", url: url)
        }
        // Ignored: a file that isn't a property list is reported as not a binary store below.
        guard let root = try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any],
              let metadata = root["metadata"] as? [String: Any] else {
            throw CoreDataError.make(.invalidType, "The file at \(url.path) is not a binary Core Data store.", url: url)
        }
        return StoreModelMatching.typed(metadata)
    }

    private func decode(_ data: Data, url: URL) throws {
        // Ignored: a file that isn't a property list is reported as not a binary store below.
        guard let root = try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any],
              let storedMetadata = root["metadata"] as? [String: Any],
              let objects = root["objects"] as? [[String: Any]] else {
            throw CoreDataError.make(.invalidType, "The file at \(url.path) is not a binary Core Data store.", url: url)
        }
        let checked = StoreModelMatching.normalized(storedMetadata, storeType: type)
        let changed = StoreModelMatching.changedEntities(entities, against: checked)
        guard changed.isEmpty else {
            throw CoreDataError.make(.incompatibleVersionHash, "The model used to open the store is incompatible with the one used to create the store at \(url.path) (changed entities: \(changed.joined(separator: ", "))).", url: url)
        }
        metadata = StoreModelMatching.typed(storedMetadata)
        if StoreModelMatching.isLegacy(checked) {
            metadata.merge(StoreModelMatching.modelKeys(for: entities, versionIdentifiers: model.versionIdentifiers)) { _, new in new }
        }
        identifier = storedMetadata[NSStoreUUIDKey] as? String ?? identifier
        let byName = model.entitiesByName
        for object in objects {
            guard let entityName = object["e"] as? String, let entity = byName[entityName], let pk = (object["pk"] as? NSNumber)?.int64Value else {
                throw CoreDataError.make(.fileReadCorruptFile, "The binary store at \(url.path) has a malformed object.", url: url)
            }
            let stored = object["v"] as? [String: Any] ?? [:]
            var values = SlotValues(layout: entity.slotLayout)
            var toMany: [Int: [NSManagedObjectID]] = [:]
            for property in entity.frozenProperties where !property.isTransient {
                guard let raw = stored[property.name] else { continue }
                if let relationship = property as? NSRelationshipDescription {
                    let references = relationship.isToMany ? (raw as? [[String: Any]] ?? []) : [raw as? [String: Any] ?? [:]]
                    let ids = references.compactMap { reference -> NSManagedObjectID? in
                        guard let name = reference["e"] as? String, let target = byName[name], let key = (reference["pk"] as? NSNumber)?.int64Value else { return nil }
                        return objectID(for: target, primaryKey: key)
                    }
                    if relationship.isToMany { toMany[relationship.slot] = ids } else { values[relationship.slot] = ids.first }
                } else if let attribute = property as? NSAttributeDescription {
                    values[attribute.slot] = PlistValueCoding.decode(raw, for: attribute)
                }
            }
            let id = objectID(for: entity, primaryKey: pk)
            records[id] = Record(entity: entity, values: values, version: (object["opt"] as? NSNumber)?.int64Value ?? 1, toMany: toMany)
            order.append(id)
            let root = entity.rootEntity.name ?? ""
            maxPrimaryKey[root] = max(maxPrimaryKey[root] ?? 0, pk)
        }
    }

    private func encode() throws -> Data {
        var objects: [[String: Any]] = []
        for id in order {
            guard let record = records[id] else { continue }
            var values: [String: Any] = [:]
            for property in record.entity.frozenProperties where !property.isTransient {
                if let relationship = property as? NSRelationshipDescription {
                    if relationship.isToMany {
                        values[property.name] = (record.toMany[relationship.slot] ?? []).map(Self.reference)
                    } else if let target = record.values[relationship.slot] as? NSManagedObjectID {
                        values[property.name] = Self.reference(target)
                    }
                } else if let attribute = property as? NSAttributeDescription, let value = record.values[attribute.slot] {
                    if let encoded = PlistValueCoding.encode(value, for: attribute) { values[property.name] = encoded }
                }
            }
            objects.append(["e": record.entity.name ?? "", "pk": NSNumber(value: id.primaryKey), "opt": NSNumber(value: record.version), "v": values])
        }
        return try PropertyListSerialization.data(fromPropertyList: ["metadata": metadata as Any, "objects": objects], format: .binary, options: 0)
    }

    private static func reference(_ id: NSManagedObjectID) -> [String: Any] {
        ["e": id.entity.name ?? "", "pk": NSNumber(value: id.primaryKey)]
    }

    // MARK: Fetching

    private func matching(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription) -> [NSManagedObjectID] {
        let ids: [NSManagedObjectID] = order.elements.filter { id in
            guard let record = records[id] else { return false }
            return request.includesSubentities ? record.entity.isKindOf(entity: entity) : record.entity === entity
        }
        return StoredRowEvaluation.matching(ids, in: self, request: request)
    }

    override func fetchRows(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription) throws -> FetchedRows {
        FetchedRows(matching(request, entity: entity).lazy.map { id in
            FetchedRow(id, request.includesPropertyValues ? self.records[id].map { StoredRow(values: $0.values, version: $0.version) } : nil)
        })
    }

    override func countRows(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription) throws -> Int {
        matching(request, entity: entity).count
    }

    override func fetchDictionaries(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription) throws -> [[String: Any]] {
        StoredRowEvaluation.dictionaries(request, entity: entity, in: self) { matching($0, entity: entity) }
    }

    override func loadRow(_ objectID: NSManagedObjectID) throws -> StoredRow? {
        records[objectID].map { StoredRow(values: $0.values, version: $0.version) }
    }

    override func loadToManyIDs(_ objectID: NSManagedObjectID, relationship: NSRelationshipDescription) throws -> [NSManagedObjectID] {
        (records[objectID]?.toMany[relationship.slot] ?? []).filter { records[$0] != nil }
    }

    /// Reads a stored value for the in-memory evaluator.
    func value(of id: NSManagedObjectID, forKey key: String) -> Any? {
        guard let record = records[id], let property = record.entity.frozenPropertiesByName[key] else { return nil }
        if let relationship = property as? NSRelationshipDescription {
            if relationship.isToMany {
                return (record.toMany[relationship.slot] ?? []).filter { records[$0] != nil }.map { RowReader(store: self, id: $0) }
            }
            return (record.values[relationship.slot] as? NSManagedObjectID).map { RowReader(store: self, id: $0) }
        }
        return record.values[property.slot]
    }

    // MARK: Batch requests

    override func executeBatch(_ request: NSPersistentStoreRequest, entity: NSEntityDescription, author: TransactionAuthor) throws -> NSPersistentStoreResult {
        func selected(_ predicate: NSPredicate?, _ subentities: Bool) throws -> [NSManagedObjectID] {
            let fetch = NSFetchRequest<NSFetchRequestResult>()
            fetch.entity = entity
            fetch.predicate = predicate
            fetch.includesSubentities = subentities
            try FetchValidation.validate(fetch, entity: entity)
            return matching(fetch, entity: entity)
        }
        var changes = SaveChanges()
        changes.author = author
        let result: NSPersistentStoreResult
        switch request {
        case let update as NSBatchUpdateRequest:
            let ids = try selected(update.predicate, update.includesSubentities)
            for id in ids {
                guard let record = records[id] else { continue }
                let (values, slots) = try BatchUpdateValues.apply(update.propertiesToUpdate ?? [:], to: record.values, of: record.entity,
                                                                  reader: RowReader(store: self, id: id))
                changes.changedSlots[id.key] = slots
                changes.updated.append(SaveRecord(objectID: id, entity: record.entity, values: values, toMany: [:], version: record.version))
            }
            switch update.resultType {
            case .statusOnlyResultType: result = NSBatchUpdateResult(result: true, resultType: .statusOnlyResultType)
            case .updatedObjectsCountResultType: result = NSBatchUpdateResult(result: ids.count, resultType: .updatedObjectsCountResultType)
            case .updatedObjectIDsResultType: result = NSBatchUpdateResult(result: ids, resultType: .updatedObjectIDsResultType)
            }
        case let delete as NSBatchDeleteRequest:
            let ids = try delete.objectIDs?.filter { records[$0] != nil } ?? selected(delete.fetchRequest.predicate, delete.fetchRequest.includesSubentities)
            changes.deleted = ids.compactMap { id in records[id].map { SaveRecord(objectID: id, entity: $0.entity, values: $0.values, toMany: [:], version: $0.version) } }
            let gone = Set(ids)
            for (id, record) in records where !gone.contains(id) {
                var values = record.values
                var touched = false
                for relationship in record.entity.frozenRelationships where !relationship.isToMany {
                    if let target = values[relationship.slot] as? NSManagedObjectID, gone.contains(target) { values[relationship.slot] = nil; touched = true }
                }
                let toMany = record.toMany.mapValues { $0.filter { !gone.contains($0) } }
                if touched || toMany != record.toMany {
                    changes.updated.append(SaveRecord(objectID: id, entity: record.entity, values: values, toMany: toMany, version: record.version))
                }
            }
            switch delete.resultType {
            case .resultTypeStatusOnly: result = NSBatchDeleteResult(result: true, resultType: .resultTypeStatusOnly)
            case .resultTypeCount: result = NSBatchDeleteResult(result: ids.count, resultType: .resultTypeCount)
            case .resultTypeObjectIDs: result = NSBatchDeleteResult(result: ids, resultType: .resultTypeObjectIDs)
            }
        case let insert as NSBatchInsertRequest:
            let rows = try insert.rows(for: entity).map { try BatchInsertRows.values(for: $0, entity: entity) }
            changes.inserted = rows.map { SaveRecord(objectID: NSManagedObjectID(temporaryFor: entity), entity: entity, values: $0, toMany: [:], version: 0) }
            let mapping = try save(changes)
            let ids = changes.inserted.compactMap { mapping.permanentID(for: $0.objectID) }
            switch insert.resultType {
            case .statusOnly: return NSBatchInsertResult(result: true, resultType: .statusOnly)
            case .count: return NSBatchInsertResult(result: ids.count, resultType: .count)
            case .objectIDs: return NSBatchInsertResult(result: ids, resultType: .objectIDs)
            }
        default:
            return try super.executeBatch(request, entity: entity, author: author)
        }
        _ = try save(changes)
        return result
    }

    // MARK: Saving

    override func allocatePrimaryKeys(for entity: NSEntityDescription, count: Int) throws -> [Int64] {
        let root = entity.rootEntity.name ?? ""
        let first = (maxPrimaryKey[root] ?? 0) + 1
        maxPrimaryKey[root] = first + Int64(count) - 1
        return count > 0 ? Array(first..<(first + Int64(count))) : []
    }

    override func save(_ changes: SaveChanges) throws -> PermanentIDs {
        let savedRecords = records
        let savedOrder = order
        let savedKeys = maxPrimaryKey
        do {
            var mapping: PermanentIDs = [:]
            for record in changes.inserted where record.objectID.isTemporaryID {
                let key = try allocatePrimaryKeys(for: record.entity, count: 1)[0]
                mapping.assign(primaryKey: key, of: record.entity, in: objectIDFactory, to: record.key)
            }
            let permanent: (NSManagedObjectID) -> NSManagedObjectID = { mapping.permanentID(for: $0) ?? $0 }
            func translated(_ record: SaveRecord) -> (SlotValues, [Int: [NSManagedObjectID]]) {
                var values = record.values
                for index in values.indices { if let id = values[index] as? NSManagedObjectID { values[index] = permanent(id) } }
                return (values, record.toMany.mapValues { $0.map(permanent) })
            }
            for record in changes.deleted {
                records[record.objectID] = nil
                order.remove(record.objectID)
            }
            for record in changes.inserted {
                let id = permanent(record.objectID)
                let (values, toMany) = translated(record)
                records[id] = Record(entity: record.entity, values: values, version: 1, toMany: toMany)
                order.append(id)
            }
            let conflicting = (changes.updated + changes.checked).filter { records[$0.objectID]?.version != $0.version }
            if !conflicting.isEmpty { throw StoreVersionConflicts(objectIDs: conflicting.map(\.objectID)) }
            for record in changes.updated {
                guard let existing = records[record.objectID] else { continue }
                let (values, toMany) = translated(record)
                records[record.objectID] = Record(entity: record.entity, values: values, version: existing.version + 1, toMany: existing.toMany.merging(toMany) { _, new in new })
            }
            if kind == .binary, let url {
                do {
                    try encode().write(to: url, options: .atomic)
                } catch {
                    throw CoreDataError.storeFailure(StoreFileFailure(fileError: error), during: .saving, url: url,
                                                     detail: error.localizedDescription, underlying: error)
                }
            }
            return mapping
        } catch {
            records = savedRecords
            order = savedOrder
            maxPrimaryKey = savedKeys
            throw error
        }
    }
}

/// Converts attribute values to and from property-list values for the binary store.
enum PlistValueCoding {
    static func encode(_ value: Any, for attribute: NSAttributeDescription) -> Any? {
        switch attribute.attributeType {
        case .integer16AttributeType, .integer32AttributeType, .integer64AttributeType:
            return AttributeValueCoding.exactInteger(value).map { NSNumber(value: $0) }
        case .booleanAttributeType: return NSNumber(value: (value as? Bool) ?? false)
        case .doubleAttributeType, .floatAttributeType: return AttributeValueCoding.numericValue(value).map { NSNumber(value: $0) }
        case .decimalAttributeType: return "\(value)"
        case .stringAttributeType: return value as? String
        case .dateAttributeType: return (value as? Date).map { NSNumber(value: $0.timeIntervalSinceReferenceDate) }
        case .binaryDataAttributeType: return value as? Data
        case .UUIDAttributeType: return (value as? UUID)?.uuidString
        case .URIAttributeType: return (value as? URL)?.absoluteString
        case .transformableAttributeType: return TransformableCoding.encode(value, for: attribute)
        default: return nil
        }
    }

    static func decode(_ raw: Any, for attribute: NSAttributeDescription) -> Any? {
        let number = raw as? NSNumber
        switch attribute.attributeType {
        case .integer16AttributeType: return number.map { Int16(truncatingIfNeeded: $0.int64Value) }
        case .integer32AttributeType: return number.map { Int32(truncatingIfNeeded: $0.int64Value) }
        case .integer64AttributeType: return number?.int64Value
        case .booleanAttributeType: return number?.boolValue
        case .doubleAttributeType: return number?.doubleValue
        case .floatAttributeType: return number?.floatValue
        case .decimalAttributeType: return (raw as? String).flatMap { Decimal(string: $0, locale: Locale(identifier: "en_US_POSIX")) }
        case .stringAttributeType: return raw as? String
        case .dateAttributeType: return number.map { Date(timeIntervalSinceReferenceDate: $0.doubleValue) }
        case .binaryDataAttributeType: return raw as? Data
        case .UUIDAttributeType: return (raw as? String).flatMap(UUID.init(uuidString:))
        case .URIAttributeType: return (raw as? String).flatMap(URL.init(string:))
        case .transformableAttributeType: return TransformableCoding.decode(raw as? Data, for: attribute)
        default: return nil
        }
    }
}
