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
    /// Each descriptor's direction, read once.
    private let ascending: [Bool]
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
        self.ascending = descriptors.map(\.ascending)
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

    /// Inserts a row in sort order, in the section of its name (a new section if needed); throws
    /// when the name's section does not border the row's place.
    func insert(_ key: Int64, values: [SortValue], sectionName: String) throws {
        // The chunk: the first whose last row sorts after the new one (else the last).
        var low = 0
        var high = order.count - 1
        while low < high {
            let middle = (low + high) / 2
            let chunk = chunks[Int(order[middle])]
            if chunk.count == 0 || compare(values, key, toRow: chunk.count - 1, of: chunk) == .orderedAscending { high = middle } else { low = middle + 1 }
        }
        let slot = low
        let id = Int(order[slot])
        var lower = 0
        var upper = chunks[id].count
        while lower < upper {
            let middle = (lower + upper) / 2
            if compare(values, key, toRow: middle, of: chunks[id]) == .orderedAscending { upper = middle } else { lower = middle + 1 }
        }
        let offset = lower
        let position = chunkCounts.prefix(slot) + offset
        let section = try sectionForInsertion(at: position, named: sectionName)
        chunks[id].keys.insert(key, at: offset)
        for (column, value) in values.enumerated() { chunks[id].columns[column].insert(value, at: offset) }
        locator[key] = Int32(id)
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

    /// A row to place: its key, its sort values and its section name.
    struct Entry {
        let key: Int64
        let values: [SortValue]
        let sectionName: String
    }

    /// What a bulk update did: where the removed rows were and where the entries went.
    struct BulkUpdate {
        var oldPlaces: [Int64: (position: Int, section: Int, row: Int)] = [:]
        var newPositions: [Int64: Int] = [:]
    }

    /// Removes the rows of `removing` and places `entering`, rebuilding the index in a few linear
    /// passes: cheaper than row-by-row updates when a change touches many rows. Throws (leaving the
    /// index as it was) when an entry's section does not border its place.
    func bulkUpdate(removing: [Int64], entering unsorted: [Entry]) throws -> BulkUpdate {
        var result = BulkUpdate()
        // Touched keys: a flat mark for dense keys, a set for the rest.
        let total = count
        let denseLimit = Int64(total * 4 + 4096)
        var marks = [Bool](repeating: false, count: Int(max(0, min(denseLimit, (removing.max() ?? -1) + 1))))
        var others = Set<Int64>()
        for key in removing where contains(key) {
            if key >= 0 && key < marks.count { marks[Int(key)] = true } else { others.insert(key) }
        }
        // The rows that stay, flattened (copied in runs), and how many stay in each section.
        var kept = SortedRowsChunk(kinds: kinds, capacity: total)
        var keptPerSection = Array(sectionCounts.counts)
        var position = 0
        var section = 0
        var sectionEnd = sectionNames.isEmpty ? 0 : sectionCounts.counts[0]
        for id in order {
            let chunk = chunks[Int(id)]
            var runStart = 0
            for (row, key) in chunk.keys.enumerated() {
                let touched = key >= 0 && key < marks.count ? marks[Int(key)] : (!others.isEmpty && others.contains(key))
                guard touched else { continue }
                kept.append(contentsOf: chunk, range: runStart..<row)
                runStart = row + 1
                let at = position + row
                while at >= sectionEnd && section < sectionNames.count - 1 {
                    section += 1
                    sectionEnd += sectionCounts.counts[section]
                }
                keptPerSection[section] -= 1
                result.oldPlaces[key] = (at, section, at - (sectionEnd - sectionCounts.counts[section]))
            }
            kept.append(contentsOf: chunk, range: runStart..<chunk.count)
            position += chunk.count
        }
        // Each entry's place among the kept rows (a binary search each), then the entries in that
        // order; entries with the same place are compared with each other.
        var places: [Int] = []
        places.reserveCapacity(unsorted.count)
        for entry in unsorted {
            var low = 0
            var high = kept.count
            while low < high {
                let middle = (low + high) / 2
                if compare(entry.values, entry.key, toRow: middle, of: kept) == .orderedAscending { high = middle } else { low = middle + 1 }
            }
            places.append(low)
        }
        let sequence = unsorted.indices.sorted { a, b in
            if places[a] != places[b] { return places[a] < places[b] }
            return compare(unsorted[a].values, unsorted[a].key, to: unsorted[b].values, unsorted[b].key) == .orderedAscending
        }
        let entries = sequence.map { unsorted[$0] }
        let offsets = sequence.map { places[$0] }
        // Section numbers for the entries: existing ones, then new names.
        var numbers = sectionByName
        var names = sectionNames
        let entrySections = entries.map { entry -> Int in
            if let known = numbers[entry.sectionName] { return known }
            names.append(entry.sectionName)
            numbers[entry.sectionName] = names.count - 1
            return names.count - 1
        }
        // The new order as segments (kept runs split at section ends, and entries), into chunks and
        // section runs; a section that comes back after another is out of order.
        var rows = SortedRows()
        var chunk = SortedRowsChunk(kinds: kinds, capacity: Self.chunkSize)
        var runs: [(number: Int, count: Int)] = []
        var finished = Set<Int>()
        func addRun(_ number: Int, _ count: Int) throws {
            guard count > 0 else { return }
            if runs.last?.number == number {
                runs[runs.count - 1].count += count
                return
            }
            if let last = runs.last { finished.insert(last.number) }
            guard !finished.contains(number) else { throw OutOfOrder(position: 0, name: names[number]) }
            runs.append((number, count))
        }
        func copyKept(_ range: Range<Int>) {
            var start = range.lowerBound
            while start < range.upperBound {
                if chunk.count == Self.chunkSize {
                    rows.chunks.append(chunk)
                    chunk = SortedRowsChunk(kinds: kinds, capacity: Self.chunkSize)
                }
                let end = min(range.upperBound, start + Self.chunkSize - chunk.count)
                chunk.append(contentsOf: kept, range: start..<end)
                start = end
            }
        }
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
                try addRun(keptSection, take)
                keptSectionLeft -= take
                left -= take
            }
        }
        var keptDone = 0
        for (index, entry) in entries.enumerated() {
            let offset = offsets[index]
            try addKeptRuns(offset - keptDone)
            copyKept(keptDone..<offset)
            keptDone = offset
            try addRun(entrySections[index], 1)
            if chunk.count == Self.chunkSize {
                rows.chunks.append(chunk)
                chunk = SortedRowsChunk(kinds: kinds, capacity: Self.chunkSize)
            }
            result.newPositions[entry.key] = keptDone + index
            chunk.keys.append(entry.key)
            for (column, value) in entry.values.enumerated() { chunk.columns[column].append(value) }
        }
        try addKeptRuns(kept.count - keptDone)
        copyKept(keptDone..<kept.count)
        if chunk.count > 0 || rows.chunks.isEmpty { rows.chunks.append(chunk) }
        rows.sections = runs.map { (names[$0.number], $0.count) }
        load(rows)
        return result
    }

    // MARK: Internals

    /// Compares two rows given by values and key.
    @inline(__always)
    private func compare(_ values: [SortValue], _ key: Int64, to otherValues: [SortValue], _ otherKey: Int64) -> ComparisonResult {
        for (column, descriptor) in descriptors.enumerated() {
            let result = SortValue.compare(values[column], otherValues[column], by: descriptor)
            if result != .orderedSame { return result }
        }
        let (a, b) = (SortedRows.tieRank(key), SortedRows.tieRank(otherKey))
        return a < b ? .orderedAscending : (a == b ? .orderedSame : .orderedDescending)
    }

    /// Compares a new row (values and key) with a row of a chunk.
    @inline(__always)
    private func compare(_ values: [SortValue], _ key: Int64, toRow row: Int, of chunk: borrowing SortedRowsChunk) -> ComparisonResult {
        for column in 0..<ascending.count {
            let result = chunk.columns[column].compare(values[column], toRow: row, by: descriptors[column], ascending: ascending[column])
            if result != .orderedSame { return result }
        }
        let (a, b) = (SortedRows.tieRank(key), SortedRows.tieRank(chunk.keys[row]))
        return a < b ? .orderedAscending : (a == b ? .orderedSame : .orderedDescending)
    }

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
        let newID: Int32
        if let free = freeChunks.popLast() {
            newID = free
            chunks[Int(free)] = tail
        } else {
            newID = Int32(chunks.count)
            chunks.append(tail)
        }
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

/// Maps row keys to chunks: a flat array for dense primary keys, a dictionary for the rest.
struct RowLocator {
    private var direct = ContiguousArray<Int32>()
    private var others: [Int64: Int32] = [:]

    init() {}

    /// A locator sized for keys up to `maximumKey` when they are dense enough.
    init(maximumKey: Int64, count: Int) {
        if maximumKey >= 0 && maximumKey <= 4 * Int64(count) + 4096 {
            direct = ContiguousArray(repeating: -1, count: Int(maximumKey) + 1)
        }
    }

    subscript(key: Int64) -> Int32? {
        get {
            if key >= 0 && key < direct.count {
                let id = direct[Int(key)]
                return id < 0 ? nil : id
            }
            return others[key]
        }
        set {
            if key >= 0 && key < direct.count {
                direct[Int(key)] = newValue ?? -1
            } else if key >= 0 && newValue != nil && key < max(2 * Int64(direct.count), 4096) {
                direct.append(contentsOf: repeatElement(-1, count: Int(key) + 1 - direct.count))
                direct[Int(key)] = newValue!
                // Keys kept aside that the flat array now covers move into it.
                for (other, id) in others where other >= 0 && other < direct.count {
                    direct[Int(other)] = id
                    others[other] = nil
                }
            } else {
                others[key] = newValue
            }
        }
    }
}
