import Foundation

/// Delivers the `NotificationCenter` messages (Core Data's typed notifications of iOS 27) that go
/// with a notification the framework posts.
///
/// Apple's Foundation turns each posted notification into the messages observed under its name,
/// through the message types' `makeMessage(_:)`. The Foundation of other platforms delivers a
/// message only when the message itself is posted, so there the framework posts the messages
/// beside the notification, made by the same `makeMessage(_:)`. A main-actor message is delivered
/// when the notification is posted on the main queue, at once; one posted elsewhere (a main-queue
/// context used from another thread, which runs its blocks on the calling thread here) has no
/// main-actor message: waiting for a main queue that a process may never run would keep the
/// message's objects alive. An asynchronous message is posted at once (Foundation calls its
/// observers asynchronously).
enum MessageDelivery {
    /// Whether this Foundation delivers messages for posted notifications by itself.
    #if canImport(Darwin)
    static let foundationBridgesNotifications = true
    #else
    static let foundationBridgesNotifications = false
    #endif

    /// Posts a notification and, where Foundation doesn't make messages of it, hands it to
    /// `postMessages` to post those that stand for it.
    static func post(_ name: Notification.Name, object: AnyObject, userInfo: [AnyHashable: Any]?, postMessages: (Notification) -> Void) {
        let notification = Notification(name: name, object: object, userInfo: userInfo)
        NotificationCenter.default.post(notification)
        if !foundationBridgesNotifications { postMessages(notification) }
    }

    /// Posts the main-actor message `make` (a message type's `makeMessage(_:)`) makes of
    /// `notification`, if it makes one and the caller is on the main queue.
    static func postOnMainActor<Message: NotificationCenter.MainActorMessage>(_ make: @MainActor (Notification) -> Message?,
                                                                              for notification: Notification, subject: Message.Subject)
    where Message.Subject: AnyObject {
        guard ConcurrencyDebugging.isOnMainQueue else { return }
        // The notification and its subject stay on the queue that posts them.
        let carried = UncheckedSendable((notification, subject))
        MainActor.assumeIsolated { deliver(make, carried.value.0, carried.value.1) }
    }

    @MainActor
    private static func deliver<Message: NotificationCenter.MainActorMessage>(_ make: @MainActor (Notification) -> Message?, _ notification: Notification,
                                                                              _ subject: Message.Subject) where Message.Subject: AnyObject {
        guard let message = make(notification) else { return }
        NotificationCenter.default.post(message, subject: subject)
    }

    /// Posts the asynchronous message `make` (a message type's `makeMessage(_:)`) makes of
    /// `notification`, if it makes one.
    static func post<Message: NotificationCenter.AsyncMessage>(_ make: (Notification) -> Message?, for notification: Notification,
                                                               subject: Message.Subject) where Message.Subject: AnyObject {
        guard let message = make(notification) else { return }
        NotificationCenter.default.post(message, subject: subject)
    }
}
