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
    /// Where keys come from (entity and store), the fetched entity first.
    private(set) var origins: [SortedRows.Origin]

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
        self.origins = rows.origins
        var maximum: Int64 = -1
        var total = 0
        for chunk in rows.chunks {
            total += chunk.count
            for key in chunk.keys where key > maximum { maximum = key }
        }
        locator = RowLocator(maximumKey: maximum, count: total)
        chunks = rows.chunks.filter { $0.count > 0 }
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
        let section = sectionCounts.index(containing: position)
        return IndexPath(row: position - sectionCounts.prefix(section), section: section)
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

    /// The index of an origin (entity and store), added when new.
    func origin(entity: NSEntityDescription, store: NSPersistentStore) -> Int {
        if let index = origins.firstIndex(where: { $0.entity === entity && $0.store === store }) { return index }
        origins.append(SortedRows.Origin(entity: entity, store: store))
        return origins.count - 1
    }

    // MARK: Internals

    /// Compares a new row (values and key) with a row of a chunk.
    @inline(__always)
    private func compare(_ values: [SortValue], _ key: Int64, toRow row: Int, of chunk: SortedRowsChunk) -> ComparisonResult {
        for (column, descriptor) in descriptors.enumerated() {
            let result = SortValue.compare(values[column], chunk.columns[column][row], by: descriptor)
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
