import Foundation

// Core Data's typed `NotificationCenter` messages for contexts (iOS 27): each stands for one of
// the context's notifications, made from it by `makeMessage(_:)`. `addObserver(of:for:using:)`
// with the message type, or with its identifier (`.didSave`), observes them. The main-actor
// messages come from main-queue contexts; the asynchronous ones from any context.

extension NSManagedObjectContext {
    /// Posted when objects of a main-queue context change (inserted, updated, deleted, refreshed
    /// or invalidated): the message of `NSManagedObjectContextObjectsDidChange`.
    public struct ObjectsDidChangeMessage: NotificationCenter.MainActorMessage {
        public typealias Subject = NSManagedObjectContext
        /// The notification the message stands for.
        public static var name: Notification.Name { .NSManagedObjectContextObjectsDidChange }
        /// The context whose objects changed.
        public let context: NSManagedObjectContext
        /// Objects that were inserted.
        public var inserted: Set<NSManagedObject> { contents.inserted }
        /// Objects that were updated.
        public var updated: Set<NSManagedObject> { contents.updated }
        /// Objects that were deleted.
        public var deleted: Set<NSManagedObject> { contents.deleted }
        /// Objects that were refreshed.
        public var refreshed: Set<NSManagedObject> { contents.refreshed }
        /// Objects that were invalidated.
        public var invalidated: Set<NSManagedObject> { contents.invalidated }
        /// True if all objects in the context were invalidated (`reset()`); nil otherwise.
        public let invalidatedAll: Bool?
        private let contents: ChangedObjects

        init(context: NSManagedObjectContext, contents: ChangedObjects, invalidatedAll: Bool?) {
            self.context = context
            self.contents = contents
            self.invalidatedAll = invalidatedAll
        }

        /// The message of a posted `NSManagedObjectContextObjectsDidChange`; nil for another notification.
        @MainActor public static func makeMessage(_ notification: Notification) -> ObjectsDidChangeMessage? {
            guard notification.name == name, let context = notification.object as? NSManagedObjectContext else { return nil }
            let userInfo = notification.userInfo ?? [:]
            return ObjectsDidChangeMessage(context: context, contents: ChangedObjects(userInfo),
                                           invalidatedAll: userInfo[NSInvalidatedAllObjectsKey] != nil ? true : nil)
        }

        /// The notification the message stands for.
        @MainActor public static func makeNotification(_ message: ObjectsDidChangeMessage) -> Notification {
            var userInfo = message.contents.userInfo
            if message.invalidatedAll == true { userInfo[NSInvalidatedAllObjectsKey] = true }
            return Notification(name: name, object: message.context, userInfo: userInfo)
        }
    }

    /// Posted before a main-queue context saves: the message of `NSManagedObjectContextWillSave`.
    public struct WillSaveMessage: NotificationCenter.MainActorMessage {
        public typealias Subject = NSManagedObjectContext
        /// The notification the message stands for.
        public static var name: Notification.Name { .NSManagedObjectContextWillSave }
        /// The context about to save.
        public let context: NSManagedObjectContext

        /// The message of a posted `NSManagedObjectContextWillSave`; nil for another notification.
        @MainActor public static func makeMessage(_ notification: Notification) -> WillSaveMessage? {
            guard notification.name == name, let context = notification.object as? NSManagedObjectContext else { return nil }
            return WillSaveMessage(context: context)
        }

        /// The notification the message stands for.
        @MainActor public static func makeNotification(_ message: WillSaveMessage) -> Notification {
            Notification(name: name, object: message.context)
        }
    }

    /// Posted after a main-queue context saves, with the saved objects: the message of
    /// `NSManagedObjectContextDidSave`.
    public struct DidSaveMessage: NotificationCenter.MainActorMessage {
        public typealias Subject = NSManagedObjectContext
        /// The notification the message stands for.
        public static var name: Notification.Name { .NSManagedObjectContextDidSave }
        /// The context that saved.
        public let context: NSManagedObjectContext
        /// Managed objects that were inserted during this save.
        public var inserted: Set<NSManagedObject> { contents.inserted }
        /// Managed objects that were updated during this save.
        public var updated: Set<NSManagedObject> { contents.updated }
        /// Managed objects that were deleted during this save.
        public var deleted: Set<NSManagedObject> { contents.deleted }
        /// The persistent history token after the save, when the notification carries one (the
        /// framework's save notifications don't: see docs/Differences.md).
        public let historyToken: NSPersistentHistoryToken?
        /// The query generation token after the save, for a context pinned to a generation.
        public let queryGeneration: NSQueryGenerationToken?
        private let contents: ChangedObjects

        init(context: NSManagedObjectContext, contents: ChangedObjects, historyToken: NSPersistentHistoryToken?, queryGeneration: NSQueryGenerationToken?) {
            self.context = context
            self.contents = contents
            self.historyToken = historyToken
            self.queryGeneration = queryGeneration
        }

        /// The message of a posted `NSManagedObjectContextDidSave`; nil for another notification.
        @MainActor public static func makeMessage(_ notification: Notification) -> DidSaveMessage? {
            guard notification.name == name, let context = notification.object as? NSManagedObjectContext else { return nil }
            let userInfo = notification.userInfo ?? [:]
            return DidSaveMessage(context: context, contents: ChangedObjects(userInfo),
                                  historyToken: userInfo[NSPersistentHistoryTokenKey] as? NSPersistentHistoryToken,
                                  queryGeneration: userInfo[NSManagedObjectContextQueryGenerationKey] as? NSQueryGenerationToken)
        }

        /// The notification the message stands for.
        @MainActor public static func makeNotification(_ message: DidSaveMessage) -> Notification {
            var userInfo = message.contents.userInfo
            userInfo[NSPersistentHistoryTokenKey] = message.historyToken
            userInfo[NSManagedObjectContextQueryGenerationKey] = message.queryGeneration
            return Notification(name: name, object: message.context, userInfo: userInfo)
        }
    }

    /// Posted after a main-queue context saves, with the saved objects' IDs: the message of
    /// `NSManagedObjectContextDidSaveObjectIDs`.
    public struct DidSaveObjectIDsMessage: NotificationCenter.MainActorMessage {
        public typealias Subject = NSManagedObjectContext
        /// The notification the message stands for.
        public static var name: Notification.Name { .NSManagedObjectContextDidSaveObjectIDs }
        /// The context that saved.
        public let context: NSManagedObjectContext
        /// Object IDs of objects that were inserted during this save.
        public var insertedIDs: Set<NSManagedObjectID> { ids.inserted }
        /// Object IDs of objects that were updated during this save.
        public var updatedIDs: Set<NSManagedObjectID> { ids.updated }
        /// Object IDs of objects that were deleted during this save.
        public var deletedIDs: Set<NSManagedObjectID> { ids.deleted }
        /// Object IDs of objects that were refreshed during this save.
        public var refreshedIDs: Set<NSManagedObjectID> { ids.refreshed }
        /// Object IDs of objects that were invalidated during this save.
        public var invalidatedIDs: Set<NSManagedObjectID> { ids.invalidated }
        /// The persistent history token after the save, when the notification carries one.
        public var historyToken: NSPersistentHistoryToken? { ids.historyToken }
        /// The query generation token after the save, for a context pinned to a generation.
        public var queryGeneration: NSQueryGenerationToken? { ids.queryGeneration }
        let ids: ChangedObjectIDs

        init(context: NSManagedObjectContext, _ ids: ChangedObjectIDs) {
            self.context = context
            self.ids = ids
        }

        /// The message of a posted `NSManagedObjectContextDidSaveObjectIDs`; nil for another notification.
        @MainActor public static func makeMessage(_ notification: Notification) -> DidSaveObjectIDsMessage? {
            guard notification.name == name, let context = notification.object as? NSManagedObjectContext else { return nil }
            return DidSaveObjectIDsMessage(context: context, ChangedObjectIDs(notification.userInfo ?? [:]))
        }

        /// The notification the message stands for.
        @MainActor public static func makeNotification(_ message: DidSaveObjectIDsMessage) -> Notification {
            Notification(name: name, object: message.context, userInfo: message.ids.userInfo)
        }
    }

    /// Posted after a private-queue context saves, with the saved objects' IDs: the asynchronous
    /// message of `NSManagedObjectContextDidSaveObjectIDs`.
    public struct DidSaveObjectIDsAsyncMessage: NotificationCenter.AsyncMessage {
        public typealias Subject = NSManagedObjectContext
        /// The notification the message stands for.
        public static var name: Notification.Name { .NSManagedObjectContextDidSaveObjectIDs }
        /// The context that saved.
        public let context: NSManagedObjectContext
        /// Object IDs of objects that were inserted during this save.
        public var insertedIDs: Set<NSManagedObjectID> { ids.inserted }
        /// Object IDs of objects that were updated during this save.
        public var updatedIDs: Set<NSManagedObjectID> { ids.updated }
        /// Object IDs of objects that were deleted during this save.
        public var deletedIDs: Set<NSManagedObjectID> { ids.deleted }
        /// Object IDs of objects that were refreshed during this save.
        public var refreshedIDs: Set<NSManagedObjectID> { ids.refreshed }
        /// Object IDs of objects that were invalidated during this save.
        public var invalidatedIDs: Set<NSManagedObjectID> { ids.invalidated }
        /// The persistent history token after the save, when the notification carries one.
        public var historyToken: NSPersistentHistoryToken? { ids.historyToken }
        /// The query generation token after the save, for a context pinned to a generation.
        public var queryGeneration: NSQueryGenerationToken? { ids.queryGeneration }
        let ids: ChangedObjectIDs

        init(context: NSManagedObjectContext, _ ids: ChangedObjectIDs) {
            self.context = context
            self.ids = ids
        }

        /// The message of a posted `NSManagedObjectContextDidSaveObjectIDs`; nil for another notification.
        public static func makeMessage(_ notification: Notification) -> DidSaveObjectIDsAsyncMessage? {
            guard notification.name == name, let context = notification.object as? NSManagedObjectContext else { return nil }
            return DidSaveObjectIDsAsyncMessage(context: context, ChangedObjectIDs(notification.userInfo ?? [:]))
        }

        /// The notification the message stands for.
        public static func makeNotification(_ message: DidSaveObjectIDsAsyncMessage) -> Notification {
            Notification(name: name, object: message.context, userInfo: message.ids.userInfo)
        }
    }

    /// Posted after a main-queue context merged changes from another context, with their object
    /// IDs: the message of `NSManagedObjectContextDidMergeChangesObjectIDs`.
    public struct DidMergeChangesMessage: NotificationCenter.MainActorMessage {
        public typealias Subject = NSManagedObjectContext
        /// The notification the message stands for.
        public static var name: Notification.Name { .NSManagedObjectContextDidMergeChangesObjectIDs }
        /// The context that merged the changes.
        public let context: NSManagedObjectContext
        /// Object IDs of objects that were inserted during the merge.
        public var insertedIDs: Set<NSManagedObjectID> { ids.inserted }
        /// Object IDs of objects that were updated during the merge.
        public var updatedIDs: Set<NSManagedObjectID> { ids.updated }
        /// Object IDs of objects that were deleted during the merge.
        public var deletedIDs: Set<NSManagedObjectID> { ids.deleted }
        /// Object IDs of objects that were refreshed during the merge.
        public var refreshedIDs: Set<NSManagedObjectID> { ids.refreshed }
        /// Object IDs of objects that were invalidated during the merge.
        public var invalidatedIDs: Set<NSManagedObjectID> { ids.invalidated }
        /// The persistent history token after the merge, when the notification carries one.
        public var historyToken: NSPersistentHistoryToken? { ids.historyToken }
        /// The query generation token after the merge, when the notification carries one.
        public var queryGeneration: NSQueryGenerationToken? { ids.queryGeneration }
        let ids: ChangedObjectIDs

        init(context: NSManagedObjectContext, _ ids: ChangedObjectIDs) {
            self.context = context
            self.ids = ids
        }

        /// The message of a posted `NSManagedObjectContextDidMergeChangesObjectIDs`; nil for another notification.
        @MainActor public static func makeMessage(_ notification: Notification) -> DidMergeChangesMessage? {
            guard notification.name == name, let context = notification.object as? NSManagedObjectContext else { return nil }
            return DidMergeChangesMessage(context: context, ChangedObjectIDs(notification.userInfo ?? [:]))
        }

        /// The notification the message stands for.
        @MainActor public static func makeNotification(_ message: DidMergeChangesMessage) -> Notification {
            Notification(name: name, object: message.context, userInfo: message.ids.userInfo)
        }
    }

    /// Posted after a private-queue context merged changes from another context, with their
    /// object IDs: the asynchronous message of `NSManagedObjectContextDidMergeChangesObjectIDs`.
    public struct DidMergeChangesAsyncMessage: NotificationCenter.AsyncMessage {
        public typealias Subject = NSManagedObjectContext
        /// The notification the message stands for.
        public static var name: Notification.Name { .NSManagedObjectContextDidMergeChangesObjectIDs }
        /// The context that merged the changes.
        public let context: NSManagedObjectContext
        /// Object IDs of objects that were inserted during the merge.
        public var insertedIDs: Set<NSManagedObjectID> { ids.inserted }
        /// Object IDs of objects that were updated during the merge.
        public var updatedIDs: Set<NSManagedObjectID> { ids.updated }
        /// Object IDs of objects that were deleted during the merge.
        public var deletedIDs: Set<NSManagedObjectID> { ids.deleted }
        /// Object IDs of objects that were refreshed during the merge.
        public var refreshedIDs: Set<NSManagedObjectID> { ids.refreshed }
        /// Object IDs of objects that were invalidated during the merge.
        public var invalidatedIDs: Set<NSManagedObjectID> { ids.invalidated }
        /// The persistent history token after the merge, when the notification carries one.
        public var historyToken: NSPersistentHistoryToken? { ids.historyToken }
        /// The query generation token after the merge, when the notification carries one.
        public var queryGeneration: NSQueryGenerationToken? { ids.queryGeneration }
        let ids: ChangedObjectIDs

        init(context: NSManagedObjectContext, _ ids: ChangedObjectIDs) {
            self.context = context
            self.ids = ids
        }

        /// The message of a posted `NSManagedObjectContextDidMergeChangesObjectIDs`; nil for another notification.
        public static func makeMessage(_ notification: Notification) -> DidMergeChangesAsyncMessage? {
            guard notification.name == name, let context = notification.object as? NSManagedObjectContext else { return nil }
            return DidMergeChangesAsyncMessage(context: context, ChangedObjectIDs(notification.userInfo ?? [:]))
        }

        /// The notification the message stands for.
        public static func makeNotification(_ message: DidMergeChangesAsyncMessage) -> Notification {
            Notification(name: name, object: message.context, userInfo: message.ids.userInfo)
        }
    }
}

/// The sets of objects a context notification carries, read from its userInfo (a set or an
/// array under each key; a missing key is an empty set).
struct ChangedObjects {
    var inserted: Set<NSManagedObject>
    var updated: Set<NSManagedObject>
    var deleted: Set<NSManagedObject>
    var refreshed: Set<NSManagedObject>
    var invalidated: Set<NSManagedObject>

    init(_ userInfo: [AnyHashable: Any]) {
        func objects(_ key: String) -> Set<NSManagedObject> {
            if let set = userInfo[key] as? Set<NSManagedObject> { return set }
            return Set(userInfo[key] as? [NSManagedObject] ?? [])
        }
        inserted = objects(NSInsertedObjectsKey)
        updated = objects(NSUpdatedObjectsKey)
        deleted = objects(NSDeletedObjectsKey)
        refreshed = objects(NSRefreshedObjectsKey)
        invalidated = objects(NSInvalidatedObjectsKey)
    }

    /// The userInfo of a notification carrying these sets (only the non-empty ones besides the
    /// inserted, updated and deleted objects, which the context's notifications always carry).
    var userInfo: [AnyHashable: Any] {
        var userInfo: [AnyHashable: Any] = [NSInsertedObjectsKey: inserted, NSUpdatedObjectsKey: updated, NSDeletedObjectsKey: deleted]
        if !refreshed.isEmpty { userInfo[NSRefreshedObjectsKey] = refreshed }
        if !invalidated.isEmpty { userInfo[NSInvalidatedObjectsKey] = invalidated }
        return userInfo
    }
}

/// The sets of object IDs and the tokens an object-ID notification carries, read from its userInfo.
struct ChangedObjectIDs: Sendable {
    var inserted: Set<NSManagedObjectID>
    var updated: Set<NSManagedObjectID>
    var deleted: Set<NSManagedObjectID>
    var refreshed: Set<NSManagedObjectID>
    var invalidated: Set<NSManagedObjectID>
    var historyToken: NSPersistentHistoryToken?
    var queryGeneration: NSQueryGenerationToken?

    init(_ userInfo: [AnyHashable: Any]) {
        func ids(_ key: String) -> Set<NSManagedObjectID> {
            if let set = userInfo[key] as? Set<NSManagedObjectID> { return set }
            return Set(userInfo[key] as? [NSManagedObjectID] ?? [])
        }
        inserted = ids(NSInsertedObjectIDsKey)
        updated = ids(NSUpdatedObjectIDsKey)
        deleted = ids(NSDeletedObjectIDsKey)
        refreshed = ids(NSRefreshedObjectIDsKey)
        invalidated = ids(NSInvalidatedObjectIDsKey)
        historyToken = userInfo[NSPersistentHistoryTokenKey] as? NSPersistentHistoryToken
        queryGeneration = userInfo[NSManagedObjectContextQueryGenerationKey] as? NSQueryGenerationToken
    }

    /// The userInfo of a notification carrying these IDs and tokens.
    var userInfo: [AnyHashable: Any] {
        var userInfo: [AnyHashable: Any] = [NSInsertedObjectIDsKey: inserted, NSUpdatedObjectIDsKey: updated, NSDeletedObjectIDsKey: deleted]
        if !refreshed.isEmpty { userInfo[NSRefreshedObjectIDsKey] = refreshed }
        if !invalidated.isEmpty { userInfo[NSInvalidatedObjectIDsKey] = invalidated }
        userInfo[NSPersistentHistoryTokenKey] = historyToken
        userInfo[NSManagedObjectContextQueryGenerationKey] = queryGeneration
        return userInfo
    }
}

extension NotificationCenter.MessageIdentifier where Self == NotificationCenter.BaseMessageIdentifier<NSManagedObjectContext.ObjectsDidChangeMessage> {
    /// `NSManagedObjectContext.ObjectsDidChangeMessage`.
    public static var objectsDidChange: NotificationCenter.BaseMessageIdentifier<NSManagedObjectContext.ObjectsDidChangeMessage> { .init() }
}

extension NotificationCenter.MessageIdentifier where Self == NotificationCenter.BaseMessageIdentifier<NSManagedObjectContext.WillSaveMessage> {
    /// `NSManagedObjectContext.WillSaveMessage`.
    public static var willSave: NotificationCenter.BaseMessageIdentifier<NSManagedObjectContext.WillSaveMessage> { .init() }
}

extension NotificationCenter.MessageIdentifier where Self == NotificationCenter.BaseMessageIdentifier<NSManagedObjectContext.DidSaveMessage> {
    /// `NSManagedObjectContext.DidSaveMessage`.
    public static var didSave: NotificationCenter.BaseMessageIdentifier<NSManagedObjectContext.DidSaveMessage> { .init() }
}

extension NotificationCenter.MessageIdentifier where Self == NotificationCenter.BaseMessageIdentifier<NSManagedObjectContext.DidSaveObjectIDsMessage> {
    /// `NSManagedObjectContext.DidSaveObjectIDsMessage`.
    public static var didSaveObjectIDs: NotificationCenter.BaseMessageIdentifier<NSManagedObjectContext.DidSaveObjectIDsMessage> { .init() }
}

extension NotificationCenter.MessageIdentifier where Self == NotificationCenter.BaseMessageIdentifier<NSManagedObjectContext.DidSaveObjectIDsAsyncMessage> {
    /// `NSManagedObjectContext.DidSaveObjectIDsAsyncMessage`.
    public static var didSaveObjectIDsAsync: NotificationCenter.BaseMessageIdentifier<NSManagedObjectContext.DidSaveObjectIDsAsyncMessage> { .init() }
}

extension NotificationCenter.MessageIdentifier where Self == NotificationCenter.BaseMessageIdentifier<NSManagedObjectContext.DidMergeChangesMessage> {
    /// `NSManagedObjectContext.DidMergeChangesMessage`.
    public static var didMergeChanges: NotificationCenter.BaseMessageIdentifier<NSManagedObjectContext.DidMergeChangesMessage> { .init() }
}

extension NotificationCenter.MessageIdentifier where Self == NotificationCenter.BaseMessageIdentifier<NSManagedObjectContext.DidMergeChangesAsyncMessage> {
    /// `NSManagedObjectContext.DidMergeChangesAsyncMessage`.
    public static var didMergeChangesAsync: NotificationCenter.BaseMessageIdentifier<NSManagedObjectContext.DidMergeChangesAsyncMessage> { .init() }
}

extension NSManagedObjectContext {
    /// Posts one of the context's notifications, and the messages that stand for it (see
    /// `MessageDelivery`): the main-actor ones for a main-queue context, the asynchronous ones
    /// for any context.
    func postContextNotification(_ name: Notification.Name, userInfo: [AnyHashable: Any]? = nil) {
        MessageDelivery.post(name, object: self, userInfo: userInfo) { notification in
            let onMainQueue = concurrencyType == .mainQueueConcurrencyType
            switch name {
            case .NSManagedObjectContextObjectsDidChange:
                if onMainQueue { MessageDelivery.postOnMainActor(ObjectsDidChangeMessage.makeMessage, for: notification, subject: self) }
            case .NSManagedObjectContextWillSave:
                if onMainQueue { MessageDelivery.postOnMainActor(WillSaveMessage.makeMessage, for: notification, subject: self) }
            case .NSManagedObjectContextDidSave:
                if onMainQueue { MessageDelivery.postOnMainActor(DidSaveMessage.makeMessage, for: notification, subject: self) }
            case .NSManagedObjectContextDidSaveObjectIDs:
                if onMainQueue { MessageDelivery.postOnMainActor(DidSaveObjectIDsMessage.makeMessage, for: notification, subject: self) }
                MessageDelivery.post(DidSaveObjectIDsAsyncMessage.makeMessage, for: notification, subject: self)
            case .NSManagedObjectContextDidMergeChangesObjectIDs:
                if onMainQueue { MessageDelivery.postOnMainActor(DidMergeChangesMessage.makeMessage, for: notification, subject: self) }
                MessageDelivery.post(DidMergeChangesAsyncMessage.makeMessage, for: notification, subject: self)
            default:
                break
            }
        }
    }
}
