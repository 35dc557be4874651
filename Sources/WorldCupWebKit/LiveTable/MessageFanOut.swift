import Foundation

/// Hands every message to each subscriber's stream, in the order `send` is called. Subscribers
/// are added and messages sent on the table's context queue, so a new page's first message (the
/// whole table) and the batches after it never overlap or leave a gap.
/// Unchecked Sendable: `subscribers` is guarded by `lock`.
final class MessageFanOut: @unchecked Sendable {
    private let lock = NSLock()
    private var subscribers: [UUID: AsyncStream<TableMessage>.Continuation] = [:]

    /// A new subscriber's stream, starting with `first`; it ends when the consumer stops.
    func subscribe(startingWith first: TableMessage) -> AsyncStream<TableMessage> {
        let (stream, continuation) = AsyncStream<TableMessage>.makeStream(bufferingPolicy: .unbounded)
        let id = UUID()
        continuation.yield(first)
        continuation.onTermination = { [weak self] _ in self?.remove(id) }
        lock.withLock { subscribers[id] = continuation }
        return stream
    }

    /// Sends a message to every current subscriber.
    func send(_ message: TableMessage) {
        for continuation in lock.withLock({ Array(subscribers.values) }) { continuation.yield(message) }
    }

    /// How many subscribers are connected.
    var count: Int { lock.withLock { subscribers.count } }

    /// Ends every subscriber's stream.
    func finishAll() {
        for continuation in lock.withLock({ Array(subscribers.values) }) { continuation.finish() }
    }

    private func remove(_ id: UUID) {
        _ = lock.withLock { subscribers.removeValue(forKey: id) }
    }
}
