import Foundation

/// The values of one object or stored row, by property slot: a copy-on-write collection of `Any?`
/// whose fixed-width attribute values (integers, booleans, floating-point numbers, dates) are kept
/// as raw words instead of existential boxes, in a single allocation (see `SlotLayout`).
///
/// Reading a slot gives back exactly the value stored: a word slot holds a value of its attribute's
/// canonical type (`Int64` for Integer 64, …); any other value set on it (which validation rejects
/// at save) is kept as given in an overflow table. Copies share storage until one is written.
struct SlotValues: RandomAccessCollection, MutableCollection {
    private var storage: SlotStorage

    /// No slots: the storage of a fault whose row is not loaded (shares one empty instance).
    init() { storage = SlotStorage.empty }

    /// Every slot of a layout nil.
    init(layout: SlotLayout) { storage = SlotStorage.make(layout: layout) }

    /// Values held in the given storage (see `SlotRowBatch.values(ofRow:)`).
    init(storage: SlotStorage) { self.storage = storage }

    /// The layout the values are stored in.
    var layout: SlotLayout { storage.layout }

    var startIndex: Int { 0 }
    var endIndex: Int { storage.count }

    subscript(slot: Int) -> Any? {
        @inline(__always) get { storage.value(at: slot) }
        @inline(__always) set {
            makeUnique()
            storage.setValue(newValue, at: slot)
        }
    }

    /// The raw word of a word slot holding a value of its canonical type; nil for nil, a cell slot
    /// or a value kept in the overflow. The slot's `SlotLayout.Kind` says how to read it.
    @inline(__always)
    func word(at slot: Int) -> UInt64? { storage.word(at: slot) }

    /// The `String` a cell slot holds, read in place without copying the slot's `Any?`; nil for
    /// nil, a word slot or any other value.
    @inline(__always)
    func string(at slot: Int) -> String? { storage.string(at: slot) }

    /// How a slot stores its value (which says how to read its word).
    @inline(__always)
    func kind(at slot: Int) -> SlotLayout.Kind { storage.kind(at: slot) }

    /// Stores a raw word in a word slot (how stores fill rows without boxing values).
    @inline(__always)
    mutating func setWord(_ word: UInt64, at slot: Int) {
        makeUnique()
        storage.setWord(word, at: slot)
    }

    /// Hands `body` the row's memory (laid out by `layout`: words, cells, state bytes) to read
    /// many slots at once; valid only during the call.
    @inline(__always)
    func withUnsafeRow<R>(_ body: (UnsafeRawPointer, SlotLayout) throws -> R) rethrows -> R {
        try storage.withUnsafeMutablePointers { header, words in try body(UnsafeRawPointer(words), header.pointee.layout) }
    }

    /// Whether every slot is a word slot holding a value of its canonical type (no nil, no cell,
    /// nothing in the overflow): such values need no per-slot type check.
    var holdsOnlyWords: Bool { storage.holdsOnlyWords }

    /// Writes many slots in one go (how stores fill a row): the storage is made unique once and
    /// `body` sets words and cells through a `SlotRowWriter`, with no per-slot uniqueness check.
    @inline(__always)
    mutating func writeRow<R>(_ body: (SlotRowWriter) throws -> R) rethrows -> R {
        makeUnique()
        return try storage.withRowWriter(body)
    }

    /// Stores a value in a word slot when it is of the slot's canonical type (no boxing, no
    /// conversion); returns false, changing nothing, for a cell slot or any other value.
    @inline(__always)
    mutating func setWordIfCanonical(_ value: Any?, at slot: Int) -> Bool {
        let kind = storage.kind(at: slot)
        guard kind != .cell, let word = SlotStorage.encode(value, kind) else { return false }
        setWord(word, at: slot)
        return true
    }

    @inline(__always)
    private mutating func makeUnique() {
        if !isKnownUniquelyReferenced(&storage) { storage = storage.copy() }
    }
}

/// The storage behind `SlotValues`: a header and `layout.wordCount` words in one allocation.
final class SlotStorage: ManagedBuffer<SlotStorage.Header, UInt64> {
    /// Two words: every object and stored row has one, so each word here is 8 bytes a row. The
    /// layout's tables are read through it (the layout is shared and stays in cache).
    struct Header {
        /// The layout, kept alive by the storage.
        let layout: SlotLayout
        /// Values of word slots that are not of the slot's canonical type, by slot.
        var overflow: [Int: Any]?

        init(layout: SlotLayout) {
            self.layout = layout
        }

        var count: Int { layout.count }
        var kinds: UnsafePointer<SlotLayout.Kind> { UnsafePointer(layout.kindTable) }
        var cellNumbers: UnsafePointer<Int> { UnsafePointer(layout.cellTable) }
        /// Where the cells and the state bytes start, in bytes.
        var cellsByteOffset: Int { layout.cellsOffset * 8 }
        var statesByteOffset: Int { layout.statesOffset * 8 }
    }

    /// State bytes of word slots.
    static let stateNil: UInt8 = 0
    static let stateWord: UInt8 = 1
    static let stateOverflow: UInt8 = 2

    /// The storage with no slots; never written (a write copies it first).
    nonisolated(unsafe) static let empty = make(layout: .empty)

    /// New storage with every slot nil.
    static func make(layout: SlotLayout) -> SlotStorage {
        let storage = unsafeDowncast(create(minimumCapacity: layout.wordCount) { _ in Header(layout: layout) }, to: SlotStorage.self)
        storage.withUnsafeMutablePointerToElements { layout.initializeRow(at: UnsafeMutableRawPointer($0)) }
        return storage
    }

    /// New storage holding a copy of a batch row laid out by `layout` (words and cells, the cells
    /// copied, so retained), with each word slot's state from `holdsWord`.
    static func make(layout: SlotLayout, copyingBatchRowAt source: UnsafeRawPointer, holdsWord: (Int) -> Bool) -> SlotStorage {
        let storage = unsafeDowncast(create(minimumCapacity: layout.wordCount) { _ in Header(layout: layout) }, to: SlotStorage.self)
        storage.withUnsafeMutablePointerToElements { words in
            let row = UnsafeMutableRawPointer(words)
            layout.initializeWordsAndCells(at: row, copying: source)
            let states = (row + layout.statesOffset * 8).assumingMemoryBound(to: UInt8.self)
            for slot in 0..<layout.count { states[slot] = holdsWord(slot) ? stateWord : stateNil }
        }
        return storage
    }

    /// An independent copy (copy-on-write).
    func copy() -> SlotStorage {
        let layout = self.layout
        let header = withUnsafeMutablePointerToHeader { $0.pointee }
        let copy = unsafeDowncast(SlotStorage.create(minimumCapacity: layout.wordCount) { _ in header }, to: SlotStorage.self)
        withUnsafeMutablePointerToElements { source in
            copy.withUnsafeMutablePointerToElements { target in
                layout.initializeRow(at: UnsafeMutableRawPointer(target), copying: UnsafeRawPointer(source))
            }
        }
        return copy
    }

    deinit {
        withUnsafeMutablePointers { header, words in header.pointee.layout.deinitializeRow(at: UnsafeMutableRawPointer(words)) }
    }

    /// The layout (read without an exclusivity check).
    var layout: SlotLayout { withUnsafeMutablePointerToHeader { $0.pointee.layout } }
    /// The number of slots.
    var count: Int { withUnsafeMutablePointerToHeader { $0.pointee.count } }

    @inline(__always)
    private static func cell(_ words: UnsafeMutablePointer<UInt64>, _ header: UnsafeMutablePointer<Header>, _ slot: Int) -> UnsafeMutablePointer<Any?> {
        (UnsafeMutableRawPointer(words) + header.pointee.cellsByteOffset + MemoryLayout<Any?>.stride * header.pointee.cellNumbers[slot])
            .assumingMemoryBound(to: Any?.self)
    }

    @inline(__always)
    private static func state(_ words: UnsafeMutablePointer<UInt64>, _ header: UnsafeMutablePointer<Header>, _ slot: Int) -> UnsafeMutablePointer<UInt8> {
        (UnsafeMutableRawPointer(words) + header.pointee.statesByteOffset + slot).assumingMemoryBound(to: UInt8.self)
    }

    @inline(__always)
    func value(at slot: Int) -> Any? {
        withUnsafeMutablePointers { header, words in
            // The storage keeps its layout alive: read it without a retain.
            Unmanaged.passUnretained(header.pointee.layout)._withUnsafeGuaranteedRef { layout in
                layout.value(at: slot, inRow: UnsafeRawPointer(words), state: layout.state(at: slot, inRow: UnsafeRawPointer(words))) { header.pointee.overflow?[$0] ?? nil }
            }
        }
    }

    /// The string a cell slot holds, read in place (see `SlotLayout.string(at:inRow:)`).
    @inline(__always)
    func string(at slot: Int) -> String? {
        withUnsafeMutablePointers { header, words in
            Unmanaged.passUnretained(header.pointee.layout)._withUnsafeGuaranteedRef { layout in
                layout.string(at: slot, inRow: UnsafeRawPointer(words))
            }
        }
    }

    @inline(__always)
    func kind(at slot: Int) -> SlotLayout.Kind {
        withUnsafeMutablePointerToHeader { header in
            assert(slot >= 0 && slot < header.pointee.count, "Slot index out of range")
            return header.pointee.kinds[slot]
        }
    }

    @inline(__always)
    func word(at slot: Int) -> UInt64? {
        withUnsafeMutablePointers { header, words in
            assert(slot >= 0 && slot < header.pointee.count, "Slot index out of range")
            guard header.pointee.kinds[slot] != .cell, Self.state(words, header, slot).pointee == Self.stateWord else { return nil }
            return words[slot]
        }
    }

    @inline(__always)
    func setWord(_ word: UInt64, at slot: Int) {
        withRowWriter { $0.set(word, at: slot) }
    }

    var holdsOnlyWords: Bool {
        withUnsafeMutablePointers { header, words in
            let layout = header.pointee.layout
            guard layout.cellCount == 0 else { return false }
            let states = UnsafeRawPointer(words) + header.pointee.statesByteOffset
            for slot in 0..<header.pointee.count where states.load(fromByteOffset: slot, as: UInt8.self) != Self.stateWord { return false }
            return true
        }
    }

    /// Hands `body` a writer for the word slots; valid only during the call, on unique storage.
    @inline(__always)
    func withRowWriter<R>(_ body: (SlotRowWriter) throws -> R) rethrows -> R {
        try withUnsafeMutablePointers { header, words in
            try body(SlotRowWriter(layout: header.pointee.layout, row: UnsafeMutableRawPointer(words), overflow: header.pointer(to: \.overflow)))
        }
    }

    @inline(__always)
    func setValue(_ value: Any?, at slot: Int) {
        withUnsafeMutablePointers { header, words in
            assert(slot >= 0 && slot < header.pointee.count, "Slot index out of range")
            let kind = header.pointee.kinds[slot]
            if kind == .cell {
                Self.cell(words, header, slot).pointee = value
                return
            }
            let state = Self.state(words, header, slot)
            if state.pointee == Self.stateOverflow { header.pointee.overflow?[slot] = nil }
            if let word = Self.encode(value, kind) {
                words[slot] = word
                state.pointee = Self.stateWord
                return
            }
            guard let value else {
                state.pointee = Self.stateNil
                return
            }
            if header.pointee.overflow == nil { header.pointee.overflow = [:] }
            header.pointee.overflow![slot] = value
            state.pointee = Self.stateOverflow
        }
    }

    /// The value a word holds for a slot kind.
    @inline(__always)
    static func decode(_ word: UInt64, _ kind: SlotLayout.Kind) -> Any {
        switch kind {
        case .int64: Int64(bitPattern: word)
        case .int32: Int32(truncatingIfNeeded: Int64(bitPattern: word))
        case .int16: Int16(truncatingIfNeeded: Int64(bitPattern: word))
        case .bool: word != 0
        case .double: Double(bitPattern: word)
        case .float: Float(bitPattern: UInt32(truncatingIfNeeded: word))
        case .date: Date(timeIntervalSinceReferenceDate: Double(bitPattern: word))
        case .cell: preconditionFailure("A cell slot has no word")
        }
    }

    /// The word for a value of the slot kind's canonical type; nil for any other value.
    @inline(__always)
    static func encode(_ value: Any?, _ kind: SlotLayout.Kind) -> UInt64? {
        switch kind {
        case .int64: ExistentialFastPath.load(optional: value, as: Int64.self).map { UInt64(bitPattern: $0) }
        case .int32: ExistentialFastPath.load(optional: value, as: Int32.self).map { UInt64(bitPattern: Int64($0)) }
        case .int16: ExistentialFastPath.load(optional: value, as: Int16.self).map { UInt64(bitPattern: Int64($0)) }
        case .bool: ExistentialFastPath.load(optional: value, as: Bool.self).map { $0 ? 1 : 0 }
        case .double: ExistentialFastPath.load(optional: value, as: Double.self).map(\.bitPattern)
        case .float: ExistentialFastPath.load(optional: value, as: Float.self).map { UInt64($0.bitPattern) }
        case .date: ExistentialFastPath.load(optional: value, as: Date.self).map(\.timeIntervalSinceReferenceDate.bitPattern)
        case .cell: nil
        }
    }
}

/// Writes one row's slots in place (see `SlotValues.writeRow`, `SlotRowBatch.appendRow`): a word
/// slot's word and its state byte, or a cell, without going through a storage object per slot.
/// Valid only during the call that hands it out.
struct SlotRowWriter {
    private unowned(unsafe) let layout: SlotLayout
    private let row: UnsafeMutableRawPointer
    /// For a batch row, the batch's bits saying which word slots hold a word and the row's first
    /// bit (see `SlotRowBatch`); nil for a storage's row, whose state bytes follow its cells.
    private let presence: (bits: UnsafeMutablePointer<UInt64>, first: Int)?
    /// The storage's overflow table; nil for a batch row, which never holds overflow values.
    private let overflow: UnsafeMutablePointer<[Int: Any]?>?

    /// A writer of a storage's row.
    init(layout: SlotLayout, row: UnsafeMutableRawPointer, overflow: UnsafeMutablePointer<[Int: Any]?>?) {
        self.layout = layout
        self.row = row
        self.presence = nil
        self.overflow = overflow
    }

    /// A writer of a batch row whose slots' bits start at bit `firstBit` of `bits`.
    init(layout: SlotLayout, batchRow row: UnsafeMutableRawPointer, bits: UnsafeMutablePointer<UInt64>, firstBit: Int) {
        self.layout = layout
        self.row = row
        self.presence = (bits, firstBit)
        self.overflow = nil
    }

    /// Stores a word in a word slot (a value of the slot's canonical type, encoded as `SlotStorage.encode` does).
    @inline(__always)
    func set(_ word: UInt64, at slot: Int) {
        assert(slot >= 0 && slot < layout.count && layout.kindTable[slot] != .cell, "Not a word slot")
        row.assumingMemoryBound(to: UInt64.self)[slot] = word
        if let (bits, first) = presence {
            SlotRowBatch.set(first &+ slot, in: bits)
            return
        }
        let state = (row + layout.statesOffset * 8 + slot).assumingMemoryBound(to: UInt8.self)
        if state.pointee == SlotStorage.stateOverflow { overflow?.pointee?[slot] = nil }
        state.pointee = SlotStorage.stateWord
    }

    /// Stores any value in a cell slot.
    @inline(__always)
    func setCell(_ value: Any?, at slot: Int) {
        assert(slot >= 0 && slot < layout.count && layout.kindTable[slot] == .cell, "Not a cell slot")
        UnsafeMutableRawPointer(mutating: layout.cell(at: slot, inRow: row)).assumingMemoryBound(to: Any?.self).pointee = value
    }
}
