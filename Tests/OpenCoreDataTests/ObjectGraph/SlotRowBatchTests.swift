import Foundation
@testable import OpenCoreDataCore
import Testing

/// A batch of fetched rows keeps which word slots hold a word as a bit per slot, apart from the
/// rows: every read (a value, a typed word, a string, a copy as values of its own) answers as the
/// row was written, and a row takes its words and cells alone.
@Suite struct SlotRowBatchTests {
    /// Ten Integer 64 slots and a cell, as a fetched entity with a string attribute has.
    static let layout = SlotLayout(kinds: Array(repeating: .int64, count: 10) + [.cell])

    /// Whether slot `slot` of row `row` is written (the others stay nil).
    static func holds(_ row: Int, _ slot: Int) -> Bool { (row + slot) % 3 != 0 }

    static func filledBatch(rows: Int) -> SlotRowBatch {
        let batch = SlotRowBatch.make(layout: layout, capacity: rows)
        for row in 0..<rows {
            let index = batch.appendRow { writer in
                for slot in 0..<10 where holds(row, slot) { writer.set(UInt64(row * 100 + slot), at: slot) }
                if row % 2 == 0 { writer.setCell("row \(row)", at: 10) }
            }
            #expect(index == row)
        }
        return batch
    }

    @Test func readsAnswerAsTheRowsWereWritten() {
        let batch = Self.filledBatch(rows: 150)
        #expect(batch.isFull && batch.count == 150)
        for row in 0..<150 {
            let copy = batch.values(ofRow: row)
            for slot in 0..<10 {
                let expected = Self.holds(row, slot) ? Int64(row * 100 + slot) : nil
                #expect(batch.word(row: row, slot: slot, kind: .int64).map { Int64(bitPattern: $0) } == expected, "row \(row) slot \(slot)")
                #expect(batch.word(row: row, slot: slot, kind: .double) == nil)
                #expect(batch.value(row: row, slot: slot) as? Int64 == expected)
                #expect((batch.value(row: row, slot: slot) == nil) == (expected == nil))
                #expect(copy.word(at: slot).map { Int64(bitPattern: $0) } == expected, "copy of row \(row) slot \(slot)")
            }
            let name = row % 2 == 0 ? "row \(row)" : nil
            #expect(batch.string(row: row, slot: 10) == name)
            #expect(batch.value(row: row, slot: 10) as? String == name)
            #expect(copy.string(at: 10) == name)
        }
    }

    /// 1,024 rows of ten words take 80 bytes a row and their bits, not two words more a row for
    /// state bytes.
    @Test func rowsHoldNoStateBytes() throws {
        #if os(Linux)
        let batch = SlotRowBatch.make(layout: SlotLayout(kinds: Array(repeating: .int64, count: 10)), capacity: 1_024)
        #expect(try #require(TestSupport.allocatedSize(of: batch)) < 1_024 * 84)
        #endif
    }
}
