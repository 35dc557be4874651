import Foundation

/// The values of one sort key for consecutive rows, stored by kind (8 bytes a row for integers
/// and doubles, 16 for strings).
///
/// Invariant: only the storage of `kind` holds values, one per row; for integers `integerNulls`
/// runs parallel to `integers`; for doubles NaN stands for NULL (SQLite stores NaN as NULL).
struct SortValueColumn {
    let kind: SortValue.Kind
    private(set) var integers = ContiguousArray<Int64>()
    private(set) var integerNulls = ContiguousArray<Bool>()
    private(set) var doubles = ContiguousArray<Double>()
    private(set) var strings = ContiguousArray<String?>()
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

    mutating func reserveCapacity(_ capacity: Int) {
        switch kind {
        case .integer: integers.reserveCapacity(capacity); integerNulls.reserveCapacity(capacity)
        case .double: doubles.reserveCapacity(capacity)
        case .string: strings.reserveCapacity(capacity)
        case .other: others.reserveCapacity(capacity)
        }
    }

    /// The value of row `index`.
    @inline(__always)
    subscript(index: Int) -> SortValue {
        switch kind {
        case .integer: return integerNulls[index] ? .null : .integer(integers[index])
        case .double:
            let value = doubles[index]
            return value.isNaN ? .null : .double(value)
        case .string: return strings[index].map(SortValue.string) ?? .null
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
            if index == strings.count { strings.append(string) } else { strings.insert(string, at: index) }
        case .other:
            if index == others.count { others.append(value.boxed) } else { others.insert(value.boxed, at: index) }
        }
    }

    /// Appends the values of runs of rows of two columns of the same kind, in order.
    mutating func append(segments: [SortedRowsChunk.Segment], of first: borrowing SortValueColumn, _ second: borrowing SortValueColumn) {
        switch kind {
        case .integer:
            for segment in segments {
                integers.append(contentsOf: segment.fromSecond ? second.integers[segment.range] : first.integers[segment.range])
                integerNulls.append(contentsOf: segment.fromSecond ? second.integerNulls[segment.range] : first.integerNulls[segment.range])
            }
        case .double:
            for segment in segments { doubles.append(contentsOf: segment.fromSecond ? second.doubles[segment.range] : first.doubles[segment.range]) }
        case .string:
            for segment in segments { strings.append(contentsOf: segment.fromSecond ? second.strings[segment.range] : first.strings[segment.range]) }
        case .other:
            for segment in segments { others.append(contentsOf: segment.fromSecond ? second.others[segment.range] : first.others[segment.range]) }
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
        case .string: tail.strings = ContiguousArray(strings[index...]); strings.removeSubrange(index...)
        case .other: tail.others = ContiguousArray(others[index...]); others.removeSubrange(index...)
        }
        return tail
    }
}
