import Foundation

/// The connections a server store reads through, so that fetches and faults from several contexts
/// of one coordinator run at once: opened when needed, at most `size`, each used by one thread at
/// a time. A thread that finds them all busy waits for one. (The store's own connection writes:
/// saves, migrations and held writes.)
///
/// Unchecked Sendable: mutable state is guarded by `condition`.
final class SQLServerConnectionPool: @unchecked Sendable {
    private let open: () throws -> any SQLServerConnection
    private let size: Int
    private let condition = NSCondition()
    private var idle: [any SQLServerConnection] = []
    private var opened = 0
    private var closed = false
    private let closedError: () -> NSError

    /// A pool of at most `size` connections made by `open`; `closedError` is thrown once it is closed.
    init(size: Int, open: @escaping () throws -> any SQLServerConnection, closedError: @escaping () -> NSError) {
        self.size = max(1, size)
        self.open = open
        self.closedError = closedError
    }

    /// Runs `body` with a connection of the pool, given back afterwards (closed instead if the
    /// pool was closed meanwhile, or dropped if the connection has ended).
    func with<T>(_ body: (any SQLServerConnection) throws -> T) throws -> T {
        let connection = try checkOut()
        defer { checkIn(connection) }
        return try body(connection)
    }

    private func checkOut() throws -> any SQLServerConnection {
        condition.lock()
        while idle.isEmpty && opened >= size && !closed { condition.wait() }
        if closed {
            condition.unlock()
            throw closedError()
        }
        while let connection = idle.popLast() {
            if connection.isClosed {
                opened -= 1
                continue
            }
            condition.unlock()
            return connection
        }
        opened += 1
        condition.unlock()
        do {
            return try open()
        } catch {
            condition.lock()
            opened -= 1
            condition.signal()
            condition.unlock()
            throw error
        }
    }

    private func checkIn(_ connection: any SQLServerConnection) {
        condition.lock()
        let keep = !closed && !connection.isClosed
        if keep { idle.append(connection) } else { opened -= 1 }
        condition.signal()
        condition.unlock()
        if !keep { connection.close() }
    }

    /// Closes the idle connections now and the others as they come back; using the pool afterwards throws.
    func close() {
        condition.lock()
        closed = true
        let connections = idle
        idle = []
        opened -= connections.count
        condition.broadcast()
        condition.unlock()
        for connection in connections { connection.close() }
    }
}
