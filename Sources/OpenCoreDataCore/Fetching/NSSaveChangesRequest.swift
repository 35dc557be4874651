import Foundation

/// A save as an `NSIncrementalStore` receives it in `execute(_:with:)`: the saving context's
/// inserted, updated, deleted and locked objects.
///
/// Inserted objects already have permanent IDs (from the store's `obtainPermanentIDs(for:)`).
open class NSSaveChangesRequest: NSPersistentStoreRequest, @unchecked Sendable {
    /// Objects inserted in the saving context.
    public let insertedObjects: Set<NSManagedObject>?
    /// Objects changed in the saving context.
    public let updatedObjects: Set<NSManagedObject>?
    /// Objects deleted in the saving context.
    public let deletedObjects: Set<NSManagedObject>?
    /// Unchanged objects flagged for optimistic locking (`detectConflicts(for:)`).
    public let lockedObjects: Set<NSManagedObject>?

    /// Creates a save request with the objects of each kind of change.
    public init(inserted insertedObjects: Set<NSManagedObject>?, updated updatedObjects: Set<NSManagedObject>?,
                deleted deletedObjects: Set<NSManagedObject>?, locked lockedObjects: Set<NSManagedObject>?) {
        self.insertedObjects = insertedObjects
        self.updatedObjects = updatedObjects
        self.deletedObjects = deletedObjects
        self.lockedObjects = lockedObjects
    }

    open override var requestType: NSPersistentStoreRequestType { .saveRequestType }
}
