import Foundation

/// The string values of one sort key for consecutive rows, kept as UTF-8 bytes in one buffer:
/// no `String` (and no allocation) per row.
///
/// A fetched results controller holds a sort value for every row it indexes; a million names as
/// Swift strings cost a heap allocation each beyond 15 bytes. Here a row costs its bytes and one
/// 4-byte end offset, and rows compare byte by byte (`compare:`, SQLite's `BINARY`) in place.
///
/// Rows that repeat a few values (a key the rows are sorted by first, such as a section key, holds
/// one value for thousands of rows) are kept as **shared values**: each run's value once in
/// `bytes` and `ends`, and one byte a row naming it in `valueOfRow`. `trimExcessCapacity()` shares
/// a filled column's values when that takes less room; a gather keeps them shared.
///
/// Invariant: `ends` holds one entry per value, nondecreasing once `nullFlag` is masked off, the
/// last equal to `bytes.count`; value `v`'s bytes are `bytes[end(v - 1)..<end(v)]`, and a NULL
/// value has `nullFlag` set and no bytes. `valueOfRow` is empty (one value per row, in row order)
/// or has one entry per row, each less than `ends.count` (at most `sharedValueLimit` values).
struct UTF8Column {
    private(set) var bytes = ContiguousArray<UInt8>()
    private(set) var ends = ContiguousArray<UInt32>()
    /// Empty, or the index of each row's value in `ends` (a column of shared values).
    private(set) var valueOfRow = ContiguousArray<UInt8>()
    /// Marks a NULL value in `ends`.
    static let nullFlag: UInt32 = 1 << 31
    /// The most values a column of shared values holds: a row names its value in a byte.
    static let sharedValueLimit = 256

    init() {}

    /// The number of rows.
    var count: Int { valueOfRow.isEmpty ? ends.count : valueOfRow.count }

    /// Whether rows name shared values (see the type's documentation) rather than hold one each.
    var sharesValues: Bool { !valueOfRow.isEmpty }

    /// The index in `ends` of row `row`'s value.
    @inline(__always)
    func value(ofRow row: Int) -> Int { valueOfRow.isEmpty ? row : Int(valueOfRow[row]) }

    /// Reserves room for `rows` more rows of `bytesPerRow` bytes each (one value per row).
    mutating func reserveCapacity(_ rows: Int, bytesPerRow: Int = 16) {
        makeOneValuePerRow()
        ends.reserveCapacity(count + rows)
        bytes.reserveCapacity(bytes.count + rows * bytesPerRow)
    }

    /// The bytes a value has taken so far, rounded up; nil for a column without rows.
    var bytesPerRow: Int? {
        ends.isEmpty ? nil : (bytes.count + ends.count - 1) / ends.count
    }

    /// Shares the values of a filled column when that takes less room (see the type's
    /// documentation), or else gives back the byte buffer's room beyond an eighth of its bytes. A
    /// column kept for the life of a controller shouldn't keep the doubling of its last growth (a
    /// million names of 24 bytes grown from a 16-byte guess would keep 8 MB unused).
    mutating func trimExcessCapacity() {
        if shareRepeatedValues() { return }
        guard bytes.capacity > bytes.count + bytes.count / 8 + 64 else { return }
        bytes = ContiguousArray(unsafeUninitializedCapacity: bytes.count) { buffer, initialized in
            _ = bytes.withUnsafeBufferPointer { buffer.initialize(fromContentsOf: $0) }
            initialized = bytes.count
        }
    }

    /// Where value `value`'s bytes start (`bytes.count` for `value == ends.count`).
    @inline(__always)
    private func start(of value: Int) -> Int { value == 0 ? 0 : end(of: value - 1) }

    @inline(__always)
    private func end(of value: Int) -> Int { Int(ends[value] & ~Self.nullFlag) }

    @inline(__always)
    private func valueIsNull(_ value: Int) -> Bool { ends[value] & Self.nullFlag != 0 }

    /// Whether row `row` is NULL.
    @inline(__always)
    func isNull(_ row: Int) -> Bool { valueIsNull(value(ofRow: row)) }

    /// Appends a row's UTF-8 bytes.
    @inline(__always)
    mutating func append(_ utf8: UnsafeRawBufferPointer) {
        if sharesValues { makeOneValuePerRow() }
        bytes.append(contentsOf: utf8)
        coreDataPrecondition(bytes.count < Int(Self.nullFlag), "A sort column's strings exceed 2 GB.")
        ends.append(UInt32(bytes.count))
    }

    @inline(__always)
    mutating func appendNull() {
        if sharesValues { makeOneValuePerRow() }
        ends.append(UInt32(bytes.count) | Self.nullFlag)
    }

    mutating func append(_ string: String?) {
        guard var string else { return appendNull() }
        string.withUTF8 { append(UnsafeRawBufferPointer($0)) }
    }

    /// The string of row `row`, nil for NULL.
    func string(at row: Int) -> String? {
        guard let bytes = unsafeRow(row) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Inserts a row at `row`. A column of shared values stays one when a neighbouring row holds
    /// the same string or there is room for one more value.
    mutating func insert(_ string: String?, at row: Int) {
        if sharesValues {
            var string = string
            let neighbours = (row > 0 ? value(ofRow: row - 1) : nil, row < count ? value(ofRow: row) : nil)
            let shared = Self.withUTF8(of: &string) { sharedValue(for: $0, reusing: neighbours) }
            if let shared { return valueOfRow.insert(UInt8(shared), at: row) }
            makeOneValuePerRow()
        }
        if row == count { return append(string) }
        let offset = start(of: row)
        let utf8 = Array((string ?? "").utf8)
        bytes.insert(contentsOf: utf8, at: offset)
        let length = UInt32(utf8.count)
        for index in row..<ends.count { ends[index] += length }
        ends.insert((UInt32(offset) + length) | (string == nil ? Self.nullFlag : 0), at: row)
    }

    mutating func remove(at row: Int) {
        if sharesValues {
            valueOfRow.remove(at: row)
            if valueOfRow.isEmpty { self = UTF8Column() }
            return
        }
        let range = start(of: row)..<end(of: row)
        bytes.removeSubrange(range)
        ends.remove(at: row)
        let length = UInt32(range.count)
        for index in row..<ends.count { ends[index] -= length }
    }

    /// Moves the rows from `row` on into a new column.
    mutating func split(at row: Int) -> UTF8Column {
        var tail = UTF8Column()
        if sharesValues {
            if row < count { (tail.bytes, tail.ends, tail.valueOfRow) = (bytes, ends, ContiguousArray(valueOfRow[row...])) }
            valueOfRow.removeSubrange(row...)
            if valueOfRow.isEmpty { self = UTF8Column() }
            return tail
        }
        let offset = start(of: row)
        tail.bytes = ContiguousArray(bytes[offset...])
        tail.ends = ContiguousArray(ends[row...].lazy.map { $0 - UInt32(offset) })
        bytes.removeSubrange(offset...)
        ends.removeSubrange(row...)
        return tail
    }

    /// The same rows with one value each (a copy of a column of shared values; the column itself
    /// otherwise), as a cache stores them.
    func withOneValuePerRow() -> UTF8Column {
        var copy = self
        copy.makeOneValuePerRow()
        return copy
    }

    /// Gives each row its own value again.
    private mutating func makeOneValuePerRow() {
        guard sharesValues else { return }
        var plain = UTF8Column()
        plain.ends.reserveCapacity(count)
        plain.bytes.reserveCapacity(valueOfRow.reduce(0) { $0 + end(of: Int($1)) - start(of: Int($1)) })
        for row in 0..<count {
            if let utf8 = unsafeRow(row) { plain.append(utf8) } else { plain.appendNull() }
        }
        self = plain
    }

    /// Appends a value (not a row) to the values of a column of shared values.
    private mutating func appendValue(_ utf8: UnsafeRawBufferPointer?) {
        if let utf8 { bytes.append(contentsOf: utf8) }
        ends.append(UInt32(bytes.count) | (utf8 == nil ? Self.nullFlag : 0))
    }

    /// The index of a value holding `utf8` in a column of shared values: one of `candidates`
    /// (value indices) when it holds the same bytes, else a value appended for it; nil when the
    /// column has no room for another (`sharedValueLimit`).
    @inline(__always)
    private mutating func sharedValue(for utf8: UnsafeRawBufferPointer?, reusing candidates: (Int?, Int?)) -> Int? {
        if let candidate = candidates.0, Self.same(utf8, unsafeValue(candidate)) { return candidate }
        if let candidate = candidates.1, Self.same(utf8, unsafeValue(candidate)) { return candidate }
        guard ends.count < Self.sharedValueLimit else { return nil }
        appendValue(utf8)
        return ends.count - 1
    }

    /// Calls `body` with a string's UTF-8 bytes (nil for nil).
    private static func withUTF8<Result>(of string: inout String?, _ body: (UnsafeRawBufferPointer?) -> Result) -> Result {
        guard var text = string else { return body(nil) }
        defer { string = text }
        return text.withUTF8 { body(UnsafeRawBufferPointer($0)) }
    }

    /// Whether two values taken by `unsafeRow(_:)` are the same bytes (NULL the same as NULL).
    @inline(__always)
    private static func same(_ value: UnsafeRawBufferPointer?, _ other: UnsafeRawBufferPointer?) -> Bool {
        guard let value, let other else { return value == nil && other == nil }
        return value.count == other.count && (value.count == 0 || memcmp(value.baseAddress!, other.baseAddress!, value.count) == 0)
    }

    /// Keeps each run of equal rows' value once, with a byte a row naming it, when there are no
    /// more runs than `sharedValueLimit` and that takes less room; true when it did. One pass over
    /// the rows, which stops at the first run past the limit (a column of names stops within
    /// its first few hundred rows).
    private mutating func shareRepeatedValues() -> Bool {
        let rows = count
        guard !sharesValues, rows > 1 else { return false }
        var (runs, runBytes) = (1, end(of: 0))
        var previous = unsafeRow(0)
        for row in 1..<rows {
            let current = unsafeRow(row)
            if !Self.same(current, previous) {
                runs += 1
                guard runs <= Self.sharedValueLimit else { return false }
                runBytes += current?.count ?? 0
                previous = current
            }
        }
        // Values and their ends, a byte a row, against bytes and an end a row (and one allocation more).
        guard runBytes + 4 * runs + rows + 32 < bytes.count + 4 * rows else { return false }
        var shared = UTF8Column()
        shared.bytes.reserveCapacity(runBytes)
        shared.ends.reserveCapacity(runs)
        var indices = ContiguousArray<UInt8>()
        indices.reserveCapacity(rows)
        for row in 0..<rows {
            let current = unsafeRow(row)
            if row == 0 || !Self.same(current, previous) {
                shared.appendValue(current)
                previous = current
            }
            indices.append(UInt8(shared.ends.count - 1))
        }
        shared.valueOfRow = indices
        self = shared
        return true
    }

    /// Runs of rows of two columns, in order, copied run by run. The result shares values when
    /// either column does and the values fit (see `gatherSharing`).
    init(segments: [SortedRowsChunk.Segment], of first: UTF8Column, _ second: UTF8Column) {
        if first.sharesValues || second.sharesValues {
            self = Self.gatherSharing(segments, of: first, second)
                ?? UTF8Column(segments: segments, of: first.withOneValuePerRow(), second.withOneValuePerRow())
            return
        }
        self.init()
        (bytes, ends) = first.bytes.withUnsafeBufferPointer { firstBytes in
            second.bytes.withUnsafeBufferPointer { secondBytes in
                first.ends.withUnsafeBufferPointer { firstEnds in
                    second.ends.withUnsafeBufferPointer { secondEnds in
                        Self.gather(segments, from: (firstBytes, firstEnds), (secondBytes, secondEnds))
                    }
                }
            }
        }
    }

    /// The bytes and ends of the runs of rows of two columns, in order. Both buffers are filled
    /// in place, a run at a time: a chunk rebuilt after a save copies every row of it, so the
    /// per-row cost here is what a large save pays.
    private static func gather(_ segments: [SortedRowsChunk.Segment],
                               from first: (bytes: UnsafeBufferPointer<UInt8>, ends: UnsafeBufferPointer<UInt32>),
                               _ second: (bytes: UnsafeBufferPointer<UInt8>, ends: UnsafeBufferPointer<UInt32>))
        -> (ContiguousArray<UInt8>, ContiguousArray<UInt32>) {
        func offset(_ end: UInt32) -> Int { Int(end & ~nullFlag) }
        func bounds(_ range: Range<Int>, _ ends: UnsafeBufferPointer<UInt32>) -> (lower: Int, upper: Int) {
            (range.lowerBound == 0 ? 0 : offset(ends[range.lowerBound - 1]), offset(ends[range.upperBound - 1]))
        }
        var (rowCount, byteCount) = (0, 0)
        for segment in segments where !segment.range.isEmpty {
            let source = segment.fromSecond ? second : first
            assert(segment.range.lowerBound >= 0 && segment.range.upperBound <= source.ends.count, "Segment out of range")
            let (lower, upper) = bounds(segment.range, source.ends)
            rowCount += segment.range.count
            byteCount += upper - lower
        }
        let bytes = ContiguousArray<UInt8>(unsafeUninitializedCapacity: byteCount) { buffer, count in
            var filled = 0
            for segment in segments where !segment.range.isEmpty {
                let source = segment.fromSecond ? second : first
                let (lower, upper) = bounds(segment.range, source.ends)
                guard upper > lower else { continue }
                (buffer.baseAddress! + filled).initialize(from: source.bytes.baseAddress! + lower, count: upper - lower)
                filled += upper - lower
            }
            count = filled
        }
        let ends = ContiguousArray<UInt32>(unsafeUninitializedCapacity: rowCount) { buffer, count in
            var (filled, byteOffset) = (0, 0)
            for segment in segments where !segment.range.isEmpty {
                let source = segment.fromSecond ? second : first
                let (lower, upper) = bounds(segment.range, source.ends)
                // Offsets move by the same amount; the NULL flag (bit 31) rides along unchanged.
                let shift = UInt32(truncatingIfNeeded: byteOffset &- lower)
                // Indexed from two base pointers, so the loop vectorizes.
                let (target, ends) = (buffer.baseAddress! + filled, source.ends.baseAddress! + segment.range.lowerBound)
                for row in 0..<segment.range.count {
                    (target + row).initialize(to: ends[row] &+ shift)
                }
                filled += segment.range.count
                byteOffset += upper - lower
            }
            count = filled
        }
        return (bytes, ends)
    }

    /// The runs of rows of two columns, one of which shares values, as a column of shared values;
    /// nil when they need more than `sharedValueLimit` values. The values of the first column
    /// come first, so its rows' value indices are copied as they are (a chunk merged with a save's
    /// rows copies a byte a row); any other row names the value of the row before it when the
    /// bytes are the same, or a value added for it.
    private static func gatherSharing(_ segments: [SortedRowsChunk.Segment], of first: UTF8Column, _ second: UTF8Column) -> UTF8Column? {
        var result = UTF8Column()
        if first.sharesValues { (result.bytes, result.ends) = (first.bytes, first.ends) }
        let rows = segments.reduce(0) { $0 + $1.range.count }
        guard rows > 0 else { return UTF8Column() }
        var indices = ContiguousArray<UInt8>()
        indices.reserveCapacity(rows)
        for segment in segments where !segment.range.isEmpty {
            if !segment.fromSecond && first.sharesValues {
                indices.append(contentsOf: first.valueOfRow[segment.range])
                continue
            }
            for row in segment.range {
                let utf8 = segment.fromSecond ? second.unsafeRow(row) : first.unsafeRow(row)
                guard let value = result.sharedValue(for: utf8, reusing: (indices.last.map(Int.init), nil)) else { return nil }
                indices.append(UInt8(value))
            }
        }
        result.valueOfRow = indices
        return result
    }

    /// A column read back from its `bytes` and `ends` (a cache); nil when they break the invariant.
    init?(bytes: ContiguousArray<UInt8>, ends: ContiguousArray<UInt32>) {
        var previous = 0
        for end in ends {
            let offset = Int(end & ~Self.nullFlag)
            guard offset >= previous, offset <= bytes.count, end & Self.nullFlag == 0 || offset == previous else { return nil }
            previous = offset
        }
        guard previous == bytes.count else { return nil }
        self.bytes = bytes
        self.ends = ends
    }

    /// The order of row `row` and row `otherRow` of `other` by their bytes (NULL first), as
    /// `compare:` and SQLite's `BINARY` order them.
    @inline(__always)
    func compareBytes(_ row: Int, _ other: borrowing UTF8Column, _ otherRow: Int) -> ComparisonResult {
        compare(row, other, otherRow, by: .binary)
    }

    /// The order of row `row` and row `otherRow` of `other` by a string order (NULL first),
    /// compared in place.
    @inline(__always)
    func compare(_ row: Int, _ other: borrowing UTF8Column, _ otherRow: Int, by order: StringComparison.Order) -> ComparisonResult {
        Self.compare(unsafeRow(row), other.unsafeRow(otherRow), by: order)
    }

    /// Row `row` in place: nil for NULL, else its bytes, valid while the column is neither
    /// mutated nor freed.
    ///
    /// Comparisons take rows so, each in a statement of its own, then compare the addresses: a
    /// column still borrowed across the comparison's call out (memcmp, collation) would be
    /// retained and released around it, in every comparison of a sort.
    @inline(__always)
    func unsafeRow(_ row: Int) -> UnsafeRawBufferPointer? {
        unsafeValue(value(ofRow: row))
    }

    /// Value `value` (an index in `ends`) in place, as `unsafeRow(_:)`.
    @inline(__always)
    private func unsafeValue(_ value: Int) -> UnsafeRawBufferPointer? {
        if valueIsNull(value) { return nil }
        let (lower, upper) = (start(of: value), end(of: value))
        return UnsafeRawBufferPointer(start: bytes.withUnsafeBytes { $0.baseAddress }.map { $0 + lower }, count: upper - lower)
    }

    /// The order of two rows taken by `unsafeRow(_:)` (NULL first).
    @inline(__always)
    static func compare(_ row: UnsafeRawBufferPointer?, _ other: UnsafeRawBufferPointer?, by order: StringComparison.Order) -> ComparisonResult {
        guard let row, let other else { return row == nil ? (other == nil ? .orderedSame : .orderedAscending) : .orderedDescending }
        return order == .binary ? StringComparison.binaryBytes(row, other) : StringComparison.compareUTF8(row, other, by: order)
    }
}
