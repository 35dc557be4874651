import Foundation
@testable import OpenCoreDataCore
import Testing

/// The byte-packed string column of sorted rows, checked against an array of optional strings
/// through random inserts, removals, splits and gathers, with and without shared values.
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
        var shared = 0
        for step in 0..<4_000 {
            switch random.int(0..<13) {
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
                var other = Self.make((0..<random.int(0..<6)).map { _ in random.pick(Self.values) })
                if random.chance(30) {
                    // A run of one value, which shares it.
                    other = Self.make(Array(repeating: random.pick(Self.values), count: random.int(40..<80)))
                    other.trimExcessCapacity()
                }
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
            case 10:
                // A run of one value, as rows sorted by the column come.
                let value = random.pick(Self.values)
                let length = random.int(1..<60)
                for _ in 0..<length { column.append(value) }
                model += Array(repeating: value, count: length)
            case 11:
                column.trimExcessCapacity()
            default:
                let value = random.pick(Self.values)
                column.append(value)
                model.append(value)
            }
            if column.sharesValues { shared += 1 }
            #expect(Self.contents(column) == model, "step \(step)")
            if Self.contents(column) != model { return }
        }
        #expect(shared > 500, "steps with shared values: \(shared)")
        // Stored and read back as a cache does.
        let stored = column.withOneValuePerRow()
        let copy = UTF8Column(bytes: stored.bytes, ends: stored.ends)
        #expect(copy.map(Self.contents) == model)
    }

    /// A column sorted by its value (a section key's) keeps each run's value once and a byte a
    /// row; names, each different, keep their bytes.
    @Test func repeatedValuesAreSharedWhenThatTakesLessRoom() {
        let teams = (0..<1_024).map { row -> String? in row < 700 ? "Team Émile \(row / 300)" : (row < 710 ? nil : "Team Zoë") }
        var column = Self.make(teams)
        column.trimExcessCapacity()
        #expect(column.sharesValues)
        #expect(column.ends.count == 5 && column.valueOfRow.count == 1_024)
        #expect(Self.contents(column) == teams)
        #expect(column.compareBytes(0, column, 1_000) == StringComparison.binary("Team Émile 0", "Team Zoë"))
        #expect(column.isNull(705) && !column.isNull(0))

        let names = (0..<1_024).map { Optional("Name number \($0)") }
        var unique = Self.make(names)
        unique.trimExcessCapacity()
        #expect(!unique.sharesValues)
        #expect(Self.contents(unique) == names)

        // More runs than a byte names: one value a row.
        let alternating = (0..<1_024).map { Optional($0 / 3 % 2 == 0 ? "even runs" : "odd runs") }
        var many = Self.make(alternating)
        many.trimExcessCapacity()
        #expect(!many.sharesValues)
        #expect(Self.contents(many) == alternating)
    }

    /// Merging a save's rows into a chunk of shared values keeps them shared, copying the chunk's
    /// value indices, until the values outgrow a byte.
    @Test func gatheringKeepsValuesShared() {
        var chunk = Self.make(Array(repeating: "Sales", count: 500) + Array(repeating: "Support", count: 500))
        chunk.trimExcessCapacity()
        let entering = Self.make(["Sales", "Research", "Support"])
        let segments: [SortedRowsChunk.Segment] = [
            .init(fromSecond: false, range: 0..<400), .init(fromSecond: true, range: 0..<1),
            .init(fromSecond: false, range: 401..<500), .init(fromSecond: true, range: 1..<3), .init(fromSecond: false, range: 500..<1_000),
        ]
        let merged = UTF8Column(segments: segments, of: chunk, entering)
        #expect(merged.sharesValues)
        #expect(merged.ends.count == 4, "the chunk's two values, Research, and Support after it")
        #expect(Self.contents(merged) == Array(repeating: "Sales", count: 500) + ["Research", "Support"] + Array(repeating: "Support", count: 500))

        let newcomers = Self.make((0..<300).map { "Department \($0)" })
        let grown = UTF8Column(segments: [.init(fromSecond: false, range: 0..<1_000), .init(fromSecond: true, range: 0..<300)], of: chunk, newcomers)
        #expect(!grown.sharesValues)
        #expect(Self.contents(grown) == Self.contents(chunk) + (0..<300).map { "Department \($0)" })
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
