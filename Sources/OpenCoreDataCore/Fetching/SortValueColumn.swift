import Foundation

/// The values of one sort key for consecutive rows, stored by kind (8 bytes a row for integers
/// and doubles; for strings their UTF-8 bytes and a 4-byte offset, or a byte a row naming one
/// of a few shared values, see `UTF8Column`).
///
/// Invariant: only the storage of `kind` holds values, one per row; for integers `integerNulls`
/// runs parallel to `integers`; for doubles NaN stands for NULL (SQLite stores NaN as NULL).
struct SortValueColumn {
    let kind: SortValue.Kind
    private(set) var integers = ContiguousArray<Int64>()
    private(set) var integerNulls = ContiguousArray<Bool>()
    private(set) var doubles = ContiguousArray<Double>()
    private(set) var strings = UTF8Column()
    private(set) var others = ContiguousArray<Any?>()

    init(kind: SortValue.Kind) {
        self.kind = kind
    }

    /// The number of rows.
    var count: Int {
        switch kind {
        case .integer: return integers.count
        case .double: return doubles.count
        case .string: return strings.count
        case .other: return others.count
        }
    }

    /// Reserves room for `capacity` rows; a string column reserves `bytesPerRow` bytes a row.
    mutating func reserveCapacity(_ capacity: Int, bytesPerRow: Int = 16) {
        switch kind {
        case .integer: integers.reserveCapacity(capacity); integerNulls.reserveCapacity(capacity)
        case .double: doubles.reserveCapacity(capacity)
        case .string: strings.reserveCapacity(capacity, bytesPerRow: bytesPerRow)
        case .other: others.reserveCapacity(capacity)
        }
    }

    /// The bytes a row of a string column has taken so far (nil for other kinds or no rows).
    var stringBytesPerRow: Int? { kind == .string ? strings.bytesPerRow : nil }

    /// Gives back a string column's unused room (see `UTF8Column.trimExcessCapacity()`).
    mutating func trimExcessCapacity() {
        if kind == .string { strings.trimExcessCapacity() }
    }

    /// The value of row `index`.
    @inline(__always)
    subscript(index: Int) -> SortValue {
        switch kind {
        case .integer: return integerNulls[index] ? .null : .integer(integers[index])
        case .double:
            let value = doubles[index]
            return value.isNaN ? .null : .double(value)
        case .string: return strings.string(at: index).map(SortValue.string) ?? .null
        case .other: return others[index].map(SortValue.other) ?? .null
        }
    }

    /// Appends a value (converted to the column's kind).
    @inline(__always)
    mutating func append(_ value: SortValue) {
        insert(value, at: count)
    }

    /// Appends an integer or NULL without going through `SortValue`.
    @inline(__always)
    mutating func appendInteger(_ value: Int64, isNull: Bool) {
        integers.append(value)
        integerNulls.append(isNull)
    }

    /// Appends a string's UTF-8 bytes, or NULL, without making a `String`.
    @inline(__always)
    mutating func appendUTF8(_ utf8: UnsafeRawBufferPointer?) {
        if let utf8 { strings.append(utf8) } else { strings.appendNull() }
    }

    /// Replaces the strings of a string column (read back from a cache), sharing their values
    /// when that takes less room, as a fetched column does.
    mutating func setStrings(_ column: UTF8Column) {
        strings = column
        strings.trimExcessCapacity()
    }

    /// Appends a double (NaN: NULL) without going through `SortValue`.
    @inline(__always)
    mutating func appendDouble(_ value: Double) {
        doubles.append(value)
    }

    /// Inserts a value at a row index.
    mutating func insert(_ value: SortValue, at index: Int) {
        switch kind {
        case .integer:
            let (number, isNull): (Int64, Bool)
            if case .integer(let given) = value { (number, isNull) = (given, false) } else { (number, isNull) = (0, true) }
            if index == integers.count {
                integers.append(number)
                integerNulls.append(isNull)
            } else {
                integers.insert(number, at: index)
                integerNulls.insert(isNull, at: index)
            }
        case .double:
            let number: Double
            if case .double(let given) = value { number = given } else { number = .nan }
            if index == doubles.count { doubles.append(number) } else { doubles.insert(number, at: index) }
        case .string:
            let string: String?
            switch value {
            case .string(let given): string = given
            case .null: string = nil
            default: string = value.boxed.map { "\($0)" }
            }
            strings.insert(string, at: index)
        case .other:
            if index == others.count { others.append(value.boxed) } else { others.insert(value.boxed, at: index) }
        }
    }

    /// The values of runs of rows of two columns of the same kind, in order: fixed-width values
    /// are copied run by run into one allocation per array.
    init(kind: SortValue.Kind, segments: [SortedRowsChunk.Segment], of first: borrowing SortValueColumn, _ second: borrowing SortValueColumn) {
        self.kind = kind
        switch kind {
        case .integer:
            integers = .gathering(segments, from: first.integers, second.integers)
            integerNulls = .gathering(segments, from: first.integerNulls, second.integerNulls)
        case .double:
            doubles = .gathering(segments, from: first.doubles, second.doubles)
        case .string:
            strings = UTF8Column(segments: segments, of: first.strings, second.strings)
        case .other:
            others.reserveCapacity(segments.reduce(0) { $0 + $1.range.count })
            for segment in segments { others.append(contentsOf: segment.fromSecond ? second.others[segment.range] : first.others[segment.range]) }
        }
    }

    /// Whether row `row` holds the same value as row `otherRow` of another numeric column of the
    /// same kind (exact equality, NULL equal to NULL).
    func hasNumericValue(at row: Int, equalTo other: SortValueColumn, at otherRow: Int) -> Bool {
        switch kind {
        case .integer:
            return Self.sameInteger(integerNulls[row], integers[row], other.integerNulls[otherRow], other.integers[otherRow])
        case .double:
            return Self.sameDouble(doubles[row], other.doubles[otherRow])
        case .string, .other:
            preconditionFailure("Only numeric columns are compared for exact equality.")
        }
    }

    /// Exact equality of two integer sort values given with their NULL flags (NULL equal to NULL).
    @inline(__always)
    private static func sameInteger(_ isNull: Bool, _ value: Int64, _ otherIsNull: Bool, _ otherValue: Int64) -> Bool {
        isNull == otherIsNull && (isNull || value == otherValue)
    }

    /// Exact equality of two double sort values (NaN, a NULL, equal to NaN).
    @inline(__always)
    private static func sameDouble(_ value: Double, _ otherValue: Double) -> Bool {
        value == otherValue || (value.isNaN && otherValue.isNaN)
    }

    /// Clears `equal[row]` for each row whose value differs from the row before (a numeric column:
    /// exact equality, NULL equal to NULL).
    func markRowsEqualToPrevious(_ equal: inout UnsafeMutableBufferPointer<Bool>) {
        switch kind {
        case .integer:
            integers.withUnsafeBufferPointer { values in
                integerNulls.withUnsafeBufferPointer { nulls in
                    for row in 1..<max(values.count, 1) {
                        equal[row] = equal[row] && Self.sameInteger(nulls[row], values[row], nulls[row - 1], values[row - 1])
                    }
                }
            }
        case .double:
            doubles.withUnsafeBufferPointer { values in
                for row in 1..<max(values.count, 1) {
                    equal[row] = equal[row] && Self.sameDouble(values[row], values[row - 1])
                }
            }
        case .string, .other:
            preconditionFailure("Only numeric columns are compared for exact equality.")
        }
    }

    /// Removes the value of a row.
    mutating func remove(at index: Int) {
        switch kind {
        case .integer: integers.remove(at: index); integerNulls.remove(at: index)
        case .double: doubles.remove(at: index)
        case .string: strings.remove(at: index)
        case .other: others.remove(at: index)
        }
    }

    /// Moves the rows from `index` on into a new column.
    mutating func split(at index: Int) -> SortValueColumn {
        var tail = SortValueColumn(kind: kind)
        switch kind {
        case .integer:
            tail.integers = ContiguousArray(integers[index...]); integers.removeSubrange(index...)
            tail.integerNulls = ContiguousArray(integerNulls[index...]); integerNulls.removeSubrange(index...)
        case .double: tail.doubles = ContiguousArray(doubles[index...]); doubles.removeSubrange(index...)
        case .string: tail.strings = strings.split(at: index)
        case .other: tail.others = ContiguousArray(others[index...]); others.removeSubrange(index...)
        }
        return tail
    }
}

extension ContiguousArray where Element: BitwiseCopyable {
    /// Runs of elements of two arrays (each segment a range of the first or of the second),
    /// concatenated in one allocation with one copy per run.
    static func gathering(_ segments: [SortedRowsChunk.Segment], from first: borrowing ContiguousArray<Element>, _ second: borrowing ContiguousArray<Element>) -> ContiguousArray<Element> {
        let total = segments.reduce(0) { $0 + $1.range.count }
        return first.withUnsafeBufferPointer { first in
            second.withUnsafeBufferPointer { second in
                ContiguousArray(unsafeUninitializedCapacity: total) { buffer, count in
                    var filled = 0
                    for segment in segments where !segment.range.isEmpty {
                        let source = segment.fromSecond ? second : first
                        assert(segment.range.lowerBound >= 0 && segment.range.upperBound <= source.count, "Segment out of range")
                        (buffer.baseAddress! + filled).initialize(from: source.baseAddress! + segment.range.lowerBound, count: segment.range.count)
                        filled += segment.range.count
                    }
                    count = filled
                }
            }
        }
    }
}
