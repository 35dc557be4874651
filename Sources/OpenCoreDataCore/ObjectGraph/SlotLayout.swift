import Foundation

/// How `SlotValues` stores each property slot of an entity: fixed-width attribute types as a raw
/// 64-bit word, everything else (strings, data, relationships, …) as an `Any?` cell.
///
/// One layout per entity, made when the model freezes and shared by all its objects and rows.
/// The storage of a row is one allocation of `wordCount` words: a word per slot, then the words
/// per cell (an `Any?`, `cellWords` words), then a state byte per slot (nil, word present, or kept in the overflow).
/// A row in a `SlotRowBatch` has the words and cells alone (`batchRowWordCount`).
/// Unchecked Sendable: immutable; its tables are written only in `init`.
final class SlotLayout: @unchecked Sendable {
    /// What a slot holds.
    enum Kind: UInt8 {
        /// An `Any?` cell (any value).
        case cell
        case int64, int32, int16, bool, double, float, date

        /// The word kind for an attribute type, `.cell` for types not stored as a word.
        init(_ type: NSAttributeType) {
            switch type {
            case .integer64AttributeType: self = .int64
            case .integer32AttributeType: self = .int32
            case .integer16AttributeType: self = .int16
            case .booleanAttributeType: self = .bool
            case .doubleAttributeType: self = .double
            case .floatAttributeType: self = .float
            case .dateAttributeType: self = .date
            default: self = .cell
            }
        }
    }

    /// The kind of each slot.
    let kinds: [Kind]
    /// For each slot of kind `.cell`, its cell number; -1 for word slots.
    let cellNumbers: [Int]
    /// `kinds` and `cellNumbers` as memory the layout owns, which a row's storage reads without
    /// retaining anything (the storage keeps its layout alive).
    let kindTable: UnsafeMutablePointer<Kind>
    let cellTable: UnsafeMutablePointer<Int>
    /// The number of slots and of cells.
    let count: Int
    let cellCount: Int
    /// Where the cells and the state bytes start, in words from the start of the storage.
    let cellsOffset: Int
    let statesOffset: Int
    /// The size of one row's storage, in words.
    let wordCount: Int
    /// The size of a row in a `SlotRowBatch`, in words: the words and cells, without state bytes.
    var batchRowWordCount: Int { statesOffset }

    init(kinds: [Kind]) {
        self.kinds = kinds
        var numbers: [Int] = []
        var cells = 0
        for kind in kinds {
            if kind == .cell {
                numbers.append(cells)
                cells += 1
            } else {
                numbers.append(-1)
            }
        }
        cellNumbers = numbers
        count = kinds.count
        cellCount = cells
        cellsOffset = kinds.count
        statesOffset = kinds.count + Self.cellWords * cells
        wordCount = statesOffset + (kinds.count + 7) / 8
        kindTable = .allocate(capacity: max(kinds.count, 1))
        kindTable.initialize(from: kinds, count: kinds.count)
        cellTable = .allocate(capacity: max(kinds.count, 1))
        cellTable.initialize(from: numbers, count: kinds.count)
    }

    deinit {
        kindTable.deallocate()
        cellTable.deallocate()
    }

    /// The layout of an entity's properties (frozen): attributes of fixed-width types as words.
    convenience init(properties: [NSPropertyDescription]) {
        self.init(kinds: properties.map { property in
            (property as? NSAttributeDescription).map { Kind($0.attributeType) } ?? .cell
        })
    }

    /// The words one `Any?` cell takes.
    static let cellWords = (MemoryLayout<Any?>.stride + 7) / 8

    /// The layout with no slots (a fault's storage before its row is loaded).
    static let empty = SlotLayout(kinds: [])
}

extension SlotLayout {
    /// Initializes one row's memory (`wordCount` words): words zero, every slot nil, cells nil.
    func initializeRow(at row: UnsafeMutableRawPointer) {
        row.initializeMemory(as: UInt64.self, repeating: 0, count: count)
        (row + statesOffset * 8).initializeMemory(as: UInt8.self, repeating: SlotStorage.stateNil, count: count)
        if cellCount > 0 {
            (row + cellsOffset * 8).bindMemory(to: Any?.self, capacity: cellCount).initialize(repeating: nil, count: cellCount)
        }
    }

    /// Initializes a batch row's memory (`batchRowWordCount` words, no state bytes): words zero,
    /// cells nil.
    func initializeWordsAndCells(at row: UnsafeMutableRawPointer) {
        row.initializeMemory(as: UInt64.self, repeating: 0, count: count)
        if cellCount > 0 {
            (row + cellsOffset * 8).bindMemory(to: Any?.self, capacity: cellCount).initialize(repeating: nil, count: cellCount)
        }
    }

    /// Initializes the words and cells of one row's memory as a copy of another row's (cells
    /// retained); state bytes are left to the caller.
    func initializeWordsAndCells(at row: UnsafeMutableRawPointer, copying source: UnsafeRawPointer) {
        row.copyMemory(from: source, byteCount: count * 8)
        if cellCount > 0 {
            (row + cellsOffset * 8).bindMemory(to: Any?.self, capacity: cellCount)
                .initialize(from: (source + cellsOffset * 8).assumingMemoryBound(to: Any?.self), count: cellCount)
        }
    }

    /// Initializes one row's memory as a copy of another row of this layout (cells retained).
    func initializeRow(at row: UnsafeMutableRawPointer, copying source: UnsafeRawPointer) {
        initializeWordsAndCells(at: row, copying: source)
        (row + statesOffset * 8).copyMemory(from: source + statesOffset * 8, byteCount: count)
    }

    /// The value of a slot in a row laid out by this layout: a cell's contents, or for a word slot
    /// by its state (`SlotStorage.stateWord`, `stateNil` or `stateOverflow`; a storage's row keeps
    /// it in a byte, see `state(at:inRow:)`, a batch row in a bit) the word decoded (see
    /// `SlotStorage.decode`), nil, or what `overflow` returns for the slot (only ever called then).
    @inline(__always)
    func value(at slot: Int, inRow row: UnsafeRawPointer, state: @autoclosure () -> UInt8, overflow: (Int) -> Any?) -> Any? {
        assert(slot >= 0 && slot < count, "Slot index out of range")
        let kind = kindTable[slot]
        if kind == .cell { return cell(at: slot, inRow: row).load(as: Any?.self) }
        switch state() {
        case SlotStorage.stateWord: return SlotStorage.decode(row.load(fromByteOffset: slot * 8, as: UInt64.self), kind)
        case SlotStorage.stateOverflow: return overflow(slot)
        default: return nil
        }
    }

    /// The state byte of a word slot in a storage's row (batch rows have none).
    @inline(__always)
    func state(at slot: Int, inRow row: UnsafeRawPointer) -> UInt8 {
        row.load(fromByteOffset: statesOffset * 8 + slot, as: UInt8.self)
    }

    /// The address of a cell slot's `Any?` in a row.
    @inline(__always)
    func cell(at slot: Int, inRow row: UnsafeRawPointer) -> UnsafeRawPointer {
        row + cellsOffset * 8 + MemoryLayout<Any?>.stride * cellTable[slot]
    }

    /// The string a cell slot of a row holds, read in place without copying its `Any?`; nil for a
    /// word slot, nil, or a value that is not exactly a `String`.
    @inline(__always)
    func string(at slot: Int, inRow row: UnsafeRawPointer) -> String? {
        assert(slot >= 0 && slot < count, "Slot index out of range")
        guard kindTable[slot] == .cell else { return nil }
        let cell = cell(at: slot, inRow: row)
        // An `Any?` is a three-word value buffer and its type's metadata (0 for nil); a `String`
        // lies in the buffer (see `ExistentialFastPath`).
        guard cell.load(fromByteOffset: 24, as: UnsafeRawPointer?.self) == unsafeBitCast(String.self as Any.Type, to: UnsafeRawPointer.self) else { return nil }
        return cell.load(as: String.self)
    }

    /// Deinitializes one row's memory (releases its cells).
    func deinitializeRow(at row: UnsafeMutableRawPointer) {
        if cellCount > 0 { (row + cellsOffset * 8).assumingMemoryBound(to: Any?.self).deinitialize(count: cellCount) }
    }
}
