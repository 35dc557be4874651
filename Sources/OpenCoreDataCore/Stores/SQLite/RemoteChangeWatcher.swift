import Foundation
import GRDB

/// Notices commits to a SQLite store file by any connection (another process, another
/// coordinator, or the store's own saves) and posts `NSPersistentStoreRemoteChange`.
///
/// It polls `PRAGMA data_version` on a read-only connection of its own, on a private queue, at a
/// fixed interval; the value changes whenever another connection commits. Stopping it (when the
/// store is removed or closed, or its coordinator goes away) cancels the timer and closes the
/// connection; no thread is kept.
/// Unchecked Sendable: mutable state is in `state` (a `LockedValue`); `coordinator` is set only in `init`.
final class RemoteChangeWatcher: @unchecked Sendable {
    /// The default polling interval, in seconds.
    static let defaultInterval: TimeInterval = 0.05

    private let url: URL
    private let storeID: String
    private let tracksHistory: Bool
    private weak var coordinator: NSPersistentStoreCoordinator?
    private let queue = DispatchQueue(label: "OpenCoreData.RemoteChangeWatcher")
    private let state = LockedValue<State>(State())

    private struct State {
        var timer: DispatchSourceTimer?
        var reader: DatabaseQueue?
        var lastVersion: Int?
        var stopped = false
    }

    init(url: URL, storeID: String, tracksHistory: Bool, coordinator: NSPersistentStoreCoordinator) {
        self.url = url
        self.storeID = storeID
        self.tracksHistory = tracksHistory
        self.coordinator = coordinator
    }

    deinit {
        stop()
    }

    /// Opens the watcher's connection and starts polling.
    func start(interval: TimeInterval) throws {
        var configuration = Configuration()
        configuration.readonly = true
        configuration.label = "OpenCoreData.RemoteChangeWatcher"
        configuration.busyMode = .timeout(1)
        let reader = try DatabaseQueue(path: url.path, configuration: configuration)
        let version = try reader.inDatabase { db in try Int.fetchOne(db, sql: "PRAGMA data_version") }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        let nanoseconds = max(Int(interval * 1_000_000_000), 1_000_000)
        timer.schedule(deadline: .now() + .nanoseconds(nanoseconds), repeating: .nanoseconds(nanoseconds), leeway: .nanoseconds(nanoseconds / 10))
        timer.setEventHandler { [weak self] in self?.poll() }
        state.withLock { state in
            state.reader = reader
            state.lastVersion = version
            state.timer = timer
        }
        timer.resume()
    }

    /// Stops polling and closes the connection. Safe to call more than once, from any thread.
    func stop() {
        let (timer, reader) = state.withLock { state -> (DispatchSourceTimer?, DatabaseQueue?) in
            state.stopped = true
            defer { state.timer = nil; state.reader = nil }
            return (state.timer, state.reader)
        }
        timer?.cancel()
        // Ignored: closing the watcher's read-only connection; nothing is written.
        if let reader { queue.async { try? reader.close() } }
    }

    /// One poll: posts when the file's data version moved since the last one.
    private func poll() {
        guard let coordinator else { stop(); return }
        guard let reader = state.withLock({ $0.stopped ? nil : $0.reader }) else { return }
        // Ignored: a failed poll (file busy or replaced) is retried at the next tick, which sees the same change.
        let observed: (version: Int, token: NSPersistentHistoryToken?)? = try? reader.inDatabase { db in
            guard let version = try Int.fetchOne(db, sql: "PRAGMA data_version") else { return nil }
            var token: NSPersistentHistoryToken?
            if tracksHistory {
                token = NSPersistentHistoryToken(transactionNumbers: [storeID: try SQLiteHistory.newestTransactionNumber(db)])
            }
            return (version, token)
        }
        guard let observed else { return }
        let changed = state.withLock { state -> Bool in
            guard !state.stopped, state.lastVersion != observed.version else { return false }
            state.lastVersion = observed.version
            return true
        }
        guard changed else { return }
        var userInfo: [AnyHashable: Any] = [NSStoreUUIDKey: storeID, NSPersistentStoreURLKey: url]
        if let token = observed.token { userInfo[NSPersistentHistoryTokenKey] = token }
        coordinator.postCoordinatorNotification(.NSPersistentStoreRemoteChange, userInfo: userInfo)
    }
}
