import Foundation

/// The string orders of `StringComparison` evaluated on UTF-8 bytes in place: no `String`, no
/// folded copy, no lock. This is what sorting by names costs, in SQLite collations and when a
/// fetched results controller places changed rows.
///
/// Folding is streamed one scalar at a time. ASCII folds by itself; every other scalar of the
/// scripts names are mostly written in (Latin, Greek, Cyrillic) folds through `ScalarFoldTable`,
/// which holds the very per-scalar foldings `StringComparison.fold` makes. Where streaming could
/// differ from folding the whole string (a scalar outside the table, a fold that is empty, holds a
/// digit or leaves a combining mark that canonical composition would join), the comparison falls
/// back to the `String` path, so both always give the same order.
extension StringComparison {
    /// A string order, by the selector that names it.
    public enum Order: Int, Sendable {
        /// `compare:`.
        case binary
        /// `caseInsensitiveCompare:`.
        case caseInsensitive
        /// `localizedCompare:` and `localizedCaseInsensitiveCompare:`.
        case localized
        /// `localizedStandardCompare:`.
        case localizedStandard

        /// The order a sort selector names, or nil when it names none of these.
        public init?(selectorName: String) {
            switch selectorName {
            case "compare:": self = .binary
            case "caseInsensitiveCompare:": self = .caseInsensitive
            case "localizedCompare:", "localizedCaseInsensitiveCompare:": self = .localized
            case "localizedStandardCompare:": self = .localizedStandard
            default: return nil
            }
        }
    }

    /// The order of two UTF-8 strings, the same as the `String` functions of the order give.
    public static func compareUTF8(_ lhs: UnsafeRawBufferPointer, _ rhs: UnsafeRawBufferPointer, by order: Order) -> ComparisonResult {
        if order != .binary, let result = streamedOrder(lhs, rhs, order) { return result }
        switch order {
        case .binary: return binaryBytes(lhs, rhs)
        case .caseInsensitive: return foldingCaseInsensitive(String(decoding: lhs, as: UTF8.self), String(decoding: rhs, as: UTF8.self))
        case .localized: return foldingLocalized(String(decoding: lhs, as: UTF8.self), String(decoding: rhs, as: UTF8.self))
        case .localizedStandard: return foldingLocalizedStandard(String(decoding: lhs, as: UTF8.self), String(decoding: rhs, as: UTF8.self))
        }
    }

    /// The order of two strings, through their UTF-8 in place.
    static func compareStrings(_ lhs: String, _ rhs: String, by order: Order) -> ComparisonResult {
        var (a, b) = (lhs, rhs)
        return a.withUTF8 { x in b.withUTF8 { y in compareUTF8(UnsafeRawBufferPointer(x), UnsafeRawBufferPointer(y), by: order) } }
    }

    /// Byte order, shorter first on a common prefix (== `binary`).
    @inline(__always)
    static func binaryBytes(_ lhs: UnsafeRawBufferPointer, _ rhs: UnsafeRawBufferPointer) -> ComparisonResult {
        let common = Swift.min(lhs.count, rhs.count)
        if common > 0 {
            let r = memcmp(lhs.baseAddress!, rhs.baseAddress!, common)
            if r != 0 { return r < 0 ? .orderedAscending : .orderedDescending }
        }
        return lhs.count == rhs.count ? .orderedSame : (lhs.count < rhs.count ? .orderedAscending : .orderedDescending)
    }

    /// The order by streaming folds, or nil when a scalar can't be streamed.
    private static func streamedOrder(_ lhs: UnsafeRawBufferPointer, _ rhs: UnsafeRawBufferPointer, _ order: Order) -> ComparisonResult? {
        if order == .localizedStandard {
            guard let numeric = numericAwareFolded(lhs, rhs) else { return nil }
            if numeric != .orderedSame { return numeric }
        }
        if order != .caseInsensitive {
            guard let full = binaryFolded(lhs, rhs, diacritics: true) else { return nil }
            if full != .orderedSame { return full }
        }
        guard let caseFolded = binaryFolded(lhs, rhs, diacritics: false) else { return nil }
        return caseFolded != .orderedSame ? caseFolded : binaryBytes(lhs, rhs)
    }

    /// Byte order of the two strings' folded forms.
    private static func binaryFolded(_ lhs: UnsafeRawBufferPointer, _ rhs: UnsafeRawBufferPointer, diacritics: Bool) -> ComparisonResult? {
        var a = FoldedUTF8Stream(lhs, diacritics: diacritics)
        var b = FoldedUTF8Stream(rhs, diacritics: diacritics)
        while true {
            let (x, y) = (a.next(), b.next())
            if x == FoldedUTF8Stream.unsupported || y == FoldedUTF8Stream.unsupported { return nil }
            if x != y {
                if x == FoldedUTF8Stream.end { return .orderedAscending }
                if y == FoldedUTF8Stream.end { return .orderedDescending }
                return x < y ? .orderedAscending : .orderedDescending
            }
            if x == FoldedUTF8Stream.end { return .orderedSame }
        }
    }

    /// `numericAware` of the two strings' fully folded forms.
    private static func numericAwareFolded(_ lhs: UnsafeRawBufferPointer, _ rhs: UnsafeRawBufferPointer) -> ComparisonResult? {
        @inline(__always) func isDigit(_ c: Int) -> Bool { c >= 0x30 && c <= 0x39 }
        var a = FoldedUTF8Stream(lhs, diacritics: true)
        var b = FoldedUTF8Stream(rhs, diacritics: true)
        var (lengthA, lengthB) = (0, 0)
        var (x, y) = (a.next(), b.next())
        while x >= 0 && y >= 0 {
            if isDigit(x) && isDigit(y) {
                // A folded digit is always an ASCII digit of the source (no fold holds one or is
                // empty), so the digit run is the source's.
                guard let runA = a.takeDigitRun(), let runB = b.takeDigitRun() else { return nil }
                lengthA += runA.count
                lengthB += runB.count
                let (significantA, significantB) = (runA.droppingLeadingZeros, runB.droppingLeadingZeros)
                if significantA.count != significantB.count { return significantA.count < significantB.count ? .orderedAscending : .orderedDescending }
                let order = binaryBytes(significantA, significantB)
                if order != .orderedSame { return order }
            } else {
                if x != y { return x < y ? .orderedAscending : .orderedDescending }
                lengthA += 1
                lengthB += 1
            }
            (x, y) = (a.next(), b.next())
        }
        if x == FoldedUTF8Stream.unsupported || y == FoldedUTF8Stream.unsupported { return nil }
        if x >= 0 { return .orderedDescending }
        if y >= 0 { return .orderedAscending }
        return lengthA == lengthB ? .orderedSame : (lengthA < lengthB ? .orderedAscending : .orderedDescending)
    }
}

extension UnsafeRawBufferPointer {
    /// A run of ASCII digits without its leading zeros (keeping the last digit).
    fileprivate var droppingLeadingZeros: UnsafeRawBufferPointer {
        var start = 0
        while start < count - 1 && self[start] == 0x30 { start += 1 }
        return UnsafeRawBufferPointer(rebasing: self[start...])
    }
}

/// The bytes of a string's folded form (case folded, and with `diacritics` diacritics folded
/// too), produced one at a time from its UTF-8.
struct FoldedUTF8Stream {
    /// What `next()` returns after the last byte.
    static let end = -1
    /// What `next()` returns for a scalar that can't be folded by itself (see `ScalarFoldTable`).
    static let unsupported = -2

    private var position: UnsafePointer<UInt8>?
    private let limit: UnsafePointer<UInt8>?
    private let diacritics: Bool
    /// The rest of the current scalar's fold, lowest byte first.
    private var pending: UInt64 = 0
    private var pendingCount = 0

    init(_ utf8: UnsafeRawBufferPointer, diacritics: Bool) {
        position = utf8.baseAddress?.assumingMemoryBound(to: UInt8.self)
        limit = position.map { $0 + utf8.count }
        self.diacritics = diacritics
    }

    /// The next byte of the folded form, `end`, or `unsupported`.
    ///
    /// A scalar is only folded once the scalar after it is known to fold by itself too: a
    /// combining mark after it (never in the table) would compose with it in the whole string's
    /// fold, changing bytes already compared.
    @inline(__always)
    mutating func next() -> Int {
        if pendingCount > 0 {
            let byte = Int(pending & 0xFF)
            pending >>= 8
            pendingCount -= 1
            return byte
        }
        guard let current = position, current < limit.unsafelyUnwrapped else { return Self.end }
        let lead = current.pointee
        if lead < 0x80 {
            let after = current + 1
            if after < limit.unsafelyUnwrapped, after.pointee >= 0x80, !startsFoldableScalar(after) { return Self.unsupported }
            position = after
            return lead >= 0x41 && lead <= 0x5A ? Int(lead) + 32 : Int(lead)
        }
        return nextFolded(from: current)
    }

    private mutating func nextFolded(from current: UnsafePointer<UInt8>) -> Int {
        guard let (scalar, width) = decodeScalar(at: current), let fold = ScalarFoldTable.fold(of: scalar, diacritics: diacritics) else { return Self.unsupported }
        let after = current + width
        if after < limit.unsafelyUnwrapped, after.pointee >= 0x80, !startsFoldableScalar(after) { return Self.unsupported }
        position = after
        pending = fold.bytes >> 8
        pendingCount = fold.count - 1
        return Int(fold.bytes & 0xFF)
    }

    /// Whether the non-ASCII scalar at `start` has a fold of its own in the table.
    private func startsFoldableScalar(_ start: UnsafePointer<UInt8>) -> Bool {
        guard let (scalar, _) = decodeScalar(at: start) else { return false }
        return ScalarFoldTable.fold(of: scalar, diacritics: diacritics) != nil
    }

    /// The non-ASCII scalar at `current` and its width in bytes, for two- and three-byte
    /// sequences; nil for anything else or anything malformed (a missing continuation byte, an
    /// overlong form), which the `String` way decodes with replacement characters.
    @inline(__always)
    private func decodeScalar(at current: UnsafePointer<UInt8>) -> (UInt32, Int)? {
        let available = limit.unsafelyUnwrapped - current
        let lead = current.pointee
        if lead & 0xE0 == 0xC0, available >= 2, current[1] & 0xC0 == 0x80 {
            let scalar = UInt32(lead & 0x1F) << 6 | UInt32(current[1] & 0x3F)
            return scalar >= 0x80 ? (scalar, 2) : nil
        }
        if lead & 0xF0 == 0xE0, available >= 3, current[1] & 0xC0 == 0x80, current[2] & 0xC0 == 0x80 {
            let scalar = UInt32(lead & 0x0F) << 12 | UInt32(current[1] & 0x3F) << 6 | UInt32(current[2] & 0x3F)
            return scalar >= 0x800 ? (scalar, 3) : nil
        }
        return nil
    }

    /// After `next()` returned an ASCII digit of the source: that digit and the digits that
    /// follow it, consumed; nil when the scalar after them does not fold by itself.
    mutating func takeDigitRun() -> UnsafeRawBufferPointer? {
        let start = position.unsafelyUnwrapped - 1
        var end = position.unsafelyUnwrapped
        while end < limit.unsafelyUnwrapped && end.pointee >= 0x30 && end.pointee <= 0x39 { end += 1 }
        if end < limit.unsafelyUnwrapped, end.pointee >= 0x80, !startsFoldableScalar(end) { return nil }
        position = end
        return UnsafeRawBufferPointer(start: start, count: end - start)
    }
}

/// The folds of single scalars of Latin, Greek and Cyrillic, as `StringComparison.fold` makes
/// them (Foundation's folding of the scalar alone), built per block on first use and read without
/// a lock after that.
///
/// A scalar has no entry (the comparison takes the `String` path) when it is a combining mark or
/// its fold is empty, holds an ASCII digit, is longer than 8 bytes, or holds a combining mark,
/// since then streaming scalar by scalar could differ from folding the whole string: a removed
/// scalar would join two digit runs, a fold would add digits to one, a mark would compose with
/// its neighbour. (Among these scripts only a combining mark composes with the scalar before it.)
enum ScalarFoldTable {
    /// A fold: up to 8 UTF-8 bytes, lowest first.
    struct Fold {
        let bytes: UInt64
        let count: Int
    }

    /// One block of scalars: per scalar, its case fold then its case-and-diacritic fold (a count
    /// of 0 means no entry).
    private final class Block: Sendable {
        let first: UInt32
        let bytes: [UInt64]
        let counts: [UInt8]

        init(_ range: Range<UInt32>) {
            first = range.lowerBound
            var bytes: [UInt64] = []
            var counts: [UInt8] = []
            for value in range {
                for diacritics in [false, true] {
                    let fold = Unicode.Scalar(value).flatMap { Self.fold(of: $0, diacritics: diacritics) }
                    bytes.append(fold?.bytes ?? 0)
                    counts.append(UInt8(fold?.count ?? 0))
                }
            }
            self.bytes = bytes
            self.counts = counts
        }

        private static func fold(of scalar: Unicode.Scalar, diacritics: Bool) -> Fold? {
            let options: String.CompareOptions = diacritics ? [.caseInsensitive, .diacriticInsensitive] : [.caseInsensitive]
            guard scalar.properties.canonicalCombiningClass == .notReordered else { return nil }
            let folded = ScalarFoldCache.fold(scalar, options: options)
            let utf8 = Array(folded.utf8)
            guard !utf8.isEmpty, utf8.count <= 8, !utf8.contains(where: { $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            for piece in folded.unicodeScalars where !piece.isASCII && piece.properties.canonicalCombiningClass != .notReordered { return nil }
            var bytes: UInt64 = 0
            for (index, byte) in utf8.enumerated() { bytes |= UInt64(byte) << (8 * UInt64(index)) }
            return Fold(bytes: bytes, count: utf8.count)
        }

        @inline(__always)
        func fold(of scalar: UInt32, diacritics: Bool) -> Fold? {
            let index = Int(scalar - first) * 2 + (diacritics ? 1 : 0)
            let count = counts[index]
            return count == 0 ? nil : Fold(bytes: bytes[index], count: Int(count))
        }
    }

    private static let latin = Block(0x80..<0x250)
    private static let greekAndCyrillic = Block(0x370..<0x530)
    private static let latinExtendedAdditional = Block(0x1E00..<0x1F00)

    /// The fold of a non-ASCII scalar, or nil when it has no entry.
    @inline(__always)
    static func fold(of scalar: UInt32, diacritics: Bool) -> Fold? {
        switch scalar {
        case 0x80..<0x250: latin.fold(of: scalar, diacritics: diacritics)
        case 0x370..<0x530: greekAndCyrillic.fold(of: scalar, diacritics: diacritics)
        case 0x1E00..<0x1F00: latinExtendedAdditional.fold(of: scalar, diacritics: diacritics)
        default: nil
        }
    }
}
