import Foundation
@testable import OpenCoreDataCore
import Testing

/// The byte-packed string column of sorted rows, checked against an array of optional strings
/// through random inserts, removals, splits and gathers.
@Suite struct UTF8ColumnTests {
    static let values: [String?] = [nil, "", "a", "B", "Zoë", "東京", "a longer string than fifteen bytes", "émile 10", "émile 9"]

    static func make(_ strings: [String?]) -> UTF8Column {
        var column = UTF8Column()
        for string in strings { column.append(string) }
        return column
    }

    static func contents(_ column: UTF8Column) -> [String?] {
        (0..<column.count).map { column.string(at: $0) }
    }

    @Test func randomEditsMatchAnArrayOfStrings() {
        var random = DifferentialTests.Generator(state: 42)
        var column = UTF8Column()
        var model: [String?] = []
        for step in 0..<2_000 {
            switch random.int(0..<10) {
            case 0..<5:
                let value = random.pick(Self.values)
                let index = random.int(0..<(model.count + 1))
                column.insert(value, at: index)
                model.insert(value, at: index)
            case 5..<7 where !model.isEmpty:
                let index = random.int(0..<model.count)
                column.remove(at: index)
                model.remove(at: index)
            case 7 where !model.isEmpty:
                let index = random.int(0..<(model.count + 1))
                let tail = column.split(at: index)
                #expect(Self.contents(tail) == Array(model[index...]), "step \(step)")
                model.removeSubrange(index...)
            case 8:
                // Gathering runs of two columns, as merging a changed chunk does.
                let other = Self.make((0..<random.int(0..<6)).map { _ in random.pick(Self.values) })
                let otherModel = Self.contents(other)
                var segments: [SortedRowsChunk.Segment] = []
                var expected: [String?] = []
                var mine = 0
                var theirs = 0
                while mine < model.count || theirs < otherModel.count {
                    if theirs < otherModel.count && (mine == model.count || random.chance(50)) {
                        let end = min(otherModel.count, theirs + random.int(1..<3))
                        segments.append(.init(fromSecond: true, range: theirs..<end))
                        expected += otherModel[theirs..<end]
                        theirs = end
                    } else {
                        let end = min(model.count, mine + random.int(1..<4))
                        segments.append(.init(fromSecond: false, range: mine..<end))
                        expected += model[mine..<end]
                        mine = end
                    }
                }
                column = UTF8Column(segments: segments, of: column, other)
                model = expected
            default:
                let value = random.pick(Self.values)
                column.append(value)
                model.append(value)
            }
            #expect(Self.contents(column) == model, "step \(step)")
            if Self.contents(column) != model { return }
        }
        // Stored and read back as a cache does.
        let copy = UTF8Column(bytes: column.bytes, ends: column.ends)
        #expect(copy.map(Self.contents) == model)
    }

    @Test func comparesBytesAsCompareAndSQLiteBinary() {
        let column = Self.make(Self.values)
        for row in Self.values.indices {
            for other in Self.values.indices {
                let expected: ComparisonResult
                switch (Self.values[row], Self.values[other]) {
                case (nil, nil): expected = .orderedSame
                case (nil, _): expected = .orderedAscending
                case (_, nil): expected = .orderedDescending
                case let (left?, right?): expected = StringComparison.binary(left, right)
                }
                #expect(column.compareBytes(row, column, other) == expected, "\(Self.values[row] ?? "nil") vs \(Self.values[other] ?? "nil")")
            }
        }
    }

    @Test func refusesBrokenOffsets() {
        #expect(UTF8Column(bytes: [65, 66], ends: [1]) == nil, "bytes left over")
        #expect(UTF8Column(bytes: [65], ends: [1, 0]) == nil, "offsets going back")
        #expect(UTF8Column(bytes: [65], ends: [1 | UTF8Column.nullFlag]) == nil, "a NULL with bytes")
        #expect(UTF8Column(bytes: [65], ends: [1, 1 | UTF8Column.nullFlag]) != nil)
    }
}
