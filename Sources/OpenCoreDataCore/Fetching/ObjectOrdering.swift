import Foundation

extension Array where Element == NSManagedObject {
    /// Sorts objects in memory as the store sorts rows: by the descriptors, then ties in primary key
    /// order with unsaved objects last (see `SortedRows.tieRank`).
    mutating func sortAsStored(by descriptors: [NSSortDescriptor]) {
        sort { lhs, rhs in
            for descriptor in descriptors {
                let order = descriptor.compare(lhs, to: rhs)
                if order != .orderedSame { return order == .orderedAscending }
            }
            return SortedRows.tieRank(lhs.objectKey.primaryKey) < SortedRows.tieRank(rhs.objectKey.primaryKey)
        }
    }

    /// Re-judges results in memory: drops the objects `drop` rejects, appends the `candidates`
    /// that `matches` accepts and that are not there yet, then sorts as the store does and applies
    /// the offset and limit.
    mutating func rejudge(dropping drop: (NSManagedObject) -> Bool, adding candidates: some Sequence<NSManagedObject>,
                          where matches: (NSManagedObject) -> Bool, sortedBy descriptors: [NSSortDescriptor], offset: Int, limit: Int) {
        removeAll(where: drop)
        var present = Set(map { ObjectIdentifier($0) })
        for object in candidates where !present.contains(ObjectIdentifier(object)) && matches(object) {
            append(object)
            present.insert(ObjectIdentifier(object))
        }
        if !descriptors.isEmpty { sortAsStored(by: descriptors) }
        if offset > 0 { self = Array(dropFirst(offset)) }
        if limit > 0 { self = Array(prefix(limit)) }
    }
}
