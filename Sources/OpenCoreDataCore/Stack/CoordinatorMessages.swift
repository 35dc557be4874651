import Foundation

// Core Data's typed `NotificationCenter` messages for coordinators (iOS 27), made from the
// coordinator's notifications by `makeMessage(_:)` (see `MessageDelivery`).

extension NSPersistentStoreCoordinator {
    /// Posted when stores are added to or removed from the coordinator on the main queue: the
    /// main-actor message of `NSPersistentStoreCoordinatorStoresDidChange`.
    public struct StoresDidChangeMessage: NotificationCenter.MainActorMessage {
        public typealias Subject = NSPersistentStoreCoordinator
        /// The notification the message stands for.
        public static var name: Notification.Name { .NSPersistentStoreCoordinatorStoresDidChange }
        /// The coordinator whose stores changed.
        public let persistentStoreCoordinator: NSPersistentStoreCoordinator
        /// Stores that were added during this change.
        public var addedStores: [NSPersistentStore] { change.added }
        /// Stores that were removed during this change.
        public var removedStores: [NSPersistentStore] { change.removed }
        /// A store replaced by one with another identifier (never reported here: a migrated store
        /// is reported as added and the old one as removed).
        public var uuidChangedStores: (oldValue: NSPersistentStore, newValue: NSPersistentStore)? { change.uuidChanged }
        private let change: StoreChange

        /// The message of a posted `NSPersistentStoreCoordinatorStoresDidChange`; nil for another notification.
        @MainActor public static func makeMessage(_ notification: Notification) -> StoresDidChangeMessage? {
            guard notification.name == name, let coordinator = notification.object as? NSPersistentStoreCoordinator else { return nil }
            return StoresDidChangeMessage(persistentStoreCoordinator: coordinator, change: StoreChange(notification.userInfo ?? [:]))
        }

        /// The notification the message stands for.
        @MainActor public static func makeNotification(_ message: StoresDidChangeMessage) -> Notification {
            Notification(name: name, object: message.persistentStoreCoordinator, userInfo: message.change.userInfo)
        }
    }

    /// Posted when stores are added to or removed from the coordinator on a background queue:
    /// the asynchronous message of `NSPersistentStoreCoordinatorStoresDidChange`.
    public struct StoresDidChangeAsyncMessage: NotificationCenter.AsyncMessage, @unchecked Sendable {
        public typealias Subject = NSPersistentStoreCoordinator
        /// The notification the message stands for.
        public static var name: Notification.Name { .NSPersistentStoreCoordinatorStoresDidChange }
        /// The coordinator whose stores changed.
        public let persistentStoreCoordinator: NSPersistentStoreCoordinator
        /// Stores that were added during this change.
        public var addedStores: [NSPersistentStore] { change.added }
        /// Stores that were removed during this change.
        public var removedStores: [NSPersistentStore] { change.removed }
        /// A store replaced by one with another identifier (never reported here: a migrated store
        /// is reported as added and the old one as removed).
        public var uuidChangedStores: (oldValue: NSPersistentStore, newValue: NSPersistentStore)? { change.uuidChanged }
        private let change: StoreChange

        /// The message of a posted `NSPersistentStoreCoordinatorStoresDidChange`; nil for another notification.
        public static func makeMessage(_ notification: Notification) -> StoresDidChangeAsyncMessage? {
            guard notification.name == name, let coordinator = notification.object as? NSPersistentStoreCoordinator else { return nil }
            return StoresDidChangeAsyncMessage(persistentStoreCoordinator: coordinator, change: StoreChange(notification.userInfo ?? [:]))
        }

        /// The notification the message stands for.
        public static func makeNotification(_ message: StoresDidChangeAsyncMessage) -> Notification {
            Notification(name: name, object: message.persistentStoreCoordinator, userInfo: message.change.userInfo)
        }
    }

    /// Posted when a store learns that another process changed it: the message of
    /// `NSPersistentStoreRemoteChange` (which `NSPersistentStoreRemoteChangeNotificationPostOptionKey` turns on).
    public struct RemoteChangeMessage: NotificationCenter.AsyncMessage {
        public typealias Subject = NSPersistentStoreCoordinator
        /// The notification the message stands for.
        public static var name: Notification.Name { .NSPersistentStoreRemoteChange }
        /// The coordinator of the store that changed.
        public let persistentStoreCoordinator: NSPersistentStoreCoordinator
        /// The URL of the store that changed.
        public let storeURL: URL
        /// The UUID of the store that changed.
        public let storeUUID: String
        /// The persistent history token after the change (stores that record persistent history).
        public let historyToken: NSPersistentHistoryToken?

        /// The message of a posted `NSPersistentStoreRemoteChange`; nil for another notification.
        public static func makeMessage(_ notification: Notification) -> RemoteChangeMessage? {
            guard notification.name == name, let coordinator = notification.object as? NSPersistentStoreCoordinator,
                  let userInfo = notification.userInfo, let url = userInfo[NSPersistentStoreURLKey] as? URL,
                  let uuid = userInfo[NSStoreUUIDKey] as? String else { return nil }
            return RemoteChangeMessage(persistentStoreCoordinator: coordinator, storeURL: url, storeUUID: uuid,
                                       historyToken: userInfo[NSPersistentHistoryTokenKey] as? NSPersistentHistoryToken)
        }

        /// The notification the message stands for.
        public static func makeNotification(_ message: RemoteChangeMessage) -> Notification {
            var userInfo: [AnyHashable: Any] = [NSPersistentStoreURLKey: message.storeURL, NSStoreUUIDKey: message.storeUUID]
            userInfo[NSPersistentHistoryTokenKey] = message.historyToken
            return Notification(name: name, object: message.persistentStoreCoordinator, userInfo: userInfo)
        }
    }
}

/// The stores a `NSPersistentStoreCoordinatorStoresDidChange` notification carries.
struct StoreChange {
    var added: [NSPersistentStore]
    var removed: [NSPersistentStore]
    var uuidChanged: (oldValue: NSPersistentStore, newValue: NSPersistentStore)?

    init(_ userInfo: [AnyHashable: Any]) {
        added = userInfo[NSAddedPersistentStoresKey] as? [NSPersistentStore] ?? []
        removed = userInfo[NSRemovedPersistentStoresKey] as? [NSPersistentStore] ?? []
        if let pair = userInfo[NSUUIDChangedPersistentStoresKey] as? [NSPersistentStore], pair.count == 2 {
            uuidChanged = (oldValue: pair[0], newValue: pair[1])
        }
    }

    var userInfo: [AnyHashable: Any] {
        var userInfo: [AnyHashable: Any] = [:]
        if !added.isEmpty { userInfo[NSAddedPersistentStoresKey] = added }
        if !removed.isEmpty { userInfo[NSRemovedPersistentStoresKey] = removed }
        if let uuidChanged { userInfo[NSUUIDChangedPersistentStoresKey] = [uuidChanged.oldValue, uuidChanged.newValue] }
        return userInfo
    }
}

extension NotificationCenter.MessageIdentifier where Self == NotificationCenter.BaseMessageIdentifier<NSPersistentStoreCoordinator.StoresDidChangeMessage> {
    /// `NSPersistentStoreCoordinator.StoresDidChangeMessage`.
    public static var storesDidChange: NotificationCenter.BaseMessageIdentifier<NSPersistentStoreCoordinator.StoresDidChangeMessage> { .init() }
}

extension NotificationCenter.MessageIdentifier where Self == NotificationCenter.BaseMessageIdentifier<NSPersistentStoreCoordinator.StoresDidChangeAsyncMessage> {
    /// `NSPersistentStoreCoordinator.StoresDidChangeAsyncMessage`.
    public static var storesDidChangeAsync: NotificationCenter.BaseMessageIdentifier<NSPersistentStoreCoordinator.StoresDidChangeAsyncMessage> { .init() }
}

extension NotificationCenter.MessageIdentifier where Self == NotificationCenter.BaseMessageIdentifier<NSPersistentStoreCoordinator.RemoteChangeMessage> {
    /// `NSPersistentStoreCoordinator.RemoteChangeMessage`.
    public static var remoteChange: NotificationCenter.BaseMessageIdentifier<NSPersistentStoreCoordinator.RemoteChangeMessage> { .init() }
}

extension NSPersistentStoreCoordinator {
    /// Posts one of the coordinator's notifications, and the messages that stand for it (see
    /// `MessageDelivery`): the main-actor one only when posted on the main queue.
    func postCoordinatorNotification(_ name: Notification.Name, userInfo: [AnyHashable: Any]? = nil) {
        MessageDelivery.post(name, object: self, userInfo: userInfo) { notification in
            switch name {
            case .NSPersistentStoreCoordinatorStoresDidChange:
                MessageDelivery.postOnMainActor(StoresDidChangeMessage.makeMessage, for: notification, subject: self)
                MessageDelivery.post(StoresDidChangeAsyncMessage.makeMessage, for: notification, subject: self)
            case .NSPersistentStoreRemoteChange:
                MessageDelivery.post(RemoteChangeMessage.makeMessage, for: notification, subject: self)
            default:
                break
            }
        }
    }
}
