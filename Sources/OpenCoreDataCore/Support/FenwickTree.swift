/// Counts by index with prefix sums and position lookup in O(log n) (a binary indexed tree).
///
/// Invariant: `tree[i]` (1-based) holds the sum of `counts[i - lowbit(i) ..< i]`; `counts` holds
/// each index's own count.
struct FenwickTree {
    private var tree: ContiguousArray<Int>
    private(set) var counts: ContiguousArray<Int>

    /// A tree over the given counts, built in O(n).
    init<C: Collection>(counts: C) where C.Element == Int {
        self.counts = ContiguousArray(counts)
        tree = ContiguousArray(repeating: 0, count: self.counts.count + 1)
        for index in self.counts.indices {
            let node = index + 1
            tree[node] += self.counts[index]
            let parent = node + (node & -node)
            if parent < tree.count { tree[parent] += tree[node] }
        }
    }

    /// The number of indexes.
    var count: Int { counts.count }

    /// The sum of all counts.
    var total: Int { prefix(counts.count) }

    /// Adds `delta` to the count at `index`.
    mutating func add(_ delta: Int, at index: Int) {
        counts[index] += delta
        var node = index + 1
        while node < tree.count {
            tree[node] += delta
            node += node & -node
        }
    }

    /// The sum of the counts at indexes `0 ..< end`.
    func prefix(_ end: Int) -> Int {
        var sum = 0
        var node = end
        while node > 0 {
            sum += tree[node]
            node -= node & -node
        }
        return sum
    }

    /// The index whose range of positions holds `position` (the first index `i` with
    /// `prefix(i + 1) > position`), or `count` when `position >= total`.
    func index(containing position: Int) -> Int {
        var node = 0
        var remaining = position
        var step = 1
        while step * 2 < tree.count { step *= 2 }
        while step > 0 {
            let next = node + step
            if next < tree.count && tree[next] <= remaining {
                node = next
                remaining -= tree[next]
            }
            step /= 2
        }
        return node
    }
}
