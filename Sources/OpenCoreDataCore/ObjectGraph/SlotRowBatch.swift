/// Rows of one slot layout read together, in one allocation: what a fetch from the SQLite store
/// decodes into, instead of one `SlotStorage` per row.
///
/// Each row takes `layout.batchRowWordCount` words laid out as the words and cells of a
/// `SlotStorage` row, one after another; which word slots hold a word is kept apart, a bit per
/// slot of each row, after the rows (a state byte per slot would add two words to a row of ten
/// slots). A fetched object refers to its row here (`NSManagedObject.rowBatch`) and reads its
/// values from it until something needs values of its own: a write, a snapshot, any code that
/// reads `values` or `committedValues`; then the row is copied into a `SlotStorage`. Reading a
/// fetched object therefore allocates nothing per row, and freeing the objects frees a few large
/// blocks instead of a small one per row.
///
/// Memory: `capacity` rows, then `capacity * layout.count` bits (rounded up to words), starting
/// at word `bitsOffset`.
///
/// Invariants: rows `0..<count` and their bits are initialized and never change once appended
/// (objects share them); no row holds an overflow value (a batch is filled by decoding, which
/// writes each word slot's canonical word or leaves it nil, and cells); `count <= capacity`.
///
/// A batch stays alive as long as one object still reads from it, so an object kept from a large
/// fetch keeps its batch's rows (up to `maximumCapacity` of them) in memory.
final class SlotRowBatch: ManagedBuffer<SlotRowBatch.Header, UInt64> {
    struct Header {
        let layout: SlotLayout
        let capacity: Int
        /// Where the bits start, in words: after `capacity` rows.
        let bitsOffset: Int
        var count = 0
    }

    /// The most rows one batch holds; a fetch fills batches of growing size up to this.
    static let maximumCapacity = 1024

    /// An empty batch with room for `capacity` rows.
    static func make(layout: SlotLayout, capacity: Int) -> SlotRowBatch {
        let bitsOffset = layout.batchRowWordCount * capacity
        let bitWords = (capacity * layout.count + 63) / 64
        let batch = create(minimumCapacity: max(1, bitsOffset + bitWords)) { _ in Header(layout: layout, capacity: capacity, bitsOffset: bitsOffset) }
        let made = unsafeDowncast(batch, to: SlotRowBatch.self)
        made.withUnsafeMutablePointerToElements { ($0 + bitsOffset).initialize(repeating: 0, count: bitWords) }
        return made
    }

    /// Whether bit `bit` of the bits saying which word slots hold a word is set.
    @inline(__always)
    static func isSet(_ bit: Int, in bits: UnsafePointer<UInt64>) -> Bool {
        bits[bit >> 6] & (1 << UInt64(bit & 63)) != 0
    }

    /// Sets bit `bit` of the bits saying which word slots hold a word.
    @inline(__always)
    static func set(_ bit: Int, in bits: UnsafeMutablePointer<UInt64>) {
        bits[bit >> 6] |= 1 << UInt64(bit & 63)
    }

    /// Whether no row can be appended.
    var isFull: Bool { withUnsafeMutablePointerToHeader { $0.pointee.count == $0.pointee.capacity } }
    /// The number of rows.
    var count: Int { withUnsafeMutablePointerToHeader { $0.pointee.count } }

    /// Appends a row with every slot nil, lets `body` fill it, and returns its index.
    @inline(__always)
    func appendRow(_ body: (SlotRowWriter) throws -> Void) rethrows -> Int {
        try withUnsafeMutablePointers { header, words in
            assert(header.pointee.count < header.pointee.capacity, "The row batch is full")
            let index = header.pointee.count
            // The batch keeps its layout alive: lent without a retain.
            return try Unmanaged.passUnretained(header.pointee.layout)._withUnsafeGuaranteedRef { layout in
                let row = UnsafeMutableRawPointer(words + index * layout.batchRowWordCount)
                layout.initializeWordsAndCells(at: row)
                header.pointee.count = index + 1
                try body(SlotRowWriter(layout: layout, batchRow: row, bits: words + header.pointee.bitsOffset, firstBit: index * layout.count))
                return index
            }
        }
    }

    /// Calls `body` with the batch's layout, the memory of a row, and a test of whether a slot of
    /// the row holds a word. The batch keeps its layout alive: it is lent without a retain.
    /// Wrapping arithmetic: an index below `count` gives an offset inside the batch.
    @inline(__always)
    private func withRow<Result>(_ index: Int, _ body: (SlotLayout, UnsafeRawPointer, _ holdsWord: (Int) -> Bool) -> Result) -> Result {
        withUnsafeMutablePointers { header, words in
            assert(index >= 0 && index < header.pointee.count, "Row out of range")
            let bits = UnsafePointer(words + header.pointee.bitsOffset)
            return Unmanaged.passUnretained(header.pointee.layout)._withUnsafeGuaranteedRef { layout in
                let first = index &* layout.count
                return body(layout, UnsafeRawPointer(words + index &* layout.batchRowWordCount)) { slot in
                    SlotRowBatch.isSet(first &+ slot, in: bits)
                }
            }
        }
    }

    /// The value of a slot of a row, read in place (as `SlotStorage.value(at:)` reads its own).
    /// Batch rows hold no overflow values (see the invariants above).
    @inline(__always)
    func value(row index: Int, slot: Int) -> Any? {
        withRow(index) { layout, row, holdsWord in
            layout.value(at: slot, inRow: row, state: holdsWord(slot) ? SlotStorage.stateWord : SlotStorage.stateNil) { _ in nil }
        }
    }

    /// The string a cell slot of a row holds, read in place (see `SlotLayout.string(at:inRow:)`).
    @inline(__always)
    func string(row index: Int, slot: Int) -> String? {
        withRow(index) { layout, row, _ in layout.string(at: slot, inRow: row) }
    }

    /// The raw word of a word slot of a row, when the slot is of `kind` and holds a value (batch
    /// rows keep no overflow values); nil otherwise. Typed property reads use it to skip `Any`.
    @inline(__always)
    func word(row index: Int, slot: Int, kind: SlotLayout.Kind) -> UInt64? {
        withRow(index) { layout, row, holdsWord in
            assert(slot >= 0 && slot < layout.count, "Slot index out of range")
            // Wrapping arithmetic: a slot of the layout gives offsets inside the row.
            guard layout.kindTable[slot] == kind, holdsWord(slot) else { return nil }
            return row.load(fromByteOffset: slot &* 8, as: UInt64.self)
        }
    }

    /// A copy of a row as values of their own.
    func values(ofRow index: Int) -> SlotValues {
        withRow(index) { layout, row, holdsWord in
            SlotValues(storage: SlotStorage.make(layout: layout, copyingBatchRowAt: row, holdsWord: holdsWord))
        }
    }

    deinit {
        withUnsafeMutablePointers { header, words in
            let layout = header.pointee.layout
            guard layout.cellCount > 0 else { return }
            for index in 0..<header.pointee.count { layout.deinitializeRow(at: UnsafeMutableRawPointer(words + index * layout.batchRowWordCount)) }
        }
    }
}
