import Foundation

/// A request to read or purge persistent history, run with `NSManagedObjectContext.execute(_:)`.
///
/// The stores must have been added with `NSPersistentHistoryTrackingKey` set to true.
/// Unchecked Sendable: not locked: set it up first, then execute it in one context at a time.
public final class NSPersistentHistoryChangeRequest: NSPersistentStoreRequest, @unchecked Sendable {
    /// Where the request starts (fetch) or ends (delete).
    enum Boundary {
        case afterToken(NSPersistentHistoryToken?)
        case afterDate(Date)
        case afterTransaction(storeID: String, number: Int64)
        case beforeToken(NSPersistentHistoryToken?)
        case beforeDate(Date)
        case beforeTransaction(storeID: String, number: Int64)

        var isDelete: Bool {
            switch self {
            case .beforeToken, .beforeDate, .beforeTransaction: true
            default: false
            }
        }
    }

    let boundary: Boundary

    /// What the result holds: transactions and their changes by default for fetches, the status for deletes.
    public var resultType: NSPersistentHistoryResultType

    /// Narrows a fetch to what a predicate matches: a request made from
    /// `NSPersistentHistoryTransaction.fetchRequest` keeps the transactions it matches (with all
    /// their changes), one from `NSPersistentHistoryChange.fetchRequest` keeps the changes it
    /// matches (and the transactions holding any of them). Its `sortDescriptors` order the
    /// transactions, or each transaction's changes; `fetchOffset` and `fetchLimit` count the
    /// same. Nil, or a request with no entity: everything within the request's bounds.
    public var fetchRequest: NSFetchRequest<NSFetchRequestResult>?

    /// The token the request is bounded by, when it was made with one.
    public var token: NSPersistentHistoryToken? {
        switch boundary {
        case .afterToken(let token), .beforeToken(let token): token
        default: nil
        }
    }

    init(boundary: Boundary) {
        self.boundary = boundary
        self.resultType = boundary.isDelete ? .statusOnly : .transactionsAndChanges
        super.init()
    }

    /// The transactions committed after a token (all of them for nil), oldest first.
    public class func fetchHistory(after token: NSPersistentHistoryToken?) -> Self {
        Self(boundary: .afterToken(token))
    }

    /// The transactions a fetch request on the transaction or change entity matches, in the
    /// whole history, oldest first (see `fetchRequest`).
    public class func fetchHistory(withFetch fetchRequest: NSFetchRequest<NSFetchRequestResult>) -> Self {
        let request = Self(boundary: .afterToken(nil))
        request.fetchRequest = fetchRequest
        return request
    }

    /// Whether the stores must read each transaction's changes: the result holds or counts
    /// them, or a fetch request may look at them.
    var needsChanges: Bool {
        fetchRequest != nil || (resultType != .transactionsOnly && resultType != .statusOnly)
    }

    /// The transactions committed after a date, oldest first.
    public class func fetchHistory(after date: Date) -> Self {
        Self(boundary: .afterDate(date))
    }

    /// The transactions committed after a transaction (all of them for nil), oldest first.
    public class func fetchHistory(after transaction: NSPersistentHistoryTransaction?) -> Self {
        guard let transaction else { return Self(boundary: .afterToken(nil)) }
        return Self(boundary: .afterTransaction(storeID: transaction.storeID, number: transaction.transactionNumber))
    }

    /// Purges the history up to and including the transaction a token marks (all of it for nil).
    public class func deleteHistory(before token: NSPersistentHistoryToken?) -> Self {
        Self(boundary: .beforeToken(token))
    }

    /// Purges the transactions committed before a date.
    public class func deleteHistory(before date: Date) -> Self {
        Self(boundary: .beforeDate(date))
    }

    /// Purges the transactions committed before a transaction (all of them for nil).
    public class func deleteHistory(before transaction: NSPersistentHistoryTransaction?) -> Self {
        guard let transaction else { return Self(boundary: .beforeToken(nil)) }
        return Self(boundary: .beforeTransaction(storeID: transaction.storeID, number: transaction.transactionNumber))
    }
}
