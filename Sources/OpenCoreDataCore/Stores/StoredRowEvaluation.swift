import Foundation

/// Where a `RowReader` reads stored values: a store's rows, as the in-memory evaluator sees them.
protocol StoredValueSource: AnyObject {
    /// The stored value of a property of an object: an attribute's value, a `RowReader` for a
    /// to-one's destination, an array of `RowReader`s for a to-many's; nil when absent.
    func value(of id: NSManagedObjectID, forKey key: String) -> Any?
}

/// A stored row seen by the in-memory evaluator as a key-value readable object, equal in a
/// predicate to the managed object or object ID of its row (`group == %@`).
final class RowReader: StoredObjectStandIn, KeyValueCodingReadable, Hashable {
    let store: any StoredValueSource
    let id: NSManagedObjectID

    init(store: any StoredValueSource, id: NSManagedObjectID) {
        self.store = store
        self.id = id
        super.init()
    }

    func value(forKey key: String) -> Any? {
        if key == "objectID" { return id }
        if id.entity.namesEntityDescription(key) { return id.entity }
        return store.value(of: id, forKey: key)
    }

    override func standsForTheSameObject(as other: AnyObject) -> Bool {
        switch other {
        case let reader as RowReader: reader.id == id
        case let object as NSManagedObject: object.objectID == id
        case let objectID as NSManagedObjectID: objectID == id
        default: false
        }
    }

    static func == (lhs: RowReader, rhs: RowReader) -> Bool { lhs.id == rhs.id }
    func hash(into hasher: inout Hasher) { hasher.combine(id) }
}

/// Requests answered in Swift over stored rows (the in-memory and binary stores, and the server
/// store's fetches), with the in-memory evaluator: one behaviour for every store that evaluates
/// predicates and sort descriptors itself.
enum StoredRowEvaluation {
    /// The IDs among `ids` (in their order) that the request's predicate matches, sorted by its
    /// sort descriptors (a stable sort; not when `alreadySorted`: `ids` come in the request's
    /// order), with its offset and limit applied.
    static func matching(_ ids: [NSManagedObjectID], in source: any StoredValueSource, request: NSFetchRequest<NSFetchRequestResult>,
                         alreadySorted: Bool = false) -> [NSManagedObjectID] {
        var ids = ids
        if let predicate = request.predicate {
            ids = ids.filter { predicate.evaluate(with: RowReader(store: source, id: $0)) }
        }
        if !alreadySorted, let descriptors = request.sortDescriptors, !descriptors.isEmpty {
            let readers = Dictionary(uniqueKeysWithValues: ids.map { ($0, RowReader(store: source, id: $0)) })
            ids.sort { lhs, rhs in
                for descriptor in descriptors {
                    let order = descriptor.compare(readers[lhs]!, to: readers[rhs]!)
                    if order != .orderedSame { return order == .orderedAscending }
                }
                return false
            }
        }
        if request.fetchOffset > 0 { ids = Array(ids.dropFirst(request.fetchOffset)) }
        if request.fetchLimit > 0 { ids = Array(ids.prefix(request.fetchLimit)) }
        return ids
    }

    /// A dictionary request's results over stored rows: the rows `matching` picks for the request
    /// `rowsRequest(forDictionaries:)` makes, grouped and aggregated by `DictionaryResults`.
    static func dictionaries(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription, in source: any StoredValueSource,
                             matching: (NSFetchRequest<NSFetchRequestResult>) -> [NSManagedObjectID]) -> [[String: Any]] {
        let readers = matching(rowsRequest(forDictionaries: request)).map { RowReader(store: source, id: $0) }
        return DictionaryResults.make(from: readers, request: request, entity: entity)
    }

    /// The request whose matching rows a dictionary request is computed from: without its limit
    /// and offset when it groups or aggregates (they apply to the groups, in `DictionaryResults`).
    static func rowsRequest(forDictionaries request: NSFetchRequest<NSFetchRequestResult>) -> NSFetchRequest<NSFetchRequestResult> {
        let grouping = !(request.propertiesToGroupBy ?? []).isEmpty || (request.propertiesToFetch ?? []).contains { $0 is NSExpressionDescription }
        guard grouping && (request.fetchLimit > 0 || request.fetchOffset > 0) else { return request }
        let unlimited = request.copied()
        unlimited.fetchLimit = 0
        unlimited.fetchOffset = 0
        return unlimited
    }
}
