import Foundation

/// Deterministic string orders behind the sort-descriptor selectors, usable as SQLite collations.
///
/// Every function here is a pure, locale-independent total order: two strings compare as
/// `.orderedSame` only when their Unicode scalars are identical, so the orders can be registered
/// as collations and used for sorting without ties that depend on input order.
///
/// - `binary` (`compare:`): the order of the strings' Unicode scalar values. This is exactly the
///   byte order of their UTF-8 encodings, i.e. SQLite's BINARY collation on UTF-8 text.
/// - `caseInsensitive` (`caseInsensitiveCompare:`): binary order of the case-folded strings,
///   ties broken by `binary`.
/// - `localized` / `localizedCaseInsensitive` (`localizedCompare:`,
///   `localizedCaseInsensitiveCompare:`): binary order after folding case and diacritics, then
///   after folding case only, then `binary`.
/// - `localizedStandard` (`localizedStandardCompare:`): like `localized`, but runs of ASCII digits
///   compare by numeric value ("file2" < "file10"); equal numbers with more leading zeros sort later.
///
/// Folding uses Foundation's `folding(options:locale:)` with a nil locale (ASCII strings take a
/// fast path with the same result), followed by canonical composition.
public enum StringComparison {
    /// A string order.
    public typealias Comparator = @Sendable (String, String) -> ComparisonResult

    /// The sort-descriptor selectors with a string order.
    public static let supportedSelectorNames: [String] = [
        "compare:", "caseInsensitiveCompare:", "localizedCompare:",
        "localizedCaseInsensitiveCompare:", "localizedStandardCompare:",
    ]

    /// The order for a selector name such as `"localizedStandardCompare:"`, or nil if unsupported.
    public static func comparator(forSelectorName name: String) -> Comparator? {
        switch name {
        case "compare:": return binary
        case "caseInsensitiveCompare:": return caseInsensitive
        case "localizedCompare:": return localized
        case "localizedCaseInsensitiveCompare:": return localizedCaseInsensitive
        case "localizedStandardCompare:": return localizedStandard
        default: return nil
        }
    }

    /// Every supported order keyed by selector name (for registering collations).
    public static var comparatorsBySelectorName: [String: Comparator] {
        var result: [String: Comparator] = [:]
        for name in supportedSelectorNames { result[name] = comparator(forSelectorName: name) }
        return result
    }

    // MARK: - Orders

    /// Unicode scalar order (== UTF-8 byte order == SQLite BINARY).
    @Sendable public static func binary(_ lhs: String, _ rhs: String) -> ComparisonResult {
        var (a, b) = (lhs, rhs)
        return a.withUTF8 { x in b.withUTF8 { y in binaryBytes(UnsafeRawBufferPointer(x), UnsafeRawBufferPointer(y)) } }
    }

    /// Case-folded binary order, ties broken by `binary`.
    @Sendable public static func caseInsensitive(_ lhs: String, _ rhs: String) -> ComparisonResult {
        compareStrings(lhs, rhs, by: .caseInsensitive)
    }

    /// Case- and diacritic-folded binary order, then case-folded, then `binary`.
    @Sendable public static func localized(_ lhs: String, _ rhs: String) -> ComparisonResult {
        compareStrings(lhs, rhs, by: .localized)
    }

    /// Same order as `localized` (the primary level already ignores case).
    @Sendable public static func localizedCaseInsensitive(_ lhs: String, _ rhs: String) -> ComparisonResult {
        compareStrings(lhs, rhs, by: .localized)
    }

    /// Finder-like order: folded like `localized`, digit runs compared numerically.
    @Sendable public static func localizedStandard(_ lhs: String, _ rhs: String) -> ComparisonResult {
        compareStrings(lhs, rhs, by: .localizedStandard)
    }

    // The orders by folding whole strings: their definition, and what `compareUTF8` falls back
    // on when it can't stream a fold.

    static func foldingCaseInsensitive(_ lhs: String, _ rhs: String) -> ComparisonResult {
        let r = binary(fold(lhs, caseInsensitive: true, diacriticInsensitive: false),
                       fold(rhs, caseInsensitive: true, diacriticInsensitive: false))
        return r != .orderedSame ? r : binary(lhs, rhs)
    }

    static func foldingLocalized(_ lhs: String, _ rhs: String) -> ComparisonResult {
        let r = binary(fold(lhs, caseInsensitive: true, diacriticInsensitive: true),
                       fold(rhs, caseInsensitive: true, diacriticInsensitive: true))
        return r != .orderedSame ? r : foldingCaseInsensitive(lhs, rhs)
    }

    static func foldingLocalizedStandard(_ lhs: String, _ rhs: String) -> ComparisonResult {
        let r = numericAware(fold(lhs, caseInsensitive: true, diacriticInsensitive: true),
                             fold(rhs, caseInsensitive: true, diacriticInsensitive: true))
        return r != .orderedSame ? r : foldingLocalized(lhs, rhs)
    }

    /// Compares UTF-8 bytes, treating each maximal run of ASCII digits as one number.
    static func numericAware(_ lhs: String, _ rhs: String) -> ComparisonResult {
        var a = lhs, b = rhs
        return a.withUTF8 { x in
            b.withUTF8 { y in
                @inline(__always) func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }
                var i = 0, j = 0
                while i < x.count && j < y.count {
                    let cx = x[i], cy = y[j]
                    if isDigit(cx) && isDigit(cy) {
                        var ie = i, je = j
                        while ie < x.count && isDigit(x[ie]) { ie += 1 }
                        while je < y.count && isDigit(y[je]) { je += 1 }
                        var si = i, sj = j
                        while si < ie - 1 && x[si] == 0x30 { si += 1 }
                        while sj < je - 1 && y[sj] == 0x30 { sj += 1 }
                        let lx = ie - si, ly = je - sj
                        if lx != ly { return lx < ly ? .orderedAscending : .orderedDescending }
                        for k in 0..<lx where x[si + k] != y[sj + k] {
                            return x[si + k] < y[sj + k] ? .orderedAscending : .orderedDescending
                        }
                        i = ie
                        j = je
                    } else {
                        if cx != cy { return cx < cy ? .orderedAscending : .orderedDescending }
                        i += 1
                        j += 1
                    }
                }
                if i < x.count { return .orderedDescending }
                if j < y.count { return .orderedAscending }
                return x.count < y.count ? .orderedAscending : (x.count > y.count ? .orderedDescending : .orderedSame)
            }
        }
    }

    // MARK: - Folding and binary helpers used by predicate evaluation

    /// A string's case- and diacritic-insensitive form (`canonical:`): folded as `[cd]`
    /// comparisons fold it, so two strings equal under `==[cd]` have the same canonical form.
    public static func canonical(_ string: String) -> String {
        fold(string, caseInsensitive: true, diacriticInsensitive: true)
    }

    /// Folds case and/or diacritics deterministically, then composes canonically.
    ///
    /// ASCII is folded directly. Every other scalar is folded on its own with Foundation's
    /// `folding(options:locale:)` (nil locale) and the result is cached, which is much faster
    /// than folding whole strings through Foundation and gives the same answer except for rare
    /// context-dependent foldings.
    public static func fold(_ string: String, caseInsensitive: Bool, diacriticInsensitive: Bool) -> String {
        if !caseInsensitive && !diacriticInsensitive { return string }
        var ascii = true
        var hasUpper = false
        for byte in string.utf8 {
            if byte >= 0x80 { ascii = false; break }
            if byte >= 0x41 && byte <= 0x5A { hasUpper = true }
        }
        if ascii {
            if !caseInsensitive || !hasUpper { return string }
            return String(decoding: string.utf8.map { ($0 >= 0x41 && $0 <= 0x5A) ? $0 + 32 : $0 }, as: UTF8.self)
        }
        return ScalarFoldCache.shared.fold(string, caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive)
    }

    /// Scalar-exact equality.
    static func binaryEqual(_ lhs: String, _ rhs: String) -> Bool {
        if lhs.utf8.count != rhs.utf8.count { return false }
        return binary(lhs, rhs) == .orderedSame
    }

    static func hasPrefix(_ string: String, _ prefix: String) -> Bool {
        string.utf8.starts(with: prefix.utf8)
    }

    static func hasSuffix(_ string: String, _ suffix: String) -> Bool {
        let s = string.utf8, t = suffix.utf8
        guard t.count <= s.count else { return false }
        return s.suffix(t.count).elementsEqual(t)
    }

    /// Whether `needle` occurs in `haystack` (byte search; UTF-8 matches fall on scalar boundaries).
    static func contains(_ haystack: String, _ needle: String) -> Bool {
        if needle.isEmpty { return true }
        var h = haystack, n = needle
        return h.withUTF8 { hb in
            n.withUTF8 { nb in
                let hc = hb.count, nc = nb.count
                guard nc <= hc else { return false }
                let first = nb[0]
                var i = 0
                while i <= hc - nc {
                    if hb[i] == first {
                        var k = 1
                        while k < nc && hb[i + k] == nb[k] { k += 1 }
                        if k == nc { return true }
                    }
                    i += 1
                }
                return false
            }
        }
    }
}

/// A compiled `LIKE` pattern: `*` matches any run of characters, `?` exactly one, `\` escapes.
struct LikePattern: Sendable {
    enum Token: Sendable, Equatable {
        case literal(Character)
        case one
        case many
    }

    let tokens: [Token]

    init(_ pattern: String) {
        var tokens: [Token] = []
        var escaping = false
        for character in pattern {
            if escaping {
                tokens.append(.literal(character))
                escaping = false
                continue
            }
            switch character {
            case "\\": escaping = true
            case "*": if tokens.last != .many { tokens.append(.many) }
            case "?": tokens.append(.one)
            default: tokens.append(.literal(character))
            }
        }
        if escaping { tokens.append(.literal("\\")) }
        self.tokens = tokens
    }

    func matches(_ string: String) -> Bool {
        let characters = Array(string)
        var si = 0, pi = 0
        var starPattern = -1, starString = 0
        while si < characters.count {
            if pi < tokens.count {
                switch tokens[pi] {
                case .many:
                    starPattern = pi
                    starString = si
                    pi += 1
                    continue
                case .one:
                    si += 1
                    pi += 1
                    continue
                case .literal(let c):
                    if c == characters[si] {
                        si += 1
                        pi += 1
                        continue
                    }
                }
            }
            guard starPattern >= 0 else { return false }
            pi = starPattern + 1
            starString += 1
            si = starString
        }
        while pi < tokens.count && tokens[pi] == .many { pi += 1 }
        return pi == tokens.count
    }
}

/// A compiled `MATCHES` regular expression, matched against the whole string.
/// Unchecked Sendable: immutable; `NSRegularExpression` is safe to share between threads.
final class RegexMatcher: @unchecked Sendable {
    let regex: NSRegularExpression?

    init(pattern: String, caseInsensitive: Bool) {
        do {
            regex = try NSRegularExpression(pattern: "\\A(?:" + pattern + ")\\z",
                                            options: caseInsensitive ? [.caseInsensitive] : [])
        } catch {
            CoreDataLog.logger.error("The MATCHES pattern \(pattern) is not a valid regular expression: \(error)")
            regex = nil
        }
    }

    func matches(_ string: String) -> Bool {
        guard let regex else { return false }
        let range = NSRange(location: 0, length: string.utf16.count)
        return regex.firstMatch(in: string, options: [], range: range) != nil
    }
}

/// Remembers the last compiled pattern for patterns that are not constants.
/// Unchecked Sendable: every mutable property is guarded by `lock`.
final class PatternCache: @unchecked Sendable {
    private let lock = NSLock()
    private var likeKey: String?
    private var like: LikePattern?
    private var regexKey: String?
    private var regex: RegexMatcher?

    func likePattern(_ pattern: String) -> LikePattern {
        lock.lock()
        defer { lock.unlock() }
        if let like, likeKey == pattern { return like }
        let compiled = LikePattern(pattern)
        like = compiled
        likeKey = pattern
        return compiled
    }

    func regexMatcher(_ pattern: String, caseInsensitive: Bool) -> RegexMatcher {
        lock.lock()
        defer { lock.unlock() }
        if let regex, regexKey == pattern { return regex }
        let compiled = RegexMatcher(pattern: pattern, caseInsensitive: caseInsensitive)
        regex = compiled
        regexKey = pattern
        return compiled
    }
}

/// Per-scalar folding results, shared by all threads.
/// Unchecked Sendable: `table` is guarded by `lock`.
final class ScalarFoldCache: @unchecked Sendable {
    static let shared = ScalarFoldCache()

    private let lock = NSLock()
    private var table: [UInt32: String] = [:]

    func fold(_ string: String, caseInsensitive: Bool, diacriticInsensitive: Bool) -> String {
        let mode: UInt32 = (caseInsensitive ? 1 : 0) | (diacriticInsensitive ? 2 : 0)
        var options: String.CompareOptions = []
        if caseInsensitive { options.insert(.caseInsensitive) }
        if diacriticInsensitive { options.insert(.diacriticInsensitive) }
        var result = String.UnicodeScalarView()
        var needsComposition = false
        lock.lock()
        for scalar in string.unicodeScalars {
            if scalar.isASCII {
                if caseInsensitive && scalar.value >= 0x41 && scalar.value <= 0x5A {
                    result.append(Unicode.Scalar(UInt8(scalar.value + 32)))
                } else {
                    result.append(scalar)
                }
                continue
            }
            let key = scalar.value | (mode << 24)
            let folded: String
            if let cached = table[key] {
                folded = cached
            } else {
                folded = Self.fold(scalar, options: options)
                table[key] = folded
            }
            for piece in folded.unicodeScalars {
                if !piece.isASCII && piece.properties.canonicalCombiningClass != .notReordered { needsComposition = true }
                result.append(piece)
            }
        }
        lock.unlock()
        let folded = String(result)
        return needsComposition ? folded.precomposedStringWithCanonicalMapping : folded
    }
}

extension ScalarFoldCache {
    /// One scalar folded by itself: the unit every fold here is made of (`ScalarFoldTable` holds
    /// the same results for the scripts it covers).
    static func fold(_ scalar: Unicode.Scalar, options: String.CompareOptions) -> String {
        // A combining mark alone has no letter to be the diacritic of, and Foundation keeps it;
        // in a decomposed string (`e` + U+0301) it drops it. Fold it after a letter, as it comes.
        if options.contains(.diacriticInsensitive), scalar.properties.canonicalCombiningClass != .notReordered {
            let afterLetter = ("a" + String(Character(scalar))).folding(options: options, locale: nil).unicodeScalars
            if afterLetter.first == "a" { return String(String.UnicodeScalarView(afterLetter.dropFirst())) }
        }
        return String(Character(scalar)).folding(options: options, locale: nil)
    }
}

/// A string with its folded forms computed once, for sorting many values with one order.
struct PreparedSortString {
    let original: String
    let caseFolded: String
    let fullyFolded: String

    init(_ string: String) {
        original = string
        caseFolded = StringComparison.fold(string, caseInsensitive: true, diacriticInsensitive: false)
        fullyFolded = StringComparison.fold(string, caseInsensitive: true, diacriticInsensitive: true)
    }

    /// The same result as the named order applied to the two original strings.
    static func compare(_ a: PreparedSortString, _ b: PreparedSortString, selector: String) -> ComparisonResult {
        switch selector {
        case "caseInsensitiveCompare:":
            let r = StringComparison.binary(a.caseFolded, b.caseFolded)
            return r != .orderedSame ? r : StringComparison.binary(a.original, b.original)
        case "localizedStandardCompare:":
            let r = StringComparison.numericAware(a.fullyFolded, b.fullyFolded)
            return r != .orderedSame ? r : localized(a, b)
        case "localizedCompare:", "localizedCaseInsensitiveCompare:":
            return localized(a, b)
        default:
            return StringComparison.binary(a.original, b.original)
        }
    }

    private static func localized(_ a: PreparedSortString, _ b: PreparedSortString) -> ComparisonResult {
        var r = StringComparison.binary(a.fullyFolded, b.fullyFolded)
        if r != .orderedSame { return r }
        r = StringComparison.binary(a.caseFolded, b.caseFolded)
        return r != .orderedSame ? r : StringComparison.binary(a.original, b.original)
    }
}
