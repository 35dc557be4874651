import Foundation
import OpenCoreData

/// Turns a store's persistent history into `StoreChange`s, every change in the order it was
/// committed, for `ocd watch` on stores that record history.
///
/// The history names what changed; the values come from the rows read after the commits
/// (`StoreSnapshot`), and an update's old values from what was printed before. An object changed
/// again, or deleted, before the rows were read shows its values as of that reading.
struct HistoryChanges {
    private let stack: StoreStack
    /// The names of the watched entities and their subentities.
    private let watched: Set<String>
    private var token: NSPersistentHistoryToken?
    /// The values last printed or read for each object, by object ID URI.
    private var known: [String: StoreSnapshot.Row]

    /// Starts after the newest transaction of the store `stack` reads, knowing `snapshot`'s rows.
    init(stack: StoreStack, watching entities: [NSEntityDescription], snapshot: StoreSnapshot) {
        self.stack = stack
        watched = Set(entities.flatMap(Self.selfAndDescendants).compactMap(\.name))
        token = stack.coordinator.currentPersistentHistoryToken(fromStores: nil)
        known = snapshot.rows
    }

    private static func selfAndDescendants(_ entity: NSEntityDescription) -> [NSEntityDescription] {
        [entity] + entity.subentities.flatMap(selfAndDescendants)
    }

    /// The transactions committed since the last call, in order.
    mutating func fetchNew() throws -> [NSPersistentHistoryTransaction] {
        let request = NSPersistentHistoryChangeRequest.fetchHistory(after: token)
        let context = stack.context
        let transactions = try context.performAndWait {
            (try context.execute(request) as? NSPersistentHistoryResult)?.result as? [NSPersistentHistoryTransaction] ?? []
        }
        token = transactions.last?.token ?? token
        return transactions
    }

    /// The changes of `transactions` to watched objects, in order, with values from `snapshot`
    /// (the rows read after them).
    mutating func changes(in transactions: [NSPersistentHistoryTransaction], rows snapshot: StoreSnapshot) -> [StoreChange] {
        var changes: [StoreChange] = []
        for transaction in transactions {
            for change in transaction.changes ?? [] {
                guard let entity = change.changedObjectID.entity.name, watched.contains(entity) else { continue }
                let id = change.changedObjectID.uriRepresentation().absoluteString
                let now = snapshot.rows[id]
                switch change.changeType {
                case .insert:
                    let values = now?.values ?? [:]
                    changes.append(StoreChange(kind: .insert, entity: entity, objectID: id, values: values.keys.sorted().map { ($0, nil, values[$0]!) }))
                    known[id] = now
                case .update:
                    let names = (change.updatedProperties ?? []).compactMap { $0 as? NSAttributeDescription }.map(\.name).sorted()
                    let before = known[id]?.values ?? [:]
                    let values = names.compactMap { name in now?.values[name].map { (name, before[name] ?? .null, $0) } }
                        .filter { $0.1 != $0.2 }
                    changes.append(StoreChange(kind: .update, entity: entity, objectID: id, values: values))
                    if let now { known[id] = now }
                case .delete:
                    changes.append(StoreChange(kind: .delete, entity: entity, objectID: id, values: []))
                    known[id] = nil
                }
            }
        }
        return changes
    }
}
