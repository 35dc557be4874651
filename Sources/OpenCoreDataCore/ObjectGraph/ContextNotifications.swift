import Foundation

/// The userInfo key of the inserted objects in context notifications.
public let NSInsertedObjectsKey = "inserted"
/// The userInfo key of the updated objects in context notifications.
public let NSUpdatedObjectsKey = "updated"
/// The userInfo key of the deleted objects in context notifications.
public let NSDeletedObjectsKey = "deleted"
/// The userInfo key of the refreshed objects in context notifications.
public let NSRefreshedObjectsKey = "refreshed"
/// The userInfo key of the invalidated objects in context notifications.
public let NSInvalidatedObjectsKey = "invalidated"
/// The userInfo key set when every object was invalidated (after `reset()`).
public let NSInvalidatedAllObjectsKey = "invalidatedAll"
/// The userInfo key of the inserted object IDs in object-ID notifications.
public let NSInsertedObjectIDsKey = "inserted_objectIDs"
/// The userInfo key of the updated object IDs in object-ID notifications.
public let NSUpdatedObjectIDsKey = "updated_objectIDs"
/// The userInfo key of the deleted object IDs in object-ID notifications.
public let NSDeletedObjectIDsKey = "deleted_objectIDs"
/// The userInfo key of the refreshed object IDs in object-ID notifications.
public let NSRefreshedObjectIDsKey = "refreshed_objectIDs"
/// The userInfo key of the invalidated object IDs in object-ID notifications.
public let NSInvalidatedObjectIDsKey = "invalidated_objectIDs"

extension Notification.Name {
    /// Posted by a context when its objects changed, at the end of each event (`processPendingChanges`).
    public static let NSManagedObjectContextObjectsDidChange = Notification.Name("NSObjectsChangedInManagingContextNotification")
    /// Posted by a context before it saves.
    public static let NSManagedObjectContextWillSave = Notification.Name("NSManagingContextWillSaveChangesNotification")
    /// Posted by a context after a successful save, with the saved objects.
    public static let NSManagedObjectContextDidSave = Notification.Name("NSManagingContextDidSaveChangesNotification")
    /// Posted by a context after a successful save, with the saved object IDs.
    public static let NSManagedObjectContextDidSaveObjectIDs = Notification.Name("NSManagedObjectContextDidSaveObjectIDsNotification")
    /// Posted by a context after changes were merged into it, with their object IDs.
    public static let NSManagedObjectContextDidMergeChangesObjectIDs = Notification.Name("NSManagedObjectContextDidMergeChangesObjectIDsNotification")
}

extension NSManagedObjectContext {
    /// Posted after a successful save, with the saved objects (the newer name of `NSManagedObjectContextDidSave`).
    public static let didSaveObjectsNotification = Notification.Name.NSManagedObjectContextDidSave
    /// Posted when objects changed (the newer name of `NSManagedObjectContextObjectsDidChange`).
    public static let didChangeObjectsNotification = Notification.Name.NSManagedObjectContextObjectsDidChange
    /// Posted before a save (the newer name of `NSManagedObjectContextWillSave`).
    public static let willSaveObjectsNotification = Notification.Name.NSManagedObjectContextWillSave
    /// Posted after a successful save, with the saved object IDs.
    public static let didSaveObjectIDsNotification = Notification.Name.NSManagedObjectContextDidSaveObjectIDs
    /// Posted after changes were merged into the context, with their object IDs.
    public static let didMergeChangesObjectIDsNotification = Notification.Name.NSManagedObjectContextDidMergeChangesObjectIDs

    /// The keys of context notifications' userInfo.
    public enum NotificationKey: String, Sendable {
        /// The context that saved (in did-save notifications).
        case sourceContext = "managedObjectContext"
        /// The query generation token (kept for API compatibility).
        case queryGeneration = "queryGeneration"
        /// Present when every object of the context was invalidated (after `reset()`).
        case invalidatedAllObjects = "invalidatedAll"
        /// The inserted objects.
        case insertedObjects = "inserted"
        /// The updated objects.
        case updatedObjects = "updated"
        /// The deleted objects.
        case deletedObjects = "deleted"
        /// The refreshed objects.
        case refreshedObjects = "refreshed"
        /// The invalidated objects.
        case invalidatedObjects = "invalidated"
        /// The IDs of the inserted objects.
        case insertedObjectIDs = "inserted_objectIDs"
        /// The IDs of the updated objects.
        case updatedObjectIDs = "updated_objectIDs"
        /// The IDs of the deleted objects.
        case deletedObjectIDs = "deleted_objectIDs"
        /// The IDs of the refreshed objects.
        case refreshedObjectIDs = "refreshed_objectIDs"
        /// The IDs of the invalidated objects.
        case invalidatedObjectIDs = "invalidated_objectIDs"
    }
}
