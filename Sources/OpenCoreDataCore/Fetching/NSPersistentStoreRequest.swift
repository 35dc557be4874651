import Foundation

/// The kind of a persistent store request.
public enum NSPersistentStoreRequestType: UInt, Sendable {
    /// A fetch.
    case fetchRequestType = 1
    /// A save.
    case saveRequestType = 2
    /// A batch insert.
    case batchInsertRequestType = 5
    /// A batch update.
    case batchUpdateRequestType = 6
    /// A batch delete.
    case batchDeleteRequestType = 7
}

/// A request a coordinator sends to its stores.
/// Unchecked Sendable: not locked: set it up first, then execute it in one context at a time.
open class NSPersistentStoreRequest: NSObject, @unchecked Sendable {
    /// The stores the request is limited to (nil: all).
    public var affectedStores: [NSPersistentStore]?
    /// The kind of request.
    open var requestType: NSPersistentStoreRequestType { .fetchRequestType }

    /// Creates a request.
    public override init() {}
}
