import Foundation
@testable import OpenCoreDataCore
import Testing

/// `FetchedResultsIndex.bulkUpdate` on thousands of rows (many chunks, chunks that split, empty
/// out and refill), checked against a plain sorted array after every round: the order, the
/// sections, each key's position, and where each removed row was and each entering row went.
/// Keys mix saved (positive) and unsaved (negative) rows, so removals are found both by the bit-set
/// scan and by search.
@Suite struct FetchedResultsIndexBulkTests {
    /// A row: its key, its group (the first sort key and the section, nil first) and score (descending).
    struct Row {
        var key: Int64
        var group: Int64?
        var score: Double
        var name: String
    }

    static let descriptors = [NSSortDescriptor(key: "group", ascending: true), NSSortDescriptor(key: "score", ascending: false),
                              NSSortDescriptor(key: "name", ascending: true)]
    static let kinds: [SortValue.Kind] = [.integer, .double, .string]

    static func sortsBefore(_ a: Row, _ b: Row) -> Bool {
        switch (a.group, b.group) {
        case (nil, .some): return true
        case (.some, nil): return false
        case let (x?, y?) where x != y: return x < y
        default: break
        }
        if a.score != b.score { return a.score > b.score }
        if a.name != b.name { return a.name < b.name }
        return SortedRows.tieRank(a.key) < SortedRows.tieRank(b.key)
    }

    static func sectionName(_ row: Row) -> String { row.group.map(String.init) ?? "" }

    static func append(_ row: Row, to chunk: inout SortedRowsChunk) {
        chunk.keys.append(row.key)
        chunk.columns[0].append(row.group.map(SortValue.integer) ?? .null)
        chunk.columns[1].append(.double(row.score))
        chunk.columns[2].append(.string(row.name))
    }

    /// Sorted rows in chunks of the index's size, with their section runs; `trimmed`, each chunk
    /// trimmed as a fetch leaves it (string columns of few runs share their values).
    static func sortedRows(_ rows: [Row], trimmed: Bool = false) -> SortedRows {
        var result = SortedRows()
        var chunk = SortedRowsChunk(kinds: kinds, capacity: FetchedResultsIndex.chunkSize)
        for row in rows {
            append(row, to: &chunk)
            if chunk.count == FetchedResultsIndex.chunkSize {
                if trimmed { chunk.trimExcessCapacity() }
                result.chunks.append(chunk)
                chunk = SortedRowsChunk(kinds: kinds, capacity: FetchedResultsIndex.chunkSize)
            }
            if result.sections.last?.name == sectionName(row) { result.sections[result.sections.count - 1].count += 1 } else { result.sections.append((sectionName(row), 1)) }
        }
        if trimmed { chunk.trimExcessCapacity() }
        if chunk.count > 0 || result.chunks.isEmpty { result.chunks.append(chunk) }
        return result
    }

    static func sections(_ rows: [Row]) -> (names: [String], counts: [Int]) {
        let runs = sortedRows(rows).sections
        return (runs.map(\.name), runs.map(\.count))
    }

    /// With `sharingValues`, chunks are trimmed as a fetch leaves them, so name columns of few
    /// runs share their values and merges go through a column of shared values.
    @Test(arguments: [false, true]) func bulkUpdatesMatchASortedArray(sharingValues: Bool) throws {
        var random = DifferentialTests.Generator(state: 20_240_611)
        var nextKey: Int64 = 1
        func makeRow(group: Int64? = nil) -> Row {
            defer { nextKey += 1 }
            // One row in ten stands for an unsaved object: a negative key, tied after saved rows.
            return Row(key: random.chance(10) ? -nextKey : nextKey, group: group ?? (random.chance(5) ? nil : Int64(random.int(0..<12))),
                       score: Double(random.int(0..<20)), name: random.pick(["ann", "bob", "cy", "Dee"]))
        }
        var rows = (0..<4000).map { _ in makeRow() }.sorted(by: Self.sortsBefore)
        let initial = Self.sortedRows(rows, trimmed: sharingValues)
        let sharing = initial.chunks.filter { $0.columns[2].strings.sharesValues }.count
        #expect(sharingValues ? sharing > 0 : sharing == 0, "chunks sharing values: \(sharing)")
        let index = FetchedResultsIndex(rows: initial, descriptors: Self.descriptors)
        for round in 0..<24 {
            // Removals: random rows, sometimes a whole group, sometimes nearly everything.
            var removing = Set<Int64>()
            switch round % 5 {
            case 0: if let group = rows.randomElementGroup(using: &random) { removing = Set(rows.filter { $0.group == group }.map(\.key)) }
            case 1 where round % 10 == 1: removing = Set(rows.filter { _ in random.chance(97) }.map(\.key))
            default: for _ in 0..<random.int(0..<1500) where !rows.isEmpty { removing.insert(rows[random.int(0..<rows.count)].key) }
            }
            // Entering: some removed rows with new values, new rows, sometimes a crowd at one place.
            var entering: [Row] = []
            for key in removing where random.chance(50) {
                var row = makeRow()
                row.key = key
                entering.append(row)
            }
            for _ in 0..<random.int(0..<1500) { entering.append(makeRow()) }
            if round % 4 == 3 {
                let group = Int64(random.int(0..<12))
                for _ in 0..<3000 { entering.append(Row(key: nextKey, group: group, score: 7, name: "crowd")); nextKey += 1 }
            }
            let removingList = Array(removing) + [Int64(-99_999)]
            var chunk = SortedRowsChunk(kinds: Self.kinds, capacity: entering.count)
            for row in entering { Self.append(row, to: &chunk) }
            if sharingValues && round % 2 == 0 { chunk.trimExcessCapacity() }
            let oldRows = rows
            let oldSections = Self.sections(oldRows)
            let update = try index.bulkUpdate(removing: removingList, entering: chunk, sectionNames: entering.map(Self.sectionName))
            rows = (rows.filter { !removing.contains($0.key) } + entering).sorted(by: Self.sortsBefore)

            #expect(index.allKeys == rows.map(\.key), "round \(round): order")
            let (names, counts) = Self.sections(rows)
            #expect(index.sectionNames == names, "round \(round): section names")
            #expect(Array(index.sectionRowCounts) == counts, "round \(round): section counts")
            let oldPositions = Dictionary(uniqueKeysWithValues: oldRows.enumerated().map { ($0.element.key, $0.offset) })
            for (input, key) in removingList.enumerated() {
                guard let position = oldPositions[key] else {
                    #expect(update.oldPlaces[input] == nil)
                    continue
                }
                let section = oldSections.names.firstIndex(of: Self.sectionName(oldRows[position]))!
                let start = oldSections.counts[..<section].reduce(0, +)
                #expect(update.oldPlaces[input]?.position == position && update.oldPlaces[input]?.section == section && update.oldPlaces[input]?.row == position - start,
                        "round \(round): old place of \(key)")
            }
            let newPositions = Dictionary(uniqueKeysWithValues: rows.enumerated().map { ($0.element.key, $0.offset) })
            #expect(entering.enumerated().allSatisfy { update.newPositions[$0.offset] == newPositions[$0.element.key] }, "round \(round): new positions")
            for _ in 0..<50 where !rows.isEmpty {
                let position = random.int(0..<rows.count)
                #expect(index.position(of: rows[position].key) == position)
                #expect(index.key(at: position) == rows[position].key)
            }
            // Row-by-row changes still work on the chunks a bulk update left.
            if let first = rows.first {
                #expect(index.remove(first.key))
                var single = SortedRowsChunk(kinds: Self.kinds, capacity: 1)
                Self.append(first, to: &single)
                try index.insert(row: 0, of: single, sectionName: Self.sectionName(first))
                #expect(index.position(of: first.key) == 0)
            }
        }
    }

    /// The row locator answers as a dictionary would: ids too large for its 2-byte entries, keys
    /// beyond its flat array (which grows over them, or not), negative keys, removals.
    @Test(arguments: [1, 2, 3] as [UInt64]) func theRowLocatorAnswersAsADictionary(seed: UInt64) {
        var generator = DifferentialTests.Generator(state: seed)
        var locator = RowLocator(maximumKey: 2_000, count: 1_000)
        var expected: [Int64: Int32] = [:]
        for _ in 0..<20_000 {
            let key = Int64(generator.next() % 12_000) - 1_000
            let bigID = generator.next() % 4 == 0
            let id: Int32? = generator.next() % 5 == 0 ? nil : Int32(generator.next() % (bigID ? 200_000 : 600))
            locator[key] = id
            expected[key] = id
        }
        for key in Int64(-1_000)..<11_000 { #expect(locator[key] == expected[key], "key \(key)") }
        #expect(locator[Int64(UInt16.max)] == expected[Int64(UInt16.max)])
    }

    @Test func aSectionOutOfOrderThrowsAndLeavesTheIndexAsItWas() throws {
        let rows = (1...3000).map { Row(key: Int64($0), group: Int64($0 / 1000), score: Double($0 % 7), name: "n") }.sorted(by: Self.sortsBefore)
        let index = FetchedResultsIndex(rows: Self.sortedRows(rows), descriptors: Self.descriptors)
        let keys = index.allKeys
        var chunk = SortedRowsChunk(kinds: Self.kinds, capacity: 1)
        // Sorts into group 1 but names section "0": section 0 would come back after section 1.
        Self.append(Row(key: 5000, group: 1, score: 3, name: "n"), to: &chunk)
        #expect(throws: FetchedResultsIndex.OutOfOrder.self) {
            try index.bulkUpdate(removing: [1, 2, 1500], entering: chunk, sectionNames: ["0"])
        }
        #expect(index.allKeys == keys)
        #expect(index.sectionNames == ["0", "1", "2", "3"])
        #expect(index.contains(1500) && !index.contains(5000))
    }
}

private extension Array where Element == FetchedResultsIndexBulkTests.Row {
    /// The group of a random row (nil when there are no rows or it has none).
    func randomElementGroup(using random: inout DifferentialTests.Generator) -> Int64? {
        isEmpty ? nil : self[random.int(0..<count)].group
    }
}
