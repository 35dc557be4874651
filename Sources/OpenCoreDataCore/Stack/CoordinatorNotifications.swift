import Foundation

/// The userInfo key of the stores a coordinator added, in `NSPersistentStoreCoordinatorStoresDidChange`.
public let NSAddedPersistentStoresKey = "added"
/// The userInfo key of the stores a coordinator removed, in `NSPersistentStoreCoordinatorStoresDidChange`.
public let NSRemovedPersistentStoresKey = "removed"
/// The userInfo key of a store replaced by one with another identifier (kept for API
/// compatibility: `migratePersistentStore` reports the new store as added and the old one as removed).
public let NSUUIDChangedPersistentStoresKey = "UUIDChanged"

extension Notification.Name {
    /// Posted by a coordinator after stores were added or removed (`addPersistentStore`,
    /// `remove(_:)`, `migratePersistentStore`), with the stores under `NSAddedPersistentStoresKey`
    /// and `NSRemovedPersistentStoresKey`; the object is the coordinator.
    public static let NSPersistentStoreCoordinatorStoresDidChange = Notification.Name("NSPersistentStoreCoordinatorStoresDidChangeNotification")
    /// Posted by a coordinator before its stores change wholesale (iCloud's account changes on
    /// Apple's platforms); never posted here.
    public static let NSPersistentStoreCoordinatorStoresWillChange = Notification.Name("NSPersistentStoreCoordinatorStoresWillChangeNotification")
    /// Posted before a store is removed from its coordinator; the object is the store.
    public static let NSPersistentStoreCoordinatorWillRemoveStore = Notification.Name("NSPersistentStoreCoordinatorWillRemoveStoreNotification")
}

extension NSPersistentStoreCoordinator {
    /// Tells observers that stores were added or removed.
    func postStoresDidChange(added: [NSPersistentStore] = [], removed: [NSPersistentStore] = []) {
        var userInfo: [AnyHashable: Any] = [:]
        if !added.isEmpty { userInfo[NSAddedPersistentStoresKey] = added }
        if !removed.isEmpty { userInfo[NSRemovedPersistentStoresKey] = removed }
        postCoordinatorNotification(.NSPersistentStoreCoordinatorStoresDidChange, userInfo: userInfo)
    }
}
