extension Set {
    /// A set of a sequence's elements in a table with room to spare: at most about 40% full
    /// where Swift's default sizing leaves it up to 75% full.
    ///
    /// Each probe that lands on a taken bucket compares the new element with the one there. For
    /// managed objects that comparison (`isEqual(_:)`) reads the other object, a cache miss in a
    /// set of many thousands; the change notifications of a big save built their sets mostly
    /// out of such misses. A sparser table makes collisions, and so those reads, rare.
    init<S: Sequence>(sparselyFrom elements: S) where S.Element == Element {
        self.init(minimumCapacity: elements.underestimatedCount * 2)
        for element in elements { insert(element) }
    }
}
