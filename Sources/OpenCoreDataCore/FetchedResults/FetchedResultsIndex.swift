import Foundation

/// The ordered rows of a controller's results: row keys in chunks with their sort values, the
/// sections as runs of rows, and a map from key to chunk.
///
/// Finding a row's position, the row at a position, and inserting or removing a row cost
/// O(log N) plus the size of a chunk, so a change to a few rows of a million costs microseconds.
///
/// Invariants: the rows are in the order of `descriptors`, ties broken by `SortedRows.tieRank`;
/// `chunkCounts` holds the row count of each chunk in `order`; `locator[key]` is the chunk holding
/// `key`; the sections partition the rows in order, each row's section named by its section key.
final class FetchedResultsIndex {
    /// Rows per chunk when results are built; a chunk splits past twice that.
    static let chunkSize = 1024

    let descriptors: [NSSortDescriptor]
    let kinds: [SortValue.Kind]
    /// How rows compare, read from the descriptors once.
    private let rowOrder: RowOrder
    private var chunks: [SortedRowsChunk] = []
    private var freeChunks: [Int32] = []
    private var order: [Int32] = []
    private var orderPosition: [Int32] = []
    private var chunkCounts = FenwickTree(counts: [Int]())
    private var locator = RowLocator()

    private(set) var sectionNames: [String] = []
    private var sectionCounts = FenwickTree(counts: [Int]())
    private var sectionByName: [String: Int] = [:]

    /// Builds the index over sorted rows (taking over their chunks).
    init(rows: SortedRows, descriptors: [NSSortDescriptor]) {
        self.descriptors = descriptors
        self.kinds = rows.chunks.first?.columns.map(\.kind) ?? []
        self.rowOrder = RowOrder(descriptors: descriptors)
        load(rows)
    }

    private func load(_ rows: SortedRows) {
        var maximum: Int64 = -1
        var total = 0
        for chunk in rows.chunks {
            total += chunk.count
            for key in chunk.keys where key > maximum { maximum = key }
        }
        locator = RowLocator(maximumKey: maximum, count: total)
        chunks = rows.chunks.filter { $0.count > 0 }
        freeChunks = []
        if chunks.isEmpty { chunks = [SortedRowsChunk(kinds: kinds, capacity: 0)] }
        for (id, chunk) in chunks.enumerated() {
            for key in chunk.keys { locator[key] = Int32(id) }
        }
        order = chunks.indices.map { Int32($0) }
        rebuildChunkOrder()
        sectionNames = rows.sections.map(\.name)
        sectionCounts = FenwickTree(counts: rows.sections.map(\.count))
        rebuildSectionNames()
    }

    // MARK: Reading

    /// The number of rows.
    var count: Int { chunkCounts.total }

    /// The number of rows of each section.
    var sectionRowCounts: ContiguousArray<Int> { sectionCounts.counts }

    /// The index of the first row of a section.
    func sectionStart(_ section: Int) -> Int { sectionCounts.prefix(section) }

    /// The index of a section by name.
    func section(named name: String) -> Int? { sectionByName[name] }

    /// Whether a key is in the results.
    func contains(_ key: Int64) -> Bool { locator[key] != nil }

    /// The position of a row, or nil when the key is not in the results.
    func position(of key: Int64) -> Int? {
        guard let id = locator[key], let offset = chunks[Int(id)].keys.firstIndex(of: key) else { return nil }
        return chunkCounts.prefix(Int(orderPosition[Int(id)])) + offset
    }

    /// The index path of the row at a position.
    func indexPath(at position: Int) -> IndexPath {
        let (section, row) = sectionAndRow(at: position)
        return IndexPath(row: row, section: section)
    }

    /// The section and row of the row at a position.
    func sectionAndRow(at position: Int) -> (section: Int, row: Int) {
        let section = sectionCounts.index(containing: position)
        return (section, position - sectionCounts.prefix(section))
    }

    /// The position of an index path's row, or nil when it is out of range.
    func position(of indexPath: IndexPath) -> Int? {
        guard indexPath.count == 2, indexPath.section >= 0, indexPath.section < sectionNames.count,
              indexPath.row >= 0, indexPath.row < sectionCounts.counts[indexPath.section] else { return nil }
        return sectionCounts.prefix(indexPath.section) + indexPath.row
    }

    /// The key of the row at a position.
    func key(at position: Int) -> Int64 {
        let slot = chunkCounts.index(containing: position)
        return chunks[Int(order[slot])].keys[position - chunkCounts.prefix(slot)]
    }

    /// The keys of the rows in a range of positions, in order.
    func keys(in range: Range<Int>) -> [Int64] {
        guard !range.isEmpty else { return [] }
        var result: [Int64] = []
        result.reserveCapacity(range.count)
        var slot = chunkCounts.index(containing: range.lowerBound)
        var offset = range.lowerBound - chunkCounts.prefix(slot)
        while result.count < range.count && slot < order.count {
            let keys = chunks[Int(order[slot])].keys
            let take = min(keys.count - offset, range.count - result.count)
            result.append(contentsOf: keys[offset..<(offset + take)])
            slot += 1
            offset = 0
        }
        return result
    }

    /// All keys, in order.
    var allKeys: [Int64] { keys(in: 0..<count) }

    /// The keys in order as they are now, to read later (from any thread): the chunks' key arrays
    /// are shared, not copied (copy on write keeps them as they are when the index changes).
    var keysToReadLater: UncheckedSendable<() -> [Int64]> {
        let keyArrays = order.map { chunks[Int($0)].keys }
        return UncheckedSendable { Array(keyArrays.joined()) }
    }

    // MARK: Changing

    /// Why a row can't be placed: its section name is not grouped by the sort.
    struct OutOfOrder: Error {
        let position: Int
        let name: String
    }

    /// Removes a row; returns false when the key is not in the results. Its section may be left
    /// empty until `removeEmptySections()`.
    @discardableResult
    func remove(_ key: Int64) -> Bool {
        guard let id = locator[key], let offset = chunks[Int(id)].keys.firstIndex(of: key) else { return false }
        let slot = Int(orderPosition[Int(id)])
        let position = chunkCounts.prefix(slot) + offset
        sectionCounts.add(-1, at: sectionCounts.index(containing: position))
        chunks[Int(id)].keys.remove(at: offset)
        for column in chunks[Int(id)].columns.indices { chunks[Int(id)].columns[column].remove(at: offset) }
        locator[key] = nil
        chunkCounts.add(-1, at: slot)
        if chunks[Int(id)].count == 0 && order.count > 1 {
            order.remove(at: slot)
            freeChunks.append(id)
            rebuildChunkOrder()
        }
        return true
    }

    /// Inserts row `row` of `rows` (its key and sort values) in sort order, in the section of its
    /// name (a new section if needed); throws when the name's section does not border its place.
    func insert(row: Int, of rows: SortedRowsChunk, sectionName: String) throws {
        let (slot, offset) = place(ofRow: row, of: rows)
        let id = Int(order[slot])
        let position = chunkCounts.prefix(slot) + offset
        let section = try sectionForInsertion(at: position, named: sectionName)
        chunks[id].insert(row: row, of: rows, at: offset)
        locator[rows.keys[row]] = Int32(id)
        chunkCounts.add(1, at: slot)
        sectionCounts.add(1, at: section)
        if chunks[id].count > 2 * Self.chunkSize { split(slot: slot) }
    }

    /// Drops sections left without rows.
    func removeEmptySections() {
        guard sectionCounts.counts.contains(0) else { return }
        let kept = sectionNames.indices.filter { sectionCounts.counts[$0] > 0 }
        sectionNames = kept.map { sectionNames[$0] }
        sectionCounts = FenwickTree(counts: kept.map { sectionCounts.counts[$0] })
        rebuildSectionNames()
    }

    /// Gives a row a new key (an object's temporary ID became permanent) without moving it.
    func rekey(_ old: Int64, to new: Int64) {
        guard let id = locator[old], let offset = chunks[Int(id)].keys.firstIndex(of: old) else { return }
        chunks[Int(id)].keys[offset] = new
        locator[old] = nil
        locator[new] = id
    }

    /// What a bulk update did: where each removed row was (nil when its key was not in the
    /// results) and where each entry went, in the order they were given.
    struct BulkUpdate {
        var oldPlaces: [(position: Int, section: Int, row: Int)?] = []
        var newPositions: [Int] = []
    }

    /// Removes the rows of `removing` and places `entering` in one pass over the chunks they
    /// touch: each touched chunk is merged once (its removed rows dropped, its new rows put in
    /// place), split when it grows past twice the chunk size, dropped when emptied; untouched
    /// chunks are not copied and only moved keys are relocated. Cheaper than row-by-row updates
    /// when a change touches many rows. Throws (leaving the index as it was) when an entry's
    /// section does not border its place.
    func bulkUpdate(removing: [Int64], entering: SortedRowsChunk, sectionNames enteringNames: [String]) throws -> BulkUpdate {
        var result = BulkUpdate()
        // Where each chunk started before the change.
        var chunkStarts = [Int](repeating: 0, count: order.count)
        var running = 0
        for slot in order.indices {
            chunkStarts[slot] = running
            running += chunks[Int(order[slot])].count
        }
        // The removed rows, by chunk slot and offset, in order.
        let removed = locateRemovals(removing)
        result.oldPlaces = [(position: Int, section: Int, row: Int)?](repeating: nil, count: removing.count)
        var keptPerSection = Array(sectionCounts.counts)
        for row in removed {
            let position = chunkStarts[row.slot] + row.offset
            let section = sectionCounts.index(containing: position)
            keptPerSection[section] -= 1
            result.oldPlaces[row.input] = (position, section, position - sectionCounts.prefix(section))
        }
        // The entries in order, and each one's place among the old rows (its slot and the offset
        // of the first row that sorts after it).
        let (sequence, places) = orderedPlaces(of: entering)
        // Section numbers for the entries (existing ones, then new names), and the new section
        // runs: the kept rows' sections with the entries between them; a section that comes back
        // after another is out of order. Only the runs are walked, never the rows.
        var numbers = sectionByName
        var names = sectionNames
        var runs = SectionRunBuilder()
        var keptSection = 0
        var keptSectionLeft = keptPerSection.first ?? 0
        func addKeptRuns(_ count: Int) throws {
            var left = count
            while left > 0 {
                while keptSectionLeft == 0 {
                    keptSection += 1
                    keptSectionLeft = keptPerSection[keptSection]
                }
                let take = min(left, keptSectionLeft)
                try runs.add(keptSection, take, names: names)
                keptSectionLeft -= take
                left -= take
            }
        }
        result.newPositions = [Int](repeating: 0, count: entering.count)
        var keptDone = 0
        var removedBefore = 0
        for (rank, input) in sequence.enumerated() {
            let (slot, offset) = (Int(places[input].slot), Int(places[input].offset))
            let oldPosition = chunkStarts[slot] + offset
            while removedBefore < removed.count && chunkStarts[removed[removedBefore].slot] + removed[removedBefore].offset < oldPosition { removedBefore += 1 }
            let keptRank = oldPosition - removedBefore
            try addKeptRuns(keptRank - keptDone)
            keptDone = keptRank
            let name = enteringNames[input]
            let number: Int
            if let known = numbers[name] {
                number = known
            } else {
                names.append(name)
                number = names.count - 1
                numbers[name] = number
            }
            try runs.add(number, 1, names: names)
            result.newPositions[input] = keptRank + rank
        }
        try addKeptRuns(running - removed.count - keptDone)

        // Nothing is changed before this point. The touched chunks, each merged once, in order.
        for row in removed { locator[chunks[Int(order[row.slot])].keys[row.offset]] = nil }
        var newOrder: [Int32] = []
        newOrder.reserveCapacity(order.count + entering.count / Self.chunkSize + 1)
        var nextRemoved = 0
        var nextEntry = 0
        var segments: [SortedRowsChunk.Segment] = []
        for slot in order.indices {
            let id = order[slot]
            let removedStart = nextRemoved
            while nextRemoved < removed.count && removed[nextRemoved].slot == slot { nextRemoved += 1 }
            let entryStart = nextEntry
            while nextEntry < sequence.count && Int(places[sequence[nextEntry]].slot) == slot { nextEntry += 1 }
            guard removedStart < nextRemoved || entryStart < nextEntry else {
                newOrder.append(id)
                continue
            }
            // The chunk's kept runs and its entering rows, in order, then copied in one pass.
            let old = chunks[Int(id)]
            segments.removeAll(keepingCapacity: true)
            var runStart = 0
            var removal = removedStart
            func keep(upTo end: Int) {
                if end > runStart { segments.append(SortedRowsChunk.Segment(fromSecond: false, range: runStart..<end)) }
            }
            for index in entryStart..<nextEntry {
                let input = sequence[index]
                let offset = Int(places[input].offset)
                while removal < nextRemoved && removed[removal].offset < offset {
                    keep(upTo: removed[removal].offset)
                    runStart = removed[removal].offset + 1
                    removal += 1
                }
                keep(upTo: offset)
                runStart = max(runStart, offset)
                segments.append(SortedRowsChunk.Segment(fromSecond: true, range: input..<(input + 1)))
                locator[entering.keys[input]] = id
            }
            while removal < nextRemoved {
                keep(upTo: removed[removal].offset)
                runStart = removed[removal].offset + 1
                removal += 1
            }
            keep(upTo: old.count)
            var merged = SortedRowsChunk(kinds: kinds, segments: segments, of: old, entering)
            if merged.count == 0 {
                freeChunks.append(id)
                chunks[Int(id)] = SortedRowsChunk(kinds: kinds, capacity: 0)
                continue
            }
            // A chunk past twice the chunk size is cut into pieces of about the chunk size.
            let pieces = merged.count > 2 * Self.chunkSize ? merged.count / Self.chunkSize : 1
            var tails: [SortedRowsChunk] = []
            for piece in stride(from: pieces - 1, to: 0, by: -1) {
                tails.append(merged.split(at: merged.count * piece / pieces))
            }
            chunks[Int(id)] = merged
            newOrder.append(id)
            for tail in tails.reversed() {
                let tailID = store(tail)
                for key in tail.keys { locator[key] = tailID }
                newOrder.append(tailID)
            }
        }
        if newOrder.isEmpty {
            // Every row left: keep one empty chunk.
            let id = freeChunks.popLast() ?? order[0]
            chunks[Int(id)] = SortedRowsChunk(kinds: kinds, capacity: 0)
            newOrder = [id]
        }
        order = newOrder
        rebuildChunkOrder()
        let newNames = runs.runs.map { names[$0.number] }
        if newNames != sectionNames {
            sectionNames = newNames
            rebuildSectionNames()
        }
        sectionCounts = FenwickTree(counts: runs.runs.map(\.count))
        return result
    }

    /// The removed rows that are in the results: their slot and offset (in order) and their index
    /// in `keys`. A chunk with a few of them is searched for each; one with many is scanned once.
    private func locateRemovals(_ keys: [Int64]) -> [(slot: Int, offset: Int, input: Int)] {
        var bySlot: [(slot: Int, input: Int)] = []
        bySlot.reserveCapacity(keys.count)
        for (input, key) in keys.enumerated() {
            guard let id = locator[key] else { continue }
            bySlot.append((Int(orderPosition[Int(id)]), input))
        }
        bySlot.sort { $0.slot < $1.slot }
        var result: [(slot: Int, offset: Int, input: Int)] = []
        result.reserveCapacity(bySlot.count)
        var found: [(offset: Int, input: Int)] = []
        // Dense keys (the common case) are marked in a bit set: then each chunk with several
        // removals is scanned once, testing bits, until all of them are found.
        let marks = KeyMarks(keys: keys, count: count)
        var start = 0
        while start < bySlot.count {
            let slot = bySlot[start].slot
            var end = start + 1
            while end < bySlot.count && bySlot[end].slot == slot { end += 1 }
            let chunkKeys = chunks[Int(order[slot])].keys
            found.removeAll(keepingCapacity: true)
            if end - start <= 2 {
                for item in bySlot[start..<end] {
                    if let offset = chunkKeys.firstIndex(of: keys[item.input]) { found.append((offset, item.input)) }
                }
                found.sort { $0.offset < $1.offset }
            } else {
                // The group's keys sorted, to find the index in `keys` of each key found.
                let group = bySlot[start..<end].map { (key: keys[$0.input], input: $0.input) }.sorted { $0.key < $1.key }
                func input(of key: Int64) -> Int? {
                    var low = 0
                    var high = group.count
                    while low < high {
                        let middle = (low + high) / 2
                        if group[middle].key < key { low = middle + 1 } else { high = middle }
                    }
                    return low < group.count && group[low].key == key ? group[low].input : nil
                }
                if let marks, group.allSatisfy({ marks.contains($0.key) }) {
                    marks.scan(chunkKeys, stoppingAfter: group.count) { offset, key in
                        if let input = input(of: key) { found.append((offset, input)) }
                    }
                } else {
                    for (offset, key) in chunkKeys.enumerated() {
                        if let input = input(of: key) { found.append((offset, input)) }
                    }
                }
            }
            var previous = -1
            for item in found where item.offset != previous {
                previous = item.offset
                result.append((slot, item.offset, item.input))
            }
            start = end
        }
        return result
    }

    /// Where row `row` of `rows` goes among the rows: the slot of the first chunk whose last row
    /// sorts after it (else the last), and the offset of the first row there that sorts after it.
    private func place(ofRow row: Int, of rows: borrowing SortedRowsChunk) -> (slot: Int, offset: Int) {
        // Rows are compared through pointers to their chunks, each value read straight from its
        // column's storage: no chunk or column is copied, so no reference counting per comparison.
        let order = self.order
        let rowOrder = self.rowOrder
        return withUnsafePointer(to: rows) { rows in
            chunks.withUnsafeBufferPointer { chunks in
                var low = 0
                var high = order.count - 1
                while low < high {
                    let middle = (low + high) / 2
                    let id = Int(order[middle])
                    if rowOrder.sortsBefore(row, of: rows, chunks[id].keys.count - 1, of: chunks.baseAddress! + id) { high = middle } else { low = middle + 1 }
                }
                let chunk = chunks.baseAddress! + Int(order[low])
                return (low, rowOrder.firstRow(after: row, of: rows, in: chunk, from: 0))
            }
        }
    }

    /// The rows of a chunk in order, and each row's place among the indexed rows (by row index):
    /// its chunk slot and the offset of the first row there that sorts after it.
    ///
    /// The rows are sorted among themselves first (they are few and close together), then placed
    /// in one walk over the chunks in order: each chunk is visited once, and a row's search starts
    /// where the previous row's ended. Placing rows one by one in random order would instead jump
    /// between chunks, and memory misses, not comparisons, would set the cost.
    private func orderedPlaces(of rows: borrowing SortedRowsChunk) -> (sequence: [Int], places: [(slot: Int32, offset: Int32)]) {
        let order = self.order
        let rowOrder = self.rowOrder
        var sequence = Array(0..<rows.count)
        var places = [(slot: Int32, offset: Int32)](repeating: (0, 0), count: rows.count)
        withUnsafePointer(to: rows) { rows in
            sequence.sort { rowOrder.sortsBefore($0, of: rows, $1, of: rows) }
            chunks.withUnsafeBufferPointer { chunks in
                guard let base = chunks.baseAddress else { return }
                var slot = 0
                var lower = 0
                for row in sequence {
                    // The first chunk whose last row sorts after this row (else the last chunk).
                    var movedOn = false
                    while slot < order.count - 1 {
                        let id = Int(order[slot])
                        let last = base[id].keys.count - 1
                        if last >= 0 && rowOrder.sortsBefore(row, of: rows, last, of: base + id) { break }
                        slot += 1
                        movedOn = true
                    }
                    if movedOn { lower = 0 }
                    lower = rowOrder.firstRow(after: row, of: rows, in: base + Int(order[slot]), from: lower)
                    places[row] = (Int32(slot), Int32(lower))
                }
            }
        }
        return (sequence, places)
    }

    /// Puts a chunk in a free slot of `chunks` (or a new one) and returns its id.
    private func store(_ chunk: SortedRowsChunk) -> Int32 {
        if let free = freeChunks.popLast() {
            chunks[Int(free)] = chunk
            return free
        }
        chunks.append(chunk)
        return Int32(chunks.count - 1)
    }

    // MARK: Internals

    /// The section a row at `position` named `name` joins, inserting a new one at a boundary.
    private func sectionForInsertion(at position: Int, named name: String) throws -> Int {
        if let section = sectionByName[name] {
            let start = sectionCounts.prefix(section)
            guard position >= start && position <= start + sectionCounts.counts[section] else { throw OutOfOrder(position: position, name: name) }
            return section
        }
        let containing = sectionCounts.index(containing: position)
        var section = containing
        if containing < sectionNames.count {
            let start = sectionCounts.prefix(containing)
            guard start == position else { throw OutOfOrder(position: position, name: name) }
            // Empty sections just before keep their place before the new one.
        } else {
            section = sectionNames.count
        }
        sectionNames.insert(name, at: section)
        var counts = Array(sectionCounts.counts)
        counts.insert(0, at: section)
        sectionCounts = FenwickTree(counts: counts)
        rebuildSectionNames()
        return section
    }

    private func split(slot: Int) {
        let id = Int(order[slot])
        let tail = chunks[id].split(at: chunks[id].count / 2)
        let newID = store(tail)
        for key in tail.keys { locator[key] = newID }
        order.insert(newID, at: slot + 1)
        rebuildChunkOrder()
    }

    private func rebuildChunkOrder() {
        orderPosition = [Int32](repeating: -1, count: chunks.count)
        for (slot, id) in order.enumerated() { orderPosition[Int(id)] = Int32(slot) }
        chunkCounts = FenwickTree(counts: order.map { chunks[Int($0)].count })
    }

    private func rebuildSectionNames() {
        sectionByName = Dictionary(sectionNames.enumerated().map { ($0.element, $0.offset) }, uniquingKeysWith: { first, _ in first })
    }
}

/// Orders rows of chunks by the sort descriptors, then by `SortedRows.tieRank` of their keys.
///
/// Rows are given as pointers to their chunks and read field by field from the columns' storage,
/// which keeps comparisons free of copies and reference counting: they are the inner loop of
/// placing changed rows.
private struct RowOrder {
    let descriptors: [NSSortDescriptor]
    let ascending: [Bool]
    /// Per column: the string order of a descriptor with a string selector (`compare:` when none)
    /// and no comparator, whose strings are compared in place; nil for any other descriptor.
    let stringOrders: [StringComparison.Order?]

    init(descriptors: [NSSortDescriptor]) {
        self.descriptors = descriptors
        ascending = descriptors.map(\.ascending)
        stringOrders = descriptors.map { descriptor in
            guard descriptor.comparator == nil else { return nil }
            return StringComparison.Order(selectorName: descriptor.selector?.description ?? "compare:")
        }
    }

    /// Whether row `row` of `rows` sorts before row `otherRow` of `others` (chunks with the same
    /// column kinds).
    @inline(__always)
    func sortsBefore(_ row: Int, of rows: UnsafePointer<SortedRowsChunk>, _ otherRow: Int, of others: UnsafePointer<SortedRowsChunk>) -> Bool {
        for column in 0..<ascending.count {
            let result: ComparisonResult
            // The columns are read in place: a column copied out of its array would be retained
            // and released around each string comparison's call.
            let (mine, theirs) = (rows.pointee.columnAddress(column), others.pointee.columnAddress(column))
            switch mine.pointee.kind {
            case .integer:
                let (isNull, otherIsNull) = (mine.pointee.integerNulls[row], theirs.pointee.integerNulls[otherRow])
                if isNull || otherIsNull {
                    result = isNull == otherIsNull ? .orderedSame : (isNull ? .orderedAscending : .orderedDescending)
                } else {
                    let (number, otherNumber) = (mine.pointee.integers[row], theirs.pointee.integers[otherRow])
                    result = number < otherNumber ? .orderedAscending : (number == otherNumber ? .orderedSame : .orderedDescending)
                }
            case .double:
                let (number, otherNumber) = (mine.pointee.doubles[row], theirs.pointee.doubles[otherRow])
                if number.isNaN || otherNumber.isNaN {
                    result = number.isNaN == otherNumber.isNaN ? .orderedSame : (number.isNaN ? .orderedAscending : .orderedDescending)
                } else {
                    result = number < otherNumber ? .orderedAscending : (number == otherNumber ? .orderedSame : .orderedDescending)
                }
            case .string where stringOrders[column] != nil:
                let bytes = mine.pointee.strings.unsafeRow(row)
                let otherBytes = theirs.pointee.strings.unsafeRow(otherRow)
                result = UTF8Column.compare(bytes, otherBytes, by: stringOrders[column].unsafelyUnwrapped)
            case .string, .other:
                // Through the descriptor, which honours its own direction.
                let order = SortValue.compare(mine.pointee[row], theirs.pointee[otherRow], by: descriptors[column])
                if order == .orderedSame { continue }
                return order == .orderedAscending
            }
            if result != .orderedSame { return (result == .orderedAscending) == ascending[column] }
        }
        return SortedRows.tieRank(rows.pointee.keys[row]) < SortedRows.tieRank(others.pointee.keys[otherRow])
    }

    /// The offset of the first row of `chunk`, at or after `lower`, that row `row` of `rows` sorts
    /// before (the chunk's count when none), by binary search; the caller knows that `row` sorts
    /// before none of the rows before `lower`.
    @inline(__always)
    func firstRow(after row: Int, of rows: UnsafePointer<SortedRowsChunk>, in chunk: UnsafePointer<SortedRowsChunk>, from lower: Int) -> Int {
        var lower = lower
        var upper = chunk.pointee.keys.count
        while lower < upper {
            let middle = (lower + upper) / 2
            if sortsBefore(row, of: rows, middle, of: chunk) { upper = middle } else { lower = middle + 1 }
        }
        return lower
    }
}

/// Section runs built from section numbers in row order: consecutive rows of one section form a
/// run; a section that comes back after another is out of order.
private struct SectionRunBuilder {
    private(set) var runs: [(number: Int, count: Int)] = []
    private var finished = Set<Int>()

    /// Adds `count` rows of section `number` (`names` names the sections, for the error).
    mutating func add(_ number: Int, _ count: Int, names: [String]) throws {
        guard count > 0 else { return }
        if runs.last?.number == number {
            runs[runs.count - 1].count += count
            return
        }
        if let last = runs.last { finished.insert(last.number) }
        guard !finished.contains(number) else { throw FetchedResultsIndex.OutOfOrder(position: 0, name: names[number]) }
        runs.append((number, count))
    }
}

/// A set of row keys as a bit set over the key range (at most 8 bytes a row): for the non-negative
/// keys of a list whose largest key is not far above the number of rows (nil otherwise). Negative
/// keys (unsaved objects) are not marked.
private struct KeyMarks {
    private let bits: [UInt64]
    private let limit: Int64

    init?(keys: [Int64], count: Int) {
        guard let maximum = keys.max(), maximum >= 0, maximum <= 64 * Int64(count + keys.count) + 65_536 else { return nil }
        limit = maximum + 1
        var bits = [UInt64](repeating: 0, count: Int(limit + 63) / 64)
        for key in keys where key >= 0 { bits[Int(key >> 6)] |= 1 << UInt64(key & 63) }
        self.bits = bits
    }

    /// Whether a key is marked.
    @inline(__always)
    func contains(_ key: Int64) -> Bool {
        key >= 0 && key < limit && bits[Int(key >> 6)] & (1 << UInt64(key & 63)) != 0
    }

    /// Calls `found` with the offset and key of each marked key of `keys`, in order, until
    /// `count` were found.
    func scan(_ keys: ContiguousArray<Int64>, stoppingAfter count: Int, _ found: (Int, Int64) -> Void) {
        var left = count
        // Every key of a chunk is tested: one unsigned comparison (negative keys wrap above the
        // limit) and one bit read through a pointer, no bounds checks.
        let limit = UInt64(self.limit)
        keys.withUnsafeBufferPointer { keys in
            bits.withUnsafeBufferPointer { bits in
                for offset in 0..<keys.count {
                    let key = UInt64(bitPattern: keys[offset])
                    guard key < limit, bits[Int(key >> 6)] & (1 << (key & 63)) != 0 else { continue }
                    found(offset, keys[offset])
                    left -= 1
                    if left == 0 { return }
                }
            }
        }
    }
}

/// Maps row keys to chunks: a flat array of 2-byte chunk ids for dense primary keys, a dictionary
/// for the rest.
///
/// Two bytes a key, not four: a controller over a million rows keeps this for its life. Chunk ids
/// are small (a chunk holds thousands of rows and freed ids are reused), so an id that doesn't
/// fit, `absent` or above, is kept in `others` with its key's flat entry `absent`.
///
/// Invariant: a key has an id in at most one of `direct` and `others`.
struct RowLocator {
    private var direct = ContiguousArray<UInt16>()
    private var others: [Int64: Int32] = [:]
    /// A flat entry with no id (or one kept in `others`).
    private static let absent = UInt16.max

    init() {}

    /// A locator sized for keys up to `maximumKey` when they are dense enough.
    init(maximumKey: Int64, count: Int) {
        if maximumKey >= 0 && maximumKey <= 4 * Int64(count) + 4096 {
            direct = ContiguousArray(repeating: Self.absent, count: Int(maximumKey) + 1)
        }
    }

    subscript(key: Int64) -> Int32? {
        get {
            if key >= 0 && key < direct.count {
                let id = direct[Int(key)]
                if id != Self.absent { return Int32(id) }
                return others.isEmpty ? nil : others[key]
            }
            return others[key]
        }
        set {
            if key >= 0 && key < direct.count {
                setFlat(key, newValue)
            } else if key >= 0 && newValue != nil && key < max(2 * Int64(direct.count), 4096) {
                direct.append(contentsOf: repeatElement(Self.absent, count: Int(key) + 1 - direct.count))
                // Keys kept aside that the flat array now covers move into it.
                for (other, id) in others where other >= 0 && other < direct.count && id < Int32(Self.absent) {
                    direct[Int(other)] = UInt16(id)
                    others[other] = nil
                }
                setFlat(key, newValue)
            } else {
                others[key] = newValue
            }
        }
    }

    /// Sets the id of a key inside the flat array: there when it fits, else in `others`.
    private mutating func setFlat(_ key: Int64, _ id: Int32?) {
        if let id, id >= 0, id < Int32(Self.absent) {
            direct[Int(key)] = UInt16(id)
            if !others.isEmpty { others[key] = nil }
        } else {
            direct[Int(key)] = Self.absent
            if id != nil || !others.isEmpty { others[key] = id }
        }
    }
}
