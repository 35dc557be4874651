import Foundation

/// A run of rows of sorted results: each row's key and its value for each sort descriptor.
///
/// Invariant: `columns[c].count == keys.count` for every column.
struct SortedRowsChunk {
    var keys = ContiguousArray<Int64>()
    var columns: [SortValueColumn]

    init(kinds: [SortValue.Kind], capacity: Int) {
        keys.reserveCapacity(capacity)
        columns = kinds.map { kind in
            var column = SortValueColumn(kind: kind)
            column.reserveCapacity(capacity)
            return column
        }
    }

    /// An empty chunk for `capacity` rows whose string columns reserve, per row, the bytes a
    /// row of `previous` took and a sixteenth more: consecutive rows of one fetch are alike, and a
    /// fixed guess either wastes room or doubles the buffer.
    init(kinds: [SortValue.Kind], capacity: Int, following previous: borrowing SortedRowsChunk) {
        keys.reserveCapacity(capacity)
        columns = kinds.indices.map { index in
            var column = SortValueColumn(kind: kinds[index])
            let perRow = previous.columns[index].stringBytesPerRow.map { $0 + $0 / 16 + 1 } ?? 16
            column.reserveCapacity(capacity, bytesPerRow: perRow)
            return column
        }
    }

    /// Gives back the string columns' unused room, once the chunk is filled.
    mutating func trimExcessCapacity() {
        for index in columns.indices { columns[index].trimExcessCapacity() }
    }

    private init(keys: ContiguousArray<Int64>, columns: [SortValueColumn]) {
        self.keys = keys
        self.columns = columns
    }

    var count: Int { keys.count }

    /// The address of column `index`, to read it in place; valid while the chunk is neither
    /// mutated nor freed (the caller holds it).
    @inline(__always)
    func columnAddress(_ index: Int) -> UnsafePointer<SortValueColumn> {
        columns.withUnsafeBufferPointer { $0.baseAddress.unsafelyUnwrapped + index }
    }

    /// A run of rows to copy: a range of the first chunk or of the second.
    struct Segment {
        let fromSecond: Bool
        let range: Range<Int>
    }

    /// A chunk of the given runs of rows of two chunks with the same columns, in order; each
    /// column is filled in one pass.
    init(kinds: [SortValue.Kind], segments: [Segment], of first: borrowing SortedRowsChunk, _ second: borrowing SortedRowsChunk) {
        keys = .gathering(segments, from: first.keys, second.keys)
        columns = kinds.indices.map { column in
            SortValueColumn(kind: kinds[column], segments: segments, of: first.columns[column], second.columns[column])
        }
    }

    /// Inserts row `row` of another chunk with the same columns at `index`.
    mutating func insert(row: Int, of other: SortedRowsChunk, at index: Int) {
        keys.insert(other.keys[row], at: index)
        for column in columns.indices { columns[column].insert(other.columns[column][row], at: index) }
    }

    /// Moves the rows from `index` on into a new chunk.
    mutating func split(at index: Int) -> SortedRowsChunk {
        let tailKeys = ContiguousArray(keys[index...])
        keys.removeSubrange(index...)
        var tailColumns: [SortValueColumn] = []
        for column in columns.indices { tailColumns.append(columns[column].split(at: index)) }
        return SortedRowsChunk(keys: tailKeys, columns: tailColumns)
    }
}

/// The results of a sorted fetch in columnar form: row keys in order, with sort values and the
/// section runs, read without making an object or an object ID per row.
///
/// A row key is the row's primary key; for a row of another entity (a subentity of the fetched
/// entity) or another store, the index of its origin in `origins` (which starts with the fetched
/// entity in the first store) is added above bit 40. Unsaved objects have negative keys (their
/// temporary IDs' numbers).
struct SortedRows {
    /// Where rows come from: an entity in a store.
    struct Origin {
        let entity: NSEntityDescription
        let store: NSPersistentStore
    }

    static let entityShift: Int64 = 40
    static let primaryKeyMask: Int64 = (1 << 40) - 1

    var chunks: [SortedRowsChunk] = []
    /// Consecutive sections: name and number of rows.
    var sections: [(name: String, count: Int)] = []
    /// The origins of the rows' keys, the fetched entity in the first store first.
    var origins: [Origin] = []
    var count: Int { chunks.reduce(0) { $0 + $1.count } }

    /// Rows are filled into `chunk` until it holds `capacity`; then this keeps it (trimmed) and
    /// gives `chunk` a fresh one that follows it. Call after each row; `keepLast` at the end.
    @inline(__always)
    mutating func keepIfFull(_ chunk: inout SortedRowsChunk, kinds: [SortValue.Kind], capacity: Int) {
        guard chunk.count == capacity else { return }
        chunk.trimExcessCapacity()
        chunks.append(chunk)
        chunk = SortedRowsChunk(kinds: kinds, capacity: capacity, following: chunks[chunks.count - 1])
    }

    /// Keeps the last chunk filled by `keepIfFull`'s caller (an empty one only if it is the only one).
    mutating func keepLast(_ chunk: inout SortedRowsChunk) {
        chunk.trimExcessCapacity()
        if chunk.count > 0 || chunks.isEmpty { chunks.append(chunk) }
    }

    /// The primary key of a row key.
    @inline(__always)
    static func primaryKey(of key: Int64) -> Int64 { key >= 0 ? key & primaryKeyMask : key }

    /// The origin index of a row key.
    @inline(__always)
    static func originIndex(of key: Int64) -> Int { key >= 0 ? Int(key >> entityShift) : 0 }

    /// A row key from a primary key and an origin index.
    @inline(__always)
    static func key(primaryKey: Int64, origin: Int) -> Int64 { origin == 0 ? primaryKey : primaryKey | (Int64(origin) << entityShift) }

    /// The order of two keys whose sort values are equal: primary keys ascending, unsaved
    /// (negative, temporary) ones after all saved ones, oldest first.
    @inline(__always)
    static func tieRank(_ key: Int64) -> Int64 { key >= 0 ? key & primaryKeyMask : (Int64.max / 2) &- key }

    /// Puts each run of rows with equal sort values in `tieRank` order of their keys, for rows read
    /// sorted without a tie-break; every column must be numeric (integer or double), where equal
    /// means exactly equal. Only keys move (the values of a run are the same). One pass when the
    /// ties are in order already, as they usually are.
    mutating func orderNumericTiesByKey() {
        // A first pass looks for a tie out of order, column by column within each chunk, then
        // across each chunk boundary.
        var equalToPrevious = [Bool]()
        var outOfOrder = false
        for chunk in chunks.indices where !outOfOrder {
            let count = chunks[chunk].keys.count
            equalToPrevious.removeAll(keepingCapacity: true)
            equalToPrevious.append(contentsOf: repeatElement(true, count: count))
            equalToPrevious.withUnsafeMutableBufferPointer { equal in
                for column in chunks[chunk].columns {
                    column.markRowsEqualToPrevious(&equal)
                }
                chunks[chunk].keys.withUnsafeBufferPointer { keys in
                    for row in 1..<max(count, 1) where equal[row] && Self.tieRank(keys[row]) < Self.tieRank(keys[row - 1]) {
                        outOfOrder = true
                        return
                    }
                }
            }
            if chunk > 0, count > 0, let last = chunks[chunk - 1].keys.last,
               numericValuesEqual((chunk - 1, chunks[chunk - 1].count - 1), (chunk, 0)), Self.tieRank(chunks[chunk].keys[0]) < Self.tieRank(last) {
                outOfOrder = true
            }
        }
        guard outOfOrder else { return }
        // Each row's place as (chunk, row), in order, then each run of equal values sorted by key.
        let places = chunks.indices.flatMap { chunk in chunks[chunk].keys.indices.map { (chunk: chunk, row: $0) } }
        var start = 0
        while start < places.count {
            var end = start + 1
            while end < places.count && numericValuesEqual(places[start], places[end]) { end += 1 }
            if end - start > 1 {
                let keys = places[start..<end].map { chunks[$0.chunk].keys[$0.row] }.sorted { Self.tieRank($0) < Self.tieRank($1) }
                for (place, key) in zip(places[start..<end], keys) { chunks[place.chunk].keys[place.row] = key }
            }
            start = end
        }
    }

    /// Whether two rows' numeric sort values are all equal (NULL equals NULL).
    private func numericValuesEqual(_ first: (chunk: Int, row: Int), _ second: (chunk: Int, row: Int)) -> Bool {
        chunks[first.chunk].columns.indices.allSatisfy { column in
            chunks[first.chunk].columns[column].hasNumericValue(at: first.row, equalTo: chunks[second.chunk].columns[column], at: second.row)
        }
    }
}

/// Section runs built row by row: consecutive rows with one name form a section; a name that
/// comes back after another is out of order (134060).
struct SectionRuns {
    private(set) var runs: [(name: String, count: Int)] = []
    private var seen: Set<String> = []

    /// Adds a row with a section name (`row` is its index, for the error).
    mutating func append(_ name: String, row: Int) throws {
        if runs.last?.name == name {
            runs[runs.count - 1].count += 1
            return
        }
        guard seen.insert(name).inserted else { throw SectionNaming.outOfOrderError(index: row, name: name) }
        runs.append((name, 1))
    }

    /// Adds a row known to have the previous row's name.
    mutating func repeatLast() {
        runs[runs.count - 1].count += 1
    }
}

/// How section names come from values, for every path that computes them.
enum SectionNaming {
    /// A section key path's value as a section name: "" for nil, strings as they are, other values
    /// as they print.
    static func name(from value: Any?) -> String {
        switch value {
        case nil, is NSNull: return ""
        case let string as String: return string
        case let value?: return "\(value)"
        }
    }

    /// Core Data's error for results whose section names are not grouped by the sort (134060).
    static func outOfOrderError(index: Int, name: String) -> NSError {
        CoreDataError.make(.coreData, "The fetched object at index \(index) has an out of order section name '\(name)'. Objects must be sorted by section name.",
                           userInfo: ["index": index, "sectionName": name])
    }
}
