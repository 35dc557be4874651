import Foundation
import OpenCoreData

/// Brings commits made to the store by other processes (the terminal `worldcup`, another
/// `worldcup-web` on the same PostgreSQL database) into a context. Over PostgreSQL the
/// notification names the saved objects, which are merged as they are; over SQLite, as Apple's
/// apps do: on each `NSPersistentStoreRemoteChange` it fetches the persistent
/// history after the last token it processed and merges each transaction's object IDs into the
/// context, whose fetched results controller then reports the changes.
///
/// It also prunes the history, as Apple recommends, so that it doesn't grow with every save: at
/// most once per `pruneInterval`, after catching up (so this process has merged everything), it
/// deletes the transactions older than `retention`. Other processes reading the same store have
/// that long to catch up; one away for longer misses changes and should refetch.
///
/// Transactions committed by this process are skipped: the stack's own contexts already merge each
/// other's saves. The token, the merges and the pruning are handled on the context's queue.
final class RemoteChangeMerger: @unchecked Sendable {
    private let context: NSManagedObjectContext
    private let startDate: Date
    private let processID = String(ProcessInfo.processInfo.processIdentifier)
    private var lastToken: NSPersistentHistoryToken?
    private var observer: NSObjectProtocol?
    /// Called on the context's queue with each error a catch-up or a pruning throws (the history
    /// can't be read or deleted).
    private let onError: @Sendable (Error) -> Void
    /// How long history is kept once merged.
    let retention: TimeInterval
    /// The least time between two prunings.
    let pruneInterval: TimeInterval
    private var lastPruning = Date.distantPast
    /// Whether the store records history (a SQLite store); otherwise nothing is fetched or pruned.
    private let usesHistory: Bool

    /// Starts watching the coordinator of `context`; history older than now is not merged.
    init(context: NSManagedObjectContext, retention: TimeInterval, pruneInterval: TimeInterval,
         onError: @escaping @Sendable (Error) -> Void) {
        self.context = context
        self.retention = retention
        self.pruneInterval = pruneInterval
        self.onError = onError
        startDate = Date()
        usesHistory = context.persistentStoreCoordinator?.persistentStores.contains { $0.type == NSSQLiteStoreType } ?? false
        observer = NotificationCenter.default.addObserver(forName: .NSPersistentStoreRemoteChange, object: context.persistentStoreCoordinator,
                                                          queue: nil) { [weak self] note in
            guard let self else { return }
            // A store without history (PostgreSQL) names the saved objects in the notification.
            if let changes = note.userInfo, changes[NSInsertedObjectsKey] != nil {
                NSManagedObjectContext.mergeChanges(fromRemoteContextSave: changes, into: [self.context])
            } else if self.usesHistory {
                self.catchUp()
            } else {
                self.context.perform { self.context.refreshAllObjects() }
            }
        }
    }



    deinit {
        if let observer { NotificationCenter.default.removeObserver(observer) }
    }

    /// Fetches the history after the last token and merges what other processes committed.
    func catchUp() {
        context.perform { [self] in
            reportingErrors {
                try mergeNewTransactions()
                try prune(caughtUp: true)
            }
        }
    }

    /// Prunes the history if the last pruning is `pruneInterval` old, catching up first; call on
    /// the context's queue (after each of the context's own saves, say). Errors go to `onError`.
    func pruneIfDue() {
        guard usesHistory else { return }
        reportingErrors { try prune(caughtUp: false) }
    }

    /// Deletes the history older than `retention` if a pruning is due; `caughtUp`: every
    /// transaction so far has just been merged.
    private func prune(caughtUp: Bool) throws {
        let now = Date()
        guard now.timeIntervalSince(lastPruning) >= pruneInterval else { return }
        lastPruning = now
        if !caughtUp { try mergeNewTransactions() }
        _ = try context.execute(NSPersistentHistoryChangeRequest.deleteHistory(before: now.addingTimeInterval(-retention)))
    }

    private func reportingErrors(_ body: () throws -> Void) {
        do { try body() } catch { onError(error) }
    }

    /// Merges the transactions after the last token that other processes committed.
    private func mergeNewTransactions() throws {
        let request = lastToken.map { NSPersistentHistoryChangeRequest.fetchHistory(after: $0) }
            ?? NSPersistentHistoryChangeRequest.fetchHistory(after: startDate)
        let result = try context.execute(request) as? NSPersistentHistoryResult
        let transactions = result?.result as? [NSPersistentHistoryTransaction] ?? []
        for transaction in transactions where transaction.processID != processID {
            context.mergeChanges(fromContextDidSave: transaction.objectIDNotification())
        }
        lastToken = transactions.last?.token ?? lastToken
    }
}
