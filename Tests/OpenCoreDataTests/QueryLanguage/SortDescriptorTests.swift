import Foundation
import Testing
import OpenCoreData
@testable import OpenCoreDataCore

@Suite("Sort descriptors and string orders")
struct SortDescriptorTests {
    private func names(_ rows: [[String: Any]]) -> [String] {
        rows.map { ($0["name"] as? String) ?? "nil" }
    }

    @Test func selectorType() {
        let s: Selector = "localizedStandardCompare:"
        #expect(s == Selector("localizedStandardCompare:"))
        #expect(s.description == "localizedStandardCompare:")
        #expect(NSStringFromSelector(s) == "localizedStandardCompare:")
    }

    @Test func nilSortsFirstAscendingAndLastDescending() {
        let rows: [[String: Any]] = [["name": "b"], ["other": 1], ["name": "a"], ["name": NSNull()]]
        let ascending = NSSortDescriptor.sorted(rows, using: [NSSortDescriptor(key: "name", ascending: true)])
        #expect(names(ascending) == ["nil", "nil", "a", "b"])
        let descending = NSSortDescriptor.sorted(rows, using: [NSSortDescriptor(key: "name", ascending: false)])
        #expect(names(descending) == ["b", "a", "nil", "nil"])
    }

    @Test func numbersSortNumericallyAcrossTypes() {
        let rows: [[String: Any]] = [["v": 10], ["v": 2.5], ["v": Int64(-3)], ["v": NSNumber(value: 7)],
                                     ["v": Decimal(string: "2.25")!], ["v": true], ["v": Float(100)]]
        let sorted = NSSortDescriptor.sorted(rows, using: [NSSortDescriptor(key: "v", ascending: true)])
        let values = sorted.map { NumericArithmetic.number($0["v"])?.doubleValue ?? .nan }
        #expect(values == [-3, 1, 2.25, 2.5, 7, 10, 100])
    }

    @Test func localizedStandardCompareOrdersDigitRunsNumerically() {
        let files = ["file10.txt", "File2.txt", "file1.txt", "file02.txt", "file20.txt", "file3.txt", "Ábc", "abd"]
        let rows = files.map { ["name": $0] as [String: Any] }
        let d = NSSortDescriptor(key: "name", ascending: true, selector: Selector("localizedStandardCompare:"))
        #expect(names(NSSortDescriptor.sorted(rows, using: [d]))
                == ["Ábc", "abd", "file1.txt", "File2.txt", "file02.txt", "file3.txt", "file10.txt", "file20.txt"])
        #expect(StringComparison.localizedStandard("file2", "file10") == .orderedAscending)
        #expect(StringComparison.localizedStandard("file10", "file2") == .orderedDescending)
        #expect(StringComparison.localizedStandard("a", "a") == .orderedSame)
        #expect(StringComparison.binary("file2", "file10") == .orderedDescending)
    }

    @Test func caseInsensitiveAndBinaryOrders() {
        let rows = ["banana", "Apple", "cherry", "apple", "Banana"].map { ["name": $0] as [String: Any] }
        let binary = NSSortDescriptor.sorted(rows, using: [NSSortDescriptor(key: "name", ascending: true)])
        #expect(names(binary) == ["Apple", "Banana", "apple", "banana", "cherry"])
        let folded = NSSortDescriptor.sorted(rows, using: [NSSortDescriptor(key: "name", ascending: true, selector: "caseInsensitiveCompare:")])
        #expect(names(folded) == ["Apple", "apple", "Banana", "banana", "cherry"])
        let localized = NSSortDescriptor.sorted(rows, using: [NSSortDescriptor(key: "name", ascending: true, selector: "localizedCaseInsensitiveCompare:")])
        #expect(names(localized) == ["Apple", "apple", "Banana", "banana", "cherry"])
        #expect(StringComparison.caseInsensitive("a", "A") == .orderedDescending) // tie broken by binary order
        #expect(StringComparison.caseInsensitive("a", "B") == .orderedAscending)
        #expect(StringComparison.localized("é", "f") == .orderedAscending)
        #expect(StringComparison.localized("e", "é") == .orderedAscending)
        #expect(StringComparison.binary("é", "f") == .orderedDescending)
        #expect(StringComparison.binary("\u{FFFF}", "\u{10000}") == .orderedAscending) // scalar order, not UTF-16
    }

    @Test func ordersAreTotalAndConsistent() {
        let samples = ["", "a", "A", "á", "Á", "a1", "a01", "a10", "a2", "ab", "aB", "b", "ß", "ss", "😀", "z9", "Z10", "e\u{301}", "é"]
        for name in StringComparison.supportedSelectorNames {
            guard let order = StringComparison.comparator(forSelectorName: name) else {
                Issue.record("missing \(name)")
                continue
            }
            for x in samples {
                #expect(order(x, x) == .orderedSame)
                for y in samples where x != y || !x.unicodeScalars.elementsEqual(y.unicodeScalars) {
                    let forward = order(x, y), backward = order(y, x)
                    #expect(forward != .orderedSame, "\(name) ties \(x) and \(y)")
                    #expect(forward == PredicateNumber.flip(backward), "\(name) is not antisymmetric for \(x), \(y)")
                    for z in samples where order(y, z) == forward && forward != .orderedSame {
                        #expect(order(x, z) == forward, "\(name) is not transitive for \(x), \(y), \(z)")
                    }
                }
            }
        }
        #expect(StringComparison.comparator(forSelectorName: "bogus:") == nil)
        #expect(StringComparison.comparatorsBySelectorName.count == 5)
    }

    @Test func reversedAndMultipleDescriptors() {
        let rows: [[String: Any]] = [["name": "b", "age": 1], ["name": "a", "age": 2], ["name": "a", "age": 1]]
        let byName = NSSortDescriptor(key: "name", ascending: true)
        let byAge = NSSortDescriptor(key: "age", ascending: false)
        let sorted = NSSortDescriptor.sorted(rows, using: [byName, byAge])
        #expect(sorted.map { "\($0["name"]!)\($0["age"]!)" } == ["a2", "a1", "b1"])
        let reversed = byName.reversed
        #expect(reversed.ascending == false)
        #expect(reversed.key == "name")
        #expect((byName.reversedSortDescriptor as? NSSortDescriptor) == reversed)
        #expect(NSSortDescriptor.sorted(rows, using: [reversed]).first?["name"] as? String == "b")
        #expect(byName.compare(rows[0], to: rows[1]) == .orderedDescending)
        #expect(reversed.compare(rows[0], to: rows[1]) == .orderedAscending)
        #expect(NSSortDescriptor.compare(rows[1], rows[2], using: [byName, byAge]) == .orderedAscending)
        #expect(byName.description == "(name, ascending, compare:)")
    }

    @Test func keyPathsComparatorsAndEquality() {
        let alice = QLFixtures.alice()
        let loner = QLFixtures.loner()
        let bySpouse = NSSortDescriptor(key: "spouse.name", ascending: true)
        #expect(bySpouse.compare(loner, to: alice) == .orderedAscending) // nil spouse name first
        let byPetCount = NSSortDescriptor(key: "pets.@count", ascending: false)
        #expect(byPetCount.compare(alice, to: loner) == .orderedAscending)
        let byLength = NSSortDescriptor(key: "name", ascending: true) { a, b in
            let x = (a as? String)?.count ?? 0, y = (b as? String)?.count ?? 0
            return x < y ? .orderedAscending : (x > y ? .orderedDescending : .orderedSame)
        }
        let rows = ["ccc", "a", "bb"].map { ["name": $0] as [String: Any] }
        #expect(names(NSSortDescriptor.sorted(rows, using: [byLength])) == ["a", "bb", "ccc"])
        #expect(NSSortDescriptor(key: "a", ascending: true) == NSSortDescriptor(key: "a", ascending: true, selector: "compare:"))
        #expect(NSSortDescriptor(key: "a", ascending: true) != NSSortDescriptor(key: "a", ascending: false))
        #expect(NSSortDescriptor(key: "a", ascending: true).selector == "compare:")
        let selfSort = NSSortDescriptor(key: nil, ascending: true)
        #expect(NSSortDescriptor.sorted([3, 1, 2], using: [selfSort]) == [1, 2, 3])
    }

    @Test func mixedTypesHaveATotalOrder() {
        let values: [Any?] = [nil, 3, "text", Date(timeIntervalSinceReferenceDate: 0), Data([1]), UUID(), URL(string: "https://x")!,
                              [1, 2], QLFixtures.rex, Double.nan, -1]
        for a in values {
            for b in values {
                let ab = ValueComparison.sortCompare(a, b), ba = ValueComparison.sortCompare(b, a)
                #expect(ab == PredicateNumber.flip(ba))
            }
        }
        #expect(ValueComparison.sortCompare(nil, 0) == .orderedAscending)
        #expect(ValueComparison.sortCompare(Double.nan, -1000) == .orderedAscending)
        #expect(ValueComparison.sortCompare(5, "5") == .orderedAscending)
        #expect(ValueComparison.compare(5, "5") == nil)
        #expect(ValueComparison.isEqual(Int16(5), 5.0))
        #expect(!ValueComparison.isEqual(nil, 0))
    }
}
