import Foundation
import OpenCoreData

/// Brings commits made to the store file by other processes (the terminal `worldcup`, say) into
/// a context, as Apple's apps do: on each `NSPersistentStoreRemoteChange` it fetches the persistent
/// history after the last token it processed and merges each transaction's object IDs into the
/// context, whose fetched results controller then reports the changes.
///
/// Transactions committed by this process are skipped: the stack's own contexts already merge each
/// other's saves. The token and the merges are handled on the context's queue.
final class RemoteChangeMerger: @unchecked Sendable {
    private let context: NSManagedObjectContext
    private let startDate: Date
    private let processID = String(ProcessInfo.processInfo.processIdentifier)
    private var lastToken: NSPersistentHistoryToken?
    private var observer: NSObjectProtocol?
    /// Called on the context's queue with each error a catch-up throws (the history can't be read).
    private let onError: @Sendable (Error) -> Void

    /// Starts watching the coordinator of `context`; history older than now is not merged.
    init(context: NSManagedObjectContext, onError: @escaping @Sendable (Error) -> Void) {
        self.context = context
        self.onError = onError
        startDate = Date()
        observer = NotificationCenter.default.addObserver(forName: .NSPersistentStoreRemoteChange, object: context.persistentStoreCoordinator,
                                                          queue: nil) { [weak self] _ in
            self?.catchUp()
        }
    }

    deinit {
        if let observer { NotificationCenter.default.removeObserver(observer) }
    }

    /// Fetches the history after the last token and merges what other processes committed.
    func catchUp() {
        context.perform { [self] in
            do {
                let request = lastToken.map { NSPersistentHistoryChangeRequest.fetchHistory(after: $0) }
                    ?? NSPersistentHistoryChangeRequest.fetchHistory(after: startDate)
                let result = try context.execute(request) as? NSPersistentHistoryResult
                let transactions = result?.result as? [NSPersistentHistoryTransaction] ?? []
                for transaction in transactions where transaction.processID != processID {
                    context.mergeChanges(fromContextDidSave: transaction.objectIDNotification())
                }
                lastToken = transactions.last?.token ?? lastToken
            } catch {
                onError(error)
            }
        }
    }
}
