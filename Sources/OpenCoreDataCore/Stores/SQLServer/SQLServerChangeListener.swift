import Foundation

/// Hears every save to a server store, from any coordinator on any machine, and posts
/// `NSPersistentStoreRemoteChange` for its coordinator.
///
/// Each save sends a notice on the store's channel in its transaction (delivered when it commits,
/// never for a rolled-back save): the objects it inserted, updated and deleted, as
/// `<entity number>.<Z_PK>` lists (`SQLServerChangeNotice`). The listener keeps a connection of its
/// own that `LISTEN`s on the channel. A dropped connection is opened again (after 0.1 s, then
/// waits growing to 2 s between tries); notices sent meanwhile are lost.
///
/// When the store keeps persistent history, each notice carries its transaction's number, which
/// the notification carries as `NSPersistentHistoryTokenKey`. The listener remembers the last
/// number it posted; a notice that skips numbers, one too large to list its objects, or a
/// reconnection makes it read the missed transactions from the history and post one
/// notification for each, in order, so no save is missed. Without history (or when the history it
/// needs was purged) it posts a notification without object IDs, which means "anything may have
/// changed".
///
/// Notifications are posted on a private queue, never on the driver's threads.
/// Unchecked Sendable: mutable state is in `state` (a `LockedValue`); the rest is set in `init`.
final class SQLServerChangeListener: @unchecked Sendable {
    private let connector: SQLServerConnector
    private let url: URL
    private let storeID: String
    let channel: String
    private weak var store: SQLServerStore?
    private weak var coordinator: NSPersistentStoreCoordinator?
    private let queue = DispatchQueue(label: "OpenCoreData.SQLServerChangeListener")
    private let state = LockedValue<State>(State())

    private struct State {
        var connection: (any SQLServerConnection)?
        var stopped = false
        var retryDelay: TimeInterval = 0.1
        /// Tests hold reconnection to save while the listener is down; a drop meanwhile waits here.
        var reconnectionHeld = false
        var reconnectionPending = false
        /// The newest history transaction posted (nil until known, or without history).
        var lastTransaction: Int64?
    }

    init(store: SQLServerStore, url: URL, storeID: String, coordinator: NSPersistentStoreCoordinator) {
        self.connector = store.connector
        self.url = url
        self.storeID = storeID
        self.channel = SQLServerChangeNotice.channel(forStore: storeID)
        self.store = store
        self.coordinator = coordinator
    }

    deinit { stop() }

    /// Connects and listens, then notes the newest history transaction (saves from then on are
    /// posted); throws the connection's error.
    func start() throws {
        try connect()
        guard let newest = try store?.newestHistoryTransactionNumber() else { return }
        state.withLock { $0.lastTransaction = max($0.lastTransaction ?? newest, newest) }
    }

    /// Whether the listening connection is open now.
    var isConnected: Bool { state.withLock { $0.connection != nil } }

    /// While true, a dropped connection is not opened again (tests save while the listener is
    /// down); set back to false, it reconnects.
    var holdsReconnectionForTesting: Bool {
        get { state.withLock { $0.reconnectionHeld } }
        set {
            let pending = state.withLock { state -> Bool in
                state.reconnectionHeld = newValue
                defer { if !newValue { state.reconnectionPending = false } }
                return !newValue && state.reconnectionPending
            }
            if pending { queue.async { self.dropped() } }
        }
    }

    /// Stops listening and closes the connection (again is harmless).
    func stop() {
        let connection = state.withLock { state -> (any SQLServerConnection)? in
            state.stopped = true
            defer { state.connection = nil }
            return state.connection
        }
        connection?.close()
    }

    private func connect() throws {
        let connection = try connector.open(url)
        try connection.listen(channel: channel, onNotification: { [weak self] payload in
            guard let self else { return }
            queue.async { self.received(payload) }
        }, onClose: { [weak self] in
            guard let self else { return }
            queue.async { self.dropped() }
        })
        let keep = state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            state.connection = connection
            state.retryDelay = 0.1
            return true
        }
        if !keep { connection.close() }
    }

    /// The connection ended: unless stopped, connect again and tell observers to catch up.
    private func dropped() {
        let delay = state.withLock { state -> TimeInterval? in
            guard !state.stopped else { return nil }
            state.connection = nil
            if state.reconnectionHeld {
                state.reconnectionPending = true
                return nil
            }
            return state.retryDelay
        }
        guard let delay else { return }
        queue.asyncAfter(deadline: .now() + delay) { [weak self] in
            guard let self, !self.state.withLock({ $0.stopped }) else { return }
            do {
                try connect()
                catchUp()
            } catch {
                CoreDataLog.logger.error("The change listener of \(connector.describe(url)) can't reconnect yet: \(error)")
                state.withLock { $0.retryDelay = min($0.retryDelay * 2, 2) }
                dropped()
            }
        }
    }

    private func received(_ payload: String) {
        guard let store, let notice = SQLServerChangeNotice(payload: payload) else { return }
        guard let number = notice.transaction, store.history != nil else {
            return post(notice.isComplete ? ids(in: notice, of: store) : nil)
        }
        let last = state.withLock { $0.lastTransaction }
        if let last, number <= last { return }  // posted by a catch-up already
        guard last == nil || (number == last! + 1 && notice.isComplete) else { return catchUp() }
        state.withLock { $0.lastTransaction = number }
        post(ids(in: notice, of: store), token: number)
    }

    /// The objects a notice lists; none for this coordinator's own save, which its contexts merge already.
    private func ids(in notice: SQLServerChangeNotice, of store: SQLServerStore) -> ChangedIDs {
        notice.origin == store.instanceID ? ([], [], []) : store.objectIDs(in: notice)
    }

    /// Posts every history transaction after the last one posted, one notification each; without
    /// history, or when it can't be read, one notification without object IDs.
    private func catchUp() {
        guard let store, let history = store.history, let last = state.withLock({ $0.lastTransaction }) else { return post(nil) }
        do {
            for transaction in try store.transactions(after: .afterTransaction(storeID: storeID, number: last), history: history) {
                let changes = transaction.changes ?? []
                func objects(_ type: NSPersistentHistoryChangeType) -> [NSManagedObjectID] {
                    changes.filter { $0.changeType == type }.map(\.changedObjectID)
                }
                state.withLock { $0.lastTransaction = transaction.transactionNumber }
                post((objects(.insert), objects(.update), objects(.delete)), token: transaction.transactionNumber)
            }
        } catch {
            CoreDataLog.logger.error("The change listener of \(connector.describe(url)) can't read the history it missed: \(error)")
            post(nil)
        }
    }

    /// What one notification lists.
    private typealias ChangedIDs = (inserted: [NSManagedObjectID], updated: [NSManagedObjectID], deleted: [NSManagedObjectID])

    /// Posts the notification: with the saved objects' IDs under `NSInsertedObjectsKey`,
    /// `NSUpdatedObjectsKey` and `NSDeletedObjectsKey` when known, and the history token of its
    /// transaction under `NSPersistentHistoryTokenKey`.
    private func post(_ ids: ChangedIDs?, token: Int64? = nil) {
        guard let coordinator, !state.withLock({ $0.stopped }) else { return }
        var userInfo: [AnyHashable: Any] = [NSStoreUUIDKey: storeID, NSPersistentStoreURLKey: url]
        if let ids {
            userInfo[NSInsertedObjectsKey] = ids.inserted
            userInfo[NSUpdatedObjectsKey] = ids.updated
            userInfo[NSDeletedObjectsKey] = ids.deleted
        }
        if let token { userInfo[NSPersistentHistoryTokenKey] = NSPersistentHistoryToken(transactionNumbers: [storeID: token]) }
        coordinator.postCoordinatorNotification(.NSPersistentStoreRemoteChange, userInfo: userInfo)
    }
}

/// What one save changed, as sent on a server store's channel: `o:1A2B3C4D5E6F;t:42;i:3.17,3.18;u:5.2;d:`
/// (the saving store's `instanceID`, its history transaction's number when the store keeps
/// history, then entity number and `Z_PK` of each inserted, updated and deleted object). A save
/// too large for one notice (PostgreSQL's limit is 8,000 bytes) sends `o:…;t:42;*`: its objects
/// are in the history, or, without history, everything may have changed.
struct SQLServerChangeNotice: Equatable {
    /// The `instanceID` of the store that saved.
    var origin = ""
    /// The save's history transaction number, when the store keeps history.
    var transaction: Int64?
    /// One object: its entity number and `Z_PK`.
    typealias Item = (entity: Int, key: Int64)
    var inserted: [Item] = []
    var updated: [Item] = []
    var deleted: [Item] = []
    /// False for `*`: the save's objects aren't listed.
    var isComplete = true

    /// The longest payload sent; longer ones become `*`.
    static let payloadLimit = 7_900

    /// The channel of a store: its identifier, as a lower-case identifier.
    static func channel(forStore identifier: String) -> String {
        "ocd_" + identifier.lowercased().filter { $0.isLetter || $0.isNumber }
    }

    init(origin: String, inserted: [Item], updated: [Item], deleted: [Item]) {
        self.origin = origin
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
    }

    init?(payload: String) {
        for part in payload.split(separator: ";", omittingEmptySubsequences: true) {
            if part == "*" {
                isComplete = false
                continue
            }
            if part.hasPrefix("o:") {
                origin = String(part.dropFirst(2))
                continue
            }
            if part.hasPrefix("t:") {
                guard let number = Int64(part.dropFirst(2)) else { return nil }
                transaction = number
                continue
            }
            guard part.count >= 2, part.dropFirst().first == ":" else { return nil }
            var items: [Item] = []
            for item in part.dropFirst(2).split(separator: ",") {
                let pieces = item.split(separator: ".")
                guard pieces.count == 2, let entity = Int(pieces[0]), let key = Int64(pieces[1]) else { return nil }
                items.append((entity, key))
            }
            switch part.first {
            case "i": inserted = items
            case "u": updated = items
            case "d": deleted = items
            default: return nil
            }
        }
    }

    /// The payload to send: the lists, or `*` when they don't fit.
    var payload: String {
        let head = "o:\(origin);" + (transaction.map { "t:\($0);" } ?? "")
        let everything = head + "*"
        guard isComplete else { return everything }
        func list(_ items: [Item]) -> String { items.map { "\($0.entity).\($0.key)" }.joined(separator: ",") }
        let text = head + "i:\(list(inserted));u:\(list(updated));d:\(list(deleted))"
        return text.utf8.count <= Self.payloadLimit ? text : everything
    }

    static func == (lhs: Self, rhs: Self) -> Bool { lhs.payload == rhs.payload }
}
