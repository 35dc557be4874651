/// The rows of one fetch from the parent, in order, kept in chunks of at most `chunkCapacity`.
///
/// A fetch of many rows holds all of them at once only until the context has made their objects:
/// `consume(_:)` hands the rows over in order and frees each chunk as soon as it is passed, so the
/// memory of the rows is reused for the objects instead of adding to the fetch's peak (at 48 bytes
/// a row, a million rows would otherwise hold 48 MB beside their objects).
///
/// Invariant: `count` is the number of rows in `chunks` and `current`; `current` holds the last
/// rows appended, after every row of `chunks`.
struct FetchedRows {
    /// Rows per chunk: small enough that a freed chunk goes back to the allocator's free lists
    /// (below its threshold for mapping pages), where the objects made next find it.
    static let chunkCapacity = 1024

    /// Chunks before `current`, in order.
    private var chunks: [[FetchedRow]] = []
    /// The chunk rows are appended to.
    private var current: [FetchedRow] = []
    /// The number of rows.
    private(set) var count = 0

    /// No rows.
    init() {}

    /// The rows of a sequence, in its order (a lazy one is read into chunks as it goes).
    init<Rows: Sequence<FetchedRow>>(_ rows: Rows) {
        for row in rows { append(row) }
    }

    /// Whether there are no rows.
    var isEmpty: Bool { count == 0 }

    /// The first row, if any.
    var first: FetchedRow? { chunks.first?.first ?? current.first }

    /// The last row, if any.
    var last: FetchedRow? { current.last ?? chunks.last?.last }

    /// Appends a row after the others.
    @inline(__always)
    mutating func append(_ row: FetchedRow) {
        if current.count == Self.chunkCapacity { startChunk() }
        current.append(row)
        count += 1
    }

    /// Moves the full current chunk to `chunks` and starts an empty one with room for a chunk.
    @inline(never)
    private mutating func startChunk() {
        chunks.append(current)
        current = []
        current.reserveCapacity(Self.chunkCapacity)
    }

    /// Appends the rows of another fetch after these.
    mutating func append(contentsOf other: FetchedRows) {
        guard !other.isEmpty else { return }
        if !current.isEmpty { chunks.append(current) }
        chunks += other.chunks
        current = other.current
        count += other.count
    }

    /// Calls `body` with every row in order, leaving no rows: each chunk is freed once passed.
    /// Each row is lent where it lies, valid only during its call: a reader of its plain fields
    /// (`batchReference`, `primaryKey`, …) copies nothing, where a copy of the row would retain
    /// and release its references.
    mutating func consume(_ body: (UnsafePointer<FetchedRow>) throws -> Void) rethrows {
        var pending = chunks
        pending.append(current)
        self = FetchedRows()
        for index in pending.indices {
            let chunk = pending[index]
            pending[index] = []
            try chunk.withUnsafeBufferPointer { rows in
                guard let first = rows.baseAddress else { return }
                for position in rows.indices { try body(first + position) }
            }
        }
    }
}
