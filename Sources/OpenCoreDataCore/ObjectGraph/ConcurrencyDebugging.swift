import Foundation

/// Core Data's concurrency debugging: with `-com.apple.CoreData.ConcurrencyDebug 1` among a
/// process's launch arguments (as in an Xcode scheme), or `OPENCOREDATA_CONCURRENCY_DEBUG=1` in
/// its environment, every use of a context, of its objects or of a fetched results controller
/// off the context's queue traps, with a message naming the queue expected.
///
/// "On the context's queue" means:
/// - inside a `perform` or `performAndWait` block of the context (or of a context whose block
///   called this one's `performAndWait`, which runs on the calling thread);
/// - for a private-queue context, any code running on its queue;
/// - for a main-queue context, the main queue (and the main actor), or the main thread;
/// - for a confinement context (deprecated by Apple), the thread that created it.
///
/// The setting is read once, when the first context is created. Off, it costs one load and
/// branch on each checked path, on a flag that is never written.
enum ConcurrencyDebugging {
    /// The level requested by the launch argument or the environment variable (0: off).
    static let requestedLevel = CoreDataLog.launchLevel(argument: "-com.apple.CoreData.ConcurrencyDebug",
                                                        environment: "OPENCOREDATA_CONCURRENCY_DEBUG", unreadable: 0)

    /// Reads the setting; called by every context's initializer, before the context or any of
    /// its objects exists, so the flag below is set before anything reads it for them.
    static func enableIfRequested() {
        if requestedLevel > 0, !concurrencyChecksEnabled {
            _ = markMainQueue
            concurrencyChecksEnabled = true
        }
    }

    /// Marks the main queue, so that code running on it is recognized on whatever thread runs
    /// it: on Linux, once the main thread calls `dispatchMain()` (as Swift's async `main` and the
    /// test runners do), a worker thread drains the main queue and the main actor's jobs.
    private static let markMainQueue: Void = DispatchQueue.main.setSpecific(key: mainQueueKey, value: true)
    static let mainQueueKey = DispatchSpecificKey<Bool>()

    /// Whether the caller runs on the main queue or on the main thread.
    static var isOnMainQueue: Bool {
        _ = markMainQueue
        return Thread.isMainThread || DispatchQueue.getSpecific(key: mainQueueKey) == true
    }

    /// Traps: `what` was used on a thread that is not the context's queue.
    static func violation(_ what: @autoclosure () -> String, context: NSManagedObjectContext) -> Never {
        let name = context.name.map { " \"\($0)\"" } ?? ""
        let expected: String
        switch context.concurrencyType {
        case .privateQueueConcurrencyType:
            expected = "its private queue: call it inside the context's perform or performAndWait block"
        case .mainQueueConcurrencyType:
            expected = "the main thread: call it on the main thread (the main actor) or inside the context's perform or performAndWait block"
        case .confinementConcurrencyType:
            expected = "the thread that created it (a confinement context)"
        }
        fatalError("CoreData concurrency violation: \(what()) used the context\(name) (\(context.concurrencyType)) off its queue; it belongs to \(expected). (Checked because of -com.apple.CoreData.ConcurrencyDebug or OPENCOREDATA_CONCURRENCY_DEBUG.)")
    }
}

/// Whether concurrency debugging is on in this process. Written at most once, from false to
/// true, before the first context exists; constant-initialized, so reading it is one load.
nonisolated(unsafe) var concurrencyChecksEnabled = false

/// The chain of contexts whose `perform` or `performAndWait` blocks are running on a thread,
/// innermost first, kept in the thread's dictionary.
final class PerformingContext {
    /// The context whose block runs, through the context's `link` (no weak reference per block).
    private let link: WeakContext
    /// The block this one runs inside, on the same thread.
    let outer: PerformingContext?

    init(context: NSManagedObjectContext, outer: PerformingContext?) {
        self.link = context.link
        self.outer = outer
    }

    /// The context whose block runs; nil once it is freed.
    var context: NSManagedObjectContext? { link.context }

    /// Whether `context` is this one or an outer one (compared by link: no weak load).
    func contains(_ context: NSManagedObjectContext) -> Bool {
        var block: PerformingContext? = self
        while let current = block {
            if current.link === context.link { return true }
            block = current.outer
        }
        return false
    }
}

extension NSManagedObjectContext {
    /// Traps, when concurrency debugging is on, unless the caller runs on the context's queue.
    /// `what` names the call in the message.
    @inline(__always)
    func checkQueue(_ what: @autoclosure () -> String) {
        if concurrencyChecksEnabled, !isOnOwnQueue { ConcurrencyDebugging.violation(what(), context: self) }
    }

    /// Whether the current thread is the context's queue (see `ConcurrencyDebugging`).
    var isOnOwnQueue: Bool {
        switch concurrencyType {
        case .privateQueueConcurrencyType:
            if isRunningOnPrivateQueue { return true }
        case .mainQueueConcurrencyType:
            if ConcurrencyDebugging.isOnMainQueue { return true }
        case .confinementConcurrencyType:
            if let creator = creatingThread, pthread_equal(creator, pthread_self()) != 0 { return true }
        }
        return Self.performingChain?.contains(self) ?? false
    }
}

extension NSManagedObject {
    /// Traps, when concurrency debugging is on, unless the caller runs on the queue of the
    /// object's context (an object outside any context is not checked).
    @inline(__always)
    final func checkContextQueue(_ what: @autoclosure () -> String) {
        if concurrencyChecksEnabled { checkContextQueueSlowly(what()) }
    }

    @inline(never)
    private final func checkContextQueueSlowly(_ what: String) {
        guard let context = managedObjectContext, !context.isOnOwnQueue else { return }
        ConcurrencyDebugging.violation("\(what) of \(objectID)", context: context)
    }
}
