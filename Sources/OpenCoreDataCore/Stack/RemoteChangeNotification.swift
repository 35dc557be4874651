import Foundation

extension Notification.Name {
    /// Posted by a coordinator, on a private queue, after a store added with
    /// `NSPersistentStoreRemoteChangeNotificationPostOptionKey` was committed to: by another
    /// process, another coordinator, or this coordinator's own saves. The object is the
    /// coordinator; userInfo holds `NSStoreUUIDKey`, `NSPersistentStoreURLKey` and, for a store
    /// that tracks history, `NSPersistentHistoryTokenKey` (the latest transaction's token).
    public static let NSPersistentStoreRemoteChange = Notification.Name("NSPersistentStoreRemoteChangeNotification")
}

/// The userInfo key of the latest transaction's `NSPersistentHistoryToken` in `NSPersistentStoreRemoteChange`.
public let NSPersistentHistoryTokenKey = "historyToken"
/// The userInfo key of the store's URL in `NSPersistentStoreRemoteChange`.
public let NSPersistentStoreURLKey = "storeURL"
/// Option (OpenCoreData's own): how often, in seconds, a store with remote change notifications
/// checks its file for commits (default 0.05).
public let OCDRemoteChangePollingIntervalOptionKey = "OCDRemoteChangePollingInterval"
