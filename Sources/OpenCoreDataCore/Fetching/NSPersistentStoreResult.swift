import Foundation

/// What executing a persistent store request returns.
/// Unchecked Sendable: no stored state.
open class NSPersistentStoreResult: NSObject, @unchecked Sendable {
    /// Creates a result.
    public override init() {}
}

/// The result of a request that runs asynchronously.
/// Unchecked Sendable: `operationError` is set on its context's queue and may be read from any
/// thread, so it is behind a lock.
open class NSPersistentStoreAsynchronousResult: NSPersistentStoreResult, @unchecked Sendable {
    /// The context the request was executed in.
    public let managedObjectContext: NSManagedObjectContext
    /// The progress of the request; cancelling it cancels the request.
    public let progress: Progress?
    /// The error the request ended with, if any (a cancelled request: `NSUserCancelledError`).
    public internal(set) var operationError: Error? {
        get { errorStorage.withLock { $0 } }
        set { errorStorage.withLock { $0 = newValue } }
    }
    private let errorStorage = LockedValue<(any Error)?>(nil)

    init(context: NSManagedObjectContext, progress: Progress?) {
        self.managedObjectContext = context
        self.progress = progress
    }

    /// Cancels the request if it has not finished.
    open func cancel() {
        progress?.cancel()
    }
}

/// The result of an `NSAsynchronousFetchRequest`.
/// Unchecked Sendable: `finalResult` is set on its context's queue, before the completion block
/// runs there, and may be read from any thread (nil until then), so it is behind a lock. The
/// objects in it belong to the context: use them on its queue.
open class NSAsynchronousFetchResult<ResultType>: NSPersistentStoreAsynchronousResult, @unchecked Sendable {
    /// The request that produced the result.
    public let fetchRequest: NSAsynchronousFetchRequest<ResultType>
    /// The fetched objects, once the fetch finished (nil if it failed or was cancelled).
    public internal(set) var finalResult: [ResultType]? {
        get { resultStorage.withLock { $0 } }
        set { resultStorage.withLock { $0 = newValue } }
    }
    private let resultStorage = LockedValue<[ResultType]?>(nil)

    init(fetchRequest: NSAsynchronousFetchRequest<ResultType>, context: NSManagedObjectContext, progress: Progress) {
        self.fetchRequest = fetchRequest
        super.init(context: context, progress: progress)
    }
}

/// What a batch update returns: nothing, the updated objects' IDs, or their count.
public enum NSBatchUpdateRequestResultType: UInt, Sendable {
    /// Return only whether the update succeeded.
    case statusOnlyResultType = 0
    /// Return the IDs of the updated objects.
    case updatedObjectIDsResultType = 1
    /// Return how many objects were updated.
    case updatedObjectsCountResultType = 2
}

/// What a batch delete returns: nothing, the deleted objects' IDs, or their count.
public enum NSBatchDeleteRequestResultType: UInt, Sendable {
    /// Return only whether the delete succeeded.
    case resultTypeStatusOnly = 0
    /// Return the IDs of the deleted objects.
    case resultTypeObjectIDs = 1
    /// Return how many objects were deleted.
    case resultTypeCount = 2
}

/// What a batch insert returns: nothing, the inserted objects' IDs, or their count.
public enum NSBatchInsertRequestResultType: UInt, Sendable {
    /// Return only whether the insert succeeded.
    case statusOnly = 0
    /// Return the IDs of the inserted objects.
    case objectIDs = 1
    /// Return how many objects were inserted.
    case count = 2
}

/// The result of a batch update: `true`, `[NSManagedObjectID]` or an `Int` count, per the result type.
/// Unchecked Sendable: immutable; `result` holds only `true`, an `Int` or `[NSManagedObjectID]`.
open class NSBatchUpdateResult: NSPersistentStoreResult, @unchecked Sendable {
    /// The result, as the request's result type says.
    public let result: Any?
    /// The kind of result.
    public let resultType: NSBatchUpdateRequestResultType
    init(result: Any?, resultType: NSBatchUpdateRequestResultType) {
        self.result = result
        self.resultType = resultType
    }
}

/// The result of a batch delete: `true`, `[NSManagedObjectID]` or an `Int` count, per the result type.
/// Unchecked Sendable: immutable; `result` holds only `true`, an `Int` or `[NSManagedObjectID]`.
open class NSBatchDeleteResult: NSPersistentStoreResult, @unchecked Sendable {
    /// The result, as the request's result type says.
    public let result: Any?
    /// The kind of result.
    public let resultType: NSBatchDeleteRequestResultType
    init(result: Any?, resultType: NSBatchDeleteRequestResultType) {
        self.result = result
        self.resultType = resultType
    }
}

/// The result of a batch insert: `true`, `[NSManagedObjectID]` or an `Int` count, per the result type.
/// Unchecked Sendable: immutable; `result` holds only `true`, an `Int` or `[NSManagedObjectID]`.
open class NSBatchInsertResult: NSPersistentStoreResult, @unchecked Sendable {
    /// The result, as the request's result type says.
    public let result: Any?
    /// The kind of result.
    public let resultType: NSBatchInsertRequestResultType
    init(result: Any?, resultType: NSBatchInsertRequestResultType) {
        self.result = result
        self.resultType = resultType
    }
}
