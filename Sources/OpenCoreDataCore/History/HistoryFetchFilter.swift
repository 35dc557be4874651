import Foundation

/// A history request's `fetchRequest` applied to the transactions its stores returned: its
/// predicate, sort descriptors, offset and limit, on transactions or on their changes, as its
/// entity says.
struct HistoryFetchFilter {
    /// What the fetch request is on.
    enum Target {
        /// `NSPersistentHistoryTransaction.fetchRequest`: transactions are kept or dropped whole.
        case transactions
        /// `NSPersistentHistoryChange.fetchRequest`: changes are kept or dropped, and transactions
        /// left with none are dropped.
        case changes
    }

    let target: Target
    let request: NSFetchRequest<NSFetchRequestResult>

    /// The filter for a history request, or nil when it has none (no fetch request, or one
    /// without an entity). Throws for a fetch request on any other entity.
    init?(_ historyRequest: NSPersistentHistoryChangeRequest) throws {
        guard let request = historyRequest.fetchRequest, let name = request.entity?.name ?? request.entityName else { return nil }
        switch name {
        case HistoryEntities.transactionName, "NSPersistentHistoryTransaction": target = .transactions
        case HistoryEntities.changeName, "NSPersistentHistoryChange": target = .changes
        default:
            throw CoreDataError.make(.unsupportedRequest, "A persistent history request's fetchRequest must be on the history's own entities (NSPersistentHistoryTransaction.fetchRequest or NSPersistentHistoryChange.fetchRequest), not on \(name).")
        }
        self.request = request
    }

    /// The transactions the fetch request keeps, in order, each with the changes it keeps.
    func apply(to transactions: [NSPersistentHistoryTransaction]) -> [NSPersistentHistoryTransaction] {
        switch target {
        case .transactions:
            return Array(matching(transactions).dropFirst(request.fetchOffset).prefix(limit))
        case .changes:
            var skip = request.fetchOffset
            var room = limit
            var kept: [NSPersistentHistoryTransaction] = []
            for transaction in transactions where room > 0 {
                var changes = matching(transaction.changes ?? [])
                let skipped = min(skip, changes.count)
                skip -= skipped
                changes = Array(changes.dropFirst(skipped).prefix(room))
                room -= changes.count
                guard !changes.isEmpty else { continue }
                transaction.changes = changes
                kept.append(transaction)
            }
            return kept
        }
    }

    private var limit: Int { request.fetchLimit > 0 ? request.fetchLimit : .max }

    /// The elements the predicate matches, in the sort descriptors' order; a stable sort: equal
    /// elements keep their history order.
    private func matching<T>(_ elements: [T]) -> [T] {
        let matched = elements.filter { request.predicate?.evaluate(with: $0) ?? true }
        guard let descriptors = request.sortDescriptors, !descriptors.isEmpty else { return matched }
        return matched.enumerated().sorted { a, b in
            switch NSSortDescriptor.compare(a.element, b.element, using: descriptors) {
            case .orderedAscending: true
            case .orderedDescending: false
            case .orderedSame: a.offset < b.offset
            }
        }.map(\.element)
    }
}
