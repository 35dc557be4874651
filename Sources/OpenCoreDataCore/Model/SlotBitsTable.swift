/// An entity's property slots by the raw bits of their names (`NSEntityDescription.StringBits`),
/// in a table without collisions: a name passed as a literal or taken from the model (the same
/// bits as the model's name) is found with one multiply, one load and one comparison, however
/// many properties the entity has.
///
/// Invariant: for every name of `init(_:)`, `slot(of:)` returns its position; for any other bits
/// it returns nil (the caller then compares the name's bytes: a long name built at run time has
/// other bits than the model's).
struct SlotBitsTable {
    /// The slot at each index, -1 where none.
    private var slots: [Int16] = []
    /// The names' bits by slot, to confirm a match.
    private var names: [NSEntityDescription.StringBits] = []
    private var multiplier: UInt64 = 0
    private var shift: UInt64 = 63

    /// An empty table: every lookup misses.
    init() {}

    /// A table for `names`; empty when no multiplier tried spreads them without a collision (the
    /// lookup then misses and the caller falls back on comparing bytes).
    init(_ names: [NSEntityDescription.StringBits]) {
        guard !names.isEmpty, names.count < Int(Int16.max) else { return }
        var bits = 3
        while 1 << bits < names.count * 2 { bits += 1 }
        for extra in 0..<3 {
            let size = 1 << (bits + extra)
            var candidate: UInt64 = 0x9E37_79B9_7F4A_7C15
            for _ in 0..<64 {
                let shift = UInt64(64 - (bits + extra))
                var table = [Int16](repeating: -1, count: size)
                var collided = false
                for (slot, name) in names.enumerated() {
                    let index = Int(truncatingIfNeeded: ((name.first ^ name.second) &* candidate) >> shift)
                    if table[index] >= 0 { collided = true; break }
                    table[index] = Int16(slot)
                }
                if !collided {
                    slots = table
                    self.names = names
                    multiplier = candidate
                    self.shift = shift
                    return
                }
                // The next odd multiplier from a fixed sequence (splitmix64's increment).
                candidate = (candidate &+ 0x9E37_79B9_7F4A_7C15) | 1
            }
        }
    }

    /// The slot of the name with these bits, or nil.
    @inline(__always)
    func slot(of bits: NSEntityDescription.StringBits) -> Int? {
        guard !slots.isEmpty else { return nil }
        // A masking shift: `shift` is below 64 whenever there are slots (no check for larger ones).
        let index = Int(truncatingIfNeeded: ((bits.first ^ bits.second) &* multiplier) &>> shift)
        return slots.withUnsafeBufferPointer { slots in
            let slot = Int(slots[index])
            guard slot >= 0 else { return nil }
            return names.withUnsafeBufferPointer { $0[slot] == bits } ? slot : nil
        }
    }
}
