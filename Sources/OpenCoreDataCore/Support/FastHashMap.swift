/// A key with a cheap hash for `FastHashMap`: equal keys must have equal `fastHash`es; the map
/// scrambles the bits itself, so the hash only needs to differ between keys. The low four bits
/// place a key within a block of buckets: keys that come in runs should differ there (and keys
/// must not all share them).
protocol FastHashable: Equatable {
    var fastHash: UInt64 { get }
}

/// A hash map for the object graph's hot identity tables (the context's registered objects, its
/// change lists): open addressing with linear probing and backward-shift deletion, indexed by a
/// multiplicative (Fibonacci) scramble of the key's `fastHash` instead of `Hasher`'s SipHash,
/// which dominated inserting and fetching many objects.
///
/// The keys here are identities chosen by the program (object addresses, primary keys), not
/// input an attacker controls, so a seeded hash buys nothing. Iteration order is unspecified.
struct FastHashMap<Key: FastHashable, Value>: ExpressibleByDictionaryLiteral {
    private struct Entry {
        let key: Key
        var value: Value
    }

    private var entries: [Entry?] = []
    /// `entries.count - 1`; the capacity is a power of two (or zero).
    private var mask = -1
    private var shift: UInt64 = 64
    private(set) var count = 0

    init() {}

    init(dictionaryLiteral elements: (Key, Value)...) {
        for (key, value) in elements { self[key] = value }
    }

    var isEmpty: Bool { count == 0 }

    /// The values, in unspecified order (a snapshot: the map may change while it is iterated).
    var values: [Value] { entries.compactMap { $0?.value } }

    /// Makes room for at least `capacity` entries without growing.
    mutating func reserveCapacity(_ capacity: Int) {
        if capacity * 4 > entries.count * 3 { resize(minimumCapacity: capacity) }
    }

    subscript(key: Key) -> Value? {
        get {
            guard let index = find(key) else { return nil }
            return entries[index]!.value
        }
        set {
            if let newValue {
                insert(newValue, forKey: key)
            } else {
                removeValue(forKey: key)
            }
        }
    }

    /// Adds every entry of another map; its values replace those of keys already present.
    mutating func merge(_ other: FastHashMap) {
        reserveCapacity(count + other.count)
        for case let entry? in other.entries { insert(entry.value, forKey: entry.key) }
    }

    /// Removes a key; returns the value it had.
    @discardableResult
    mutating func removeValue(forKey key: Key) -> Value? {
        guard var hole = find(key) else { return nil }
        count -= 1
        let (mask, shift) = (self.mask, self.shift)
        return entries.withUnsafeMutableBufferPointer { entries in
            let removed = entries[hole].take()!.value
            // Backward-shift deletion: move later entries of the probe run into the hole, so that
            // lookups never need tombstones. Entries are moved, not copied (a copy would retain
            // and release the value), and only keys are read while scanning.
            var index = (hole + 1) & mask
            while let candidate = entries[index]?.key {
                let home = Self.home(of: candidate, shift: shift)
                // The entry may move to the hole if the hole lies on its probe path (home…index).
                if (index - home) & mask >= (index - hole) & mask {
                    entries[hole] = entries[index].take()
                    hole = index
                }
                index = (index + 1) & mask
            }
            return removed
        }
    }

    /// A key's first bucket: the hash's low four bits pick a bucket within a block of 16, the
    /// scrambled rest picks the block. Keys that differ only in their low four bits (a run of
    /// primary keys fetched together) fill neighbouring buckets, so filling, probing and emptying
    /// the table for a run touches a few cache lines instead of one per key.
    @inline(__always)
    private func home(of key: Key) -> Int {
        Self.home(of: key, shift: shift)
    }

    @inline(__always)
    private static func home(of key: Key, shift: UInt64) -> Int {
        let hash = key.fastHash
        // Tables of fewer than 16 buckets have no blocks.
        guard shift <= 60 else { return Int(truncatingIfNeeded: (hash &* 0x9E37_79B9_7F4A_7C15) >> shift) }
        let block = ((hash >> 4) &* 0x9E37_79B9_7F4A_7C15) >> (shift + 4)
        return Int(truncatingIfNeeded: block << 4 | (hash & 15))
    }

    @inline(__always)
    private func find(_ key: Key) -> Int? {
        guard count > 0 else { return nil }
        var index = home(of: key)
        // Only the key is read while probing (copying whole entries would retain their values).
        while let candidate = entries[index]?.key {
            if candidate == key { return index }
            index = (index + 1) & mask
        }
        return nil
    }

    /// Where a key is, or the empty position it would go to (with room for one more entry made
    /// first): one probe run both to look up and to add.
    @inline(__always)
    private mutating func position(for key: Key) -> (index: Int, found: Bool) {
        if (count + 1) * 4 > entries.count * 3 { resize(minimumCapacity: count + 1) }
        var index = home(of: key)
        while let candidate = entries[index]?.key {
            if candidate == key { return (index, true) }
            index = (index + 1) & mask
        }
        return (index, false)
    }

    private mutating func insert(_ value: Value, forKey key: Key) {
        let (index, found) = position(for: key)
        if found {
            entries[index]!.value = value
            return
        }
        entries[index] = Entry(key: key, value: value)
        count += 1
    }

    /// Adds a key known to be absent to a table with room for it (rehashing).
    private mutating func addAbsent(_ value: Value, forKey key: Key) {
        var index = home(of: key)
        while entries[index]?.key != nil { index = (index + 1) & mask }
        entries[index] = Entry(key: key, value: value)
        count += 1
    }

    /// Rehashes into a table with a load factor of at most 3/4 for `minimumCapacity` entries
    /// (and at least double the current size, so growth is amortized).
    private mutating func resize(minimumCapacity: Int) {
        var size = max(8, entries.count * 2)
        while minimumCapacity * 4 > size * 3 { size *= 2 }
        var old = entries
        entries = Array(repeating: nil, count: size)
        mask = size - 1
        shift = UInt64(64 - size.trailingZeroBitCount)
        count = 0
        Self.moveEntries(out: &old) { addAbsent($0.value, forKey: $0.key) }
    }

    /// Hands `body` each entry of `entries`, moved out, leaving `entries` all nil. Moving, not
    /// copying: a copy would retain and release every value, touching each object in hash order.
    private static func moveEntries(out entries: inout [Entry?], _ body: (Entry) -> Void) {
        entries.withUnsafeMutableBufferPointer { entries in
            for index in entries.indices {
                if let entry = entries[index].take() { body(entry) }
            }
        }
    }
}

extension FastHashMap {
    /// Empties the map and returns its values, moved out in table order (no copy, so no retain):
    /// sorted by address (`sortByAddress()`) before they are released or visited, they sweep the
    /// heap forward instead of jumping across it in hash order.
    mutating func removeAllValues() -> [Value] {
        var old = entries
        var values: [Value] = []
        values.reserveCapacity(count)
        self = FastHashMap()
        Self.moveEntries(out: &old) { values.append($0.value) }
        return values
    }
}

extension ObjectIdentifier: FastHashable {
    /// The address without its alignment bits (always zero), so that the low bits vary.
    var fastHash: UInt64 { UInt64(UInt(bitPattern: self)) >> 4 }
}
