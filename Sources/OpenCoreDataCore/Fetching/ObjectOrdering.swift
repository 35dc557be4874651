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
            return SortedRows.tieRank(lhs.objectID.key.primaryKey) < SortedRows.tieRank(rhs.objectID.key.primaryKey)
        }
    }
}
