import Foundation

/// The string values of one sort key for consecutive rows, kept as UTF-8 bytes in one buffer:
/// no `String` (and no allocation) per row.
///
/// A fetched results controller holds a sort value for every row it indexes; a million names as
/// Swift strings cost a heap allocation each beyond 15 bytes. Here a row costs its bytes and one
/// 4-byte end offset, and rows compare byte by byte (`compare:`, SQLite's `BINARY`) in place.
///
/// Invariant: `ends` holds one entry per row, nondecreasing once `nullFlag` is masked off, the
/// last equal to `bytes.count`; a row's bytes are `bytes[end(row - 1)..<end(row)]`. A NULL row
/// has `nullFlag` set and no bytes.
struct UTF8Column {
    private(set) var bytes = ContiguousArray<UInt8>()
    private(set) var ends = ContiguousArray<UInt32>()
    /// Marks a NULL row in `ends`.
    static let nullFlag: UInt32 = 1 << 31

    init() {}

    /// The number of rows.
    var count: Int { ends.count }

    /// Reserves room for `rows` more rows of `bytesPerRow` bytes each.
    mutating func reserveCapacity(_ rows: Int, bytesPerRow: Int = 16) {
        ends.reserveCapacity(count + rows)
        bytes.reserveCapacity(bytes.count + rows * bytesPerRow)
    }

    /// The bytes a row has taken so far, rounded up; nil for a column without rows.
    var bytesPerRow: Int? {
        count == 0 ? nil : (bytes.count + count - 1) / count
    }

    /// Gives back the byte buffer's room beyond an eighth of its bytes. A column kept for the life
    /// of a controller shouldn't keep the doubling of its last growth (a million names of 24 bytes
    /// grown from a 16-byte guess would keep 8 MB unused).
    mutating func trimExcessCapacity() {
        guard bytes.capacity > bytes.count + bytes.count / 8 + 64 else { return }
        bytes = ContiguousArray(unsafeUninitializedCapacity: bytes.count) { buffer, initialized in
            _ = bytes.withUnsafeBufferPointer { buffer.initialize(fromContentsOf: $0) }
            initialized = bytes.count
        }
    }

    /// Where row `row`'s bytes start (`bytes.count` for `row == count`).
    @inline(__always)
    func start(of row: Int) -> Int { row == 0 ? 0 : end(of: row - 1) }

    @inline(__always)
    func end(of row: Int) -> Int { Int(ends[row] & ~Self.nullFlag) }

    @inline(__always)
    func isNull(_ row: Int) -> Bool { ends[row] & Self.nullFlag != 0 }

    /// Appends a row's UTF-8 bytes.
    @inline(__always)
    mutating func append(_ utf8: UnsafeRawBufferPointer) {
        bytes.append(contentsOf: utf8)
        coreDataPrecondition(bytes.count < Int(Self.nullFlag), "A sort column's strings exceed 2 GB.")
        ends.append(UInt32(bytes.count))
    }

    @inline(__always)
    mutating func appendNull() {
        ends.append(UInt32(bytes.count) | Self.nullFlag)
    }

    mutating func append(_ string: String?) {
        guard var string else { return appendNull() }
        string.withUTF8 { append(UnsafeRawBufferPointer($0)) }
    }

    /// The string of row `row`, nil for NULL.
    func string(at row: Int) -> String? {
        if isNull(row) { return nil }
        let range = start(of: row)..<end(of: row)
        return bytes.withUnsafeBufferPointer { String(decoding: UnsafeBufferPointer(rebasing: $0[range]), as: UTF8.self) }
    }

    /// Inserts a row at `row`.
    mutating func insert(_ string: String?, at row: Int) {
        if row == count { return append(string) }
        let offset = start(of: row)
        let utf8 = Array((string ?? "").utf8)
        bytes.insert(contentsOf: utf8, at: offset)
        let length = UInt32(utf8.count)
        for index in row..<ends.count { ends[index] += length }
        ends.insert((UInt32(offset) + length) | (string == nil ? Self.nullFlag : 0), at: row)
    }

    mutating func remove(at row: Int) {
        let range = start(of: row)..<end(of: row)
        bytes.removeSubrange(range)
        ends.remove(at: row)
        let length = UInt32(range.count)
        for index in row..<ends.count { ends[index] -= length }
    }

    /// Moves the rows from `row` on into a new column.
    mutating func split(at row: Int) -> UTF8Column {
        let offset = start(of: row)
        var tail = UTF8Column()
        tail.bytes = ContiguousArray(bytes[offset...])
        tail.ends = ContiguousArray(ends[row...].lazy.map { $0 - UInt32(offset) })
        bytes.removeSubrange(offset...)
        ends.removeSubrange(row...)
        return tail
    }

    /// Runs of rows of two columns, in order, copied run by run.
    init(segments: [SortedRowsChunk.Segment], of first: UTF8Column, _ second: UTF8Column) {
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
        if isNull(row) { return nil }
        let (lower, upper) = (start(of: row), end(of: row))
        return UnsafeRawBufferPointer(start: bytes.withUnsafeBytes { $0.baseAddress }.map { $0 + lower }, count: upper - lower)
    }

    /// The order of two rows taken by `unsafeRow(_:)` (NULL first).
    @inline(__always)
    static func compare(_ row: UnsafeRawBufferPointer?, _ other: UnsafeRawBufferPointer?, by order: StringComparison.Order) -> ComparisonResult {
        guard let row, let other else { return row == nil ? (other == nil ? .orderedSame : .orderedAscending) : .orderedDescending }
        return order == .binary ? StringComparison.binaryBytes(row, other) : StringComparison.compareUTF8(row, other, by: order)
    }
}
