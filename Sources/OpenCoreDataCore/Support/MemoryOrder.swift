/// Visiting many objects in the order they sit in memory.
///
/// Objects fetched or inserted together are allocated together, so their addresses follow that
/// order. A pass over many objects in hash order (a set's, a dictionary's) jumps across the heap,
/// and each jump is a cache miss and, over a large heap, a TLB miss: with thousands of objects
/// those misses cost more than the work done with each object. Sorting the references by address
/// first (which reads no object) turns the pass into one forward sweep.
extension Array where Element: AnyObject {
    /// Sorts the objects by address (ascending); reads the references only, never the objects.
    mutating func sortByAddress() {
        sort { ObjectIdentifier($0) < ObjectIdentifier($1) }
    }
}
