import Foundation

/// Delivers the `NotificationCenter` messages (Core Data's typed notifications of iOS 27) that go
/// with a notification the framework posts.
///
/// Apple's Foundation turns each posted notification into the messages observed under its name,
/// through the message types' `makeMessage(_:)`. The Foundation of other platforms delivers a
/// message only when the message itself is posted, so there the framework posts the messages
/// beside the notification, made by the same `makeMessage(_:)`. A main-actor message is
/// delivered at once when the notification is posted on the main queue, else on the main queue
/// afterwards; an asynchronous message is posted at once (Foundation calls its observers
/// asynchronously).
enum MessageDelivery {
    /// Whether this Foundation delivers messages for posted notifications by itself.
    #if canImport(Darwin)
    static let foundationBridgesNotifications = true
    #else
    static let foundationBridgesNotifications = false
    #endif

    /// What to do with a main-actor message whose notification is posted off the main queue.
    enum OffMainQueue {
        /// Deliver it on the main queue afterwards (a main-queue context used from another thread).
        case deliverLater
        /// Don't deliver it: its asynchronous counterpart stands for such a change.
        case skip
    }

    /// Posts the main-actor message `make` (a message type's `makeMessage(_:)`) makes of
    /// `notification`, if it makes one.
    static func postOnMainActor<Message: NotificationCenter.MainActorMessage>(_ make: @escaping @MainActor (Notification) -> Message?,
                                                                              for notification: Notification, subject: Message.Subject,
                                                                              offMainQueue: OffMainQueue = .deliverLater)
    where Message.Subject: AnyObject {
        guard !foundationBridgesNotifications else { return }
        // The notification and its subject stay on the queue that posts them, or go to the main
        // queue with nothing else using them.
        let carried = UncheckedSendable((make, notification, subject))
        if ConcurrencyDebugging.isOnMainQueue {
            MainActor.assumeIsolated { deliver(carried.value.0, carried.value.1, carried.value.2) }
        } else if offMainQueue == .deliverLater {
            DispatchQueue.main.async {
                MainActor.assumeIsolated { deliver(carried.value.0, carried.value.1, carried.value.2) }
            }
        }
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
        guard !foundationBridgesNotifications, let message = make(notification) else { return }
        NotificationCenter.default.post(message, subject: subject)
    }
}
