import Foundation
import Testing
@testable import OpenCoreDataCore

/// `StringComparison.compareUTF8` streams folds scalar by scalar; these tests hold it to the
/// orders' definition (folding whole strings) on strings built to find where the two could part.
@Suite struct StreamedStringOrderTests {
    /// Pieces that exercise case, diacritics (precomposed and combining), multi-byte folds, digit
    /// runs with leading zeros, scripts outside the fold table, emoji and empty strings.
    static let pieces: [String] = [
        "", "a", "A", "z", "Z", "é", "É", "e\u{301}", "E\u{301}", "\u{301}", "ß", "ẞ", "æ", "Æ", "ø", "Ø", "ı", "İ",
        "ñ", "Ñ", "ü", "Ü", "å", "ō", "ł", "Ł", "đ", "ǆ", "ǅ", "Σ", "σ", "ς", "Ω", "ά", "Ж", "ж", "ё", "Ё", "ғ",
        "ḁ", "Ḁ", "ẞ", "ṩ", "0", "00", "1", "01", "007", "10", "2", "9", "99", "123456789012345678901234567890",
        "²", "½", "5\u{301}", "\u{301}5", "\u{483}", "٣", "१", "한", "漢", "🙂", "-", " ", "_", ".", "~", "\u{00A0}", "ﬁ", "Ⅳ",
    ]

    static func randomString(_ generator: inout SystemRandomNumberGenerator, pieces count: Int) -> String {
        (0..<count).map { _ in pieces.randomElement(using: &generator)! }.joined()
    }

    static let orders: [(StringComparison.Order, @Sendable (String, String) -> ComparisonResult)] = [
        (.caseInsensitive, StringComparison.foldingCaseInsensitive),
        (.localized, StringComparison.foldingLocalized),
        (.localizedStandard, StringComparison.foldingLocalizedStandard),
        (.binary, StringComparison.binary),
    ]

    @Test func streamedOrdersEqualTheFoldingOrdersOnEveryPairOfPieces() {
        for (order, folding) in Self.orders {
            for a in Self.pieces {
                for b in Self.pieces {
                    #expect(StringComparison.compareStrings(a, b, by: order) == folding(a, b), "\(order) \(a.debugDescription) vs \(b.debugDescription)")
                }
            }
        }
    }

    @Test func streamedOrdersEqualTheFoldingOrdersOnRandomStrings() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<4_000 {
            let a = Self.randomString(&generator, pieces: Int.random(in: 0...5, using: &generator))
            // Often a near copy, so the comparison reaches the later levels.
            let b = Bool.random(using: &generator) ? Self.randomString(&generator, pieces: Int.random(in: 0...5, using: &generator))
                : a.uppercased().replacingOccurrences(of: "0", with: "00")
            for (order, folding) in Self.orders {
                #expect(StringComparison.compareStrings(a, b, by: order) == folding(a, b), "\(order) \(a.debugDescription) vs \(b.debugDescription)")
            }
        }
    }

    @Test func localizedStandardSortsNumbersByValueAndIgnoresCaseAndAccents() {
        let sorted = ["file10", "File2", "file1", "élan", "Elan", "elan", "file02"].sorted { StringComparison.localizedStandard($0, $1) == .orderedAscending }
        // Equal but for case and accents: unaccented first, then by the original's bytes.
        #expect(sorted == ["Elan", "elan", "élan", "file1", "File2", "file02", "file10"])
    }

    @Test func invalidUTF8FromTheStoreComparesAsItsDecodedString() {
        let invalid: [[UInt8]] = [[0xC3], [0xC3, 0x41], [0x80], [0xE2, 0x82], [0xED, 0xA0, 0x80], [0xC0, 0xAF], [0x41, 0xFF]]
        let valid: [[UInt8]] = [Array("A".utf8), Array("é".utf8), []]
        for a in invalid + valid {
            for b in invalid + valid {
                for (order, folding) in Self.orders {
                    let streamed = a.withUnsafeBytes { x in b.withUnsafeBytes { y in StringComparison.compareUTF8(x, y, by: order) } }
                    let expected = folding(String(decoding: a, as: UTF8.self), String(decoding: b, as: UTF8.self))
                    // Binary order compares the store's bytes as SQLite's BINARY does.
                    if order == .binary { continue }
                    #expect(streamed == expected, "\(order) \(a) vs \(b)")
                }
            }
        }
    }
}
