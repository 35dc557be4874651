import Foundation
import Testing
import OpenCoreData
@testable import OpenCoreDataCore

@Suite("Predicate format round trips")
struct PredicateRoundTripTests {
    static let formats: [String] = [
        "name == 'Alice'",
        "name = \"Bob\"",
        "age != 3",
        "age <> 3",
        "age < 10",
        "age <= 10",
        "age =< 10",
        "age > -10",
        "age >= 10.25",
        "age => 1e-7",
        "height > 1.5e300",
        "age == 0x1F",
        "flags == 0b1011",
        "mode == 0o17",
        "big == 18446744073709551615",
        "small == -9223372036854775808",
        "name BEGINSWITH 'A'",
        "name BEGINSWITH[c] 'a'",
        "name ENDSWITH[d] 'é'",
        "name CONTAINS[cd] 'zoë'",
        "name LIKE 'A*e?'",
        "name LIKE[c] 'a\\\\*'",
        "name MATCHES '[A-Z][a-z]+\\\\d{2,}'",
        "name MATCHES[n] '.*'",
        "name == 'quote \\\" and \\' and \\\\ and \\n and \\t and \\u0001'",
        "name == 'unicode 😀 ß 東京'",
        "age IN {1, 2, 3}",
        "name IN {'a', \"b\", nil}",
        "name IN[c] {'a', 'b'}",
        "age BETWEEN {18, 65}",
        "age IN {}",
        "'x' IN tags",
        "'sub' IN name",
        "tags CONTAINS 'red'",
        "ANY pets.name == 'Rex'",
        "SOME pets.weight > 3",
        "ALL pets.weight > 3",
        "NONE pets.species == 'fish'",
        "ANY pets.name IN {'Rex', 'Tom'}",
        "NOT name == 'x'",
        "NOT (a == 1 OR b == 2)",
        "NOT NOT a == 1",
        "a == 1 AND b == 2",
        "a == 1 AND b == 2 AND c == 3",
        "a == 1 OR b == 2 OR c == 3",
        "(a == 1 OR b == 2) AND c == 3",
        "a == 1 OR (b == 2 AND c == 3)",
        "((a == 1 AND b == 2) OR NOT c == 3) AND d == 4",
        "a == 1 && b == 2 || !(c == 3)",
        "TRUEPREDICATE",
        "FALSEPREDICATE",
        "TRUEPREDICATE AND name == 'x'",
        "name == nil",
        "name != NULL",
        "flag == YES",
        "flag == FALSE",
        "SELF == 'x'",
        "SELF IN {1, 2}",
        "spouse.name == 'Bob'",
        "spouse.spouse.spouse == nil",
        "pets.@count > 2",
        "pets.@sum.weight >= 10",
        "pets.@avg.weight < 5",
        "pets.@max.weight == pets.@min.weight",
        "@sum.weight > 1",
        "pets.@distinctUnionOfObjects.species CONTAINS 'cat'",
        "#IN == 1",
        "#date > 1",
        "#first == 'x'",
        "a.#size == 1",
        "$VAR == 1",
        "age > $MIN AND age < $MAX",
        "$x.name == 'x'",
        "SUBQUERY(pets, $p, $p.weight > 10).@count > 0",
        "SUBQUERY(pets, $p, $p.weight > 10 AND $p.species == 'dog').@count == 1",
        "SUBQUERY(pets, $p, SUBQUERY($p.toys, $t, $t BEGINSWITH 'r').@count > 0).@count > 0",
        "SUBQUERY(visits, $v, $v.cost > 100)[FIRST].place == 'Paris'",
        "tags[FIRST] == 'a'",
        "tags[LAST] == 'b'",
        "tags[SIZE] == 2",
        "tags[0] == 'a'",
        "tags[index + 1] == 'a'",
        "dict['key'] == 1",
        "a + b == c",
        "a - b * c > 0",
        "(a - b) * c > 0",
        "a / (b + c) < 1",
        "a ** 2 + b ** 2 == c ** 2",
        "2 ** -1 == 0.5",
        "(-2) ** 2 == 4",
        "-a < 0",
        "a - -1 == 2",
        "-(a + b) > 0",
        "sum:(pets.weight) > 10",
        "average:({1, 2, 3}) == 2",
        "count:(tags) == 2",
        "max(pets.weight) > min(pets.weight)",
        "sum(1, 2, 3) == 6",
        "sqrt:(x) == 2 AND abs:(y) == 3",
        "lowercase:(name) == 'alice'",
        "uppercase(name) BEGINSWITH 'A'",
        "now() > birthday",
        "modulus:by:(age, 2) == 0",
        "bitwiseAnd:with:(flags, 4) != 0",
        "random:(10) < 10",
        "FUNCTION(SELF, 'valueForKey:', 'name') == 'x'",
        "FUNCTION(name, 'uppercaseString') == 'X'",
        "CAST(birthday, 'NSNumber') > 0",
        "CAST(123.5, 'NSDate') < birthday",
        "CAST('1.25', 'NSDecimalNumber') == price",
        "TERNARY(age > 18, 'adult', 'minor') == 'adult'",
        "{1, 2} UNION {3} CONTAINS 3",
        "a INTERSECT b CONTAINS 1",
        "(a MINUS b).@count == 0",
        "ANYKEY == 1",
        "a not in {1, 2}",
        "x == 'a%b'",
        "x == '%@'",
        "name LIKE[cd] '*ü*'",
        "a == 1 AND (b == 2 OR c == 3 OR d == 4) AND NOT e == 5",
    ]

    @Test func atLeastSixtyFormats() {
        #expect(Self.formats.count >= 60)
    }

    @Test(arguments: formats)
    func roundTrip(_ format: String) throws {
        let first = try NSPredicate.parse(format: format)
        let printed = first.predicateFormat
        let second: NSPredicate
        do {
            second = try NSPredicate.parse(format: printed)
        } catch {
            Issue.record("\(format) printed as \(printed), which does not parse: \(error)")
            return
        }
        #expect(first == second, "\(format) -> \(printed) -> \(second.predicateFormat)")
        #expect(first.hashValue == second.hashValue, "\(format)")
        #expect(second.predicateFormat == printed, "printing is stable for \(format)")
        #expect(first.description == printed)
    }

    @Test func roundTripWithArguments() throws {
        let cases: [(String, [Any?])] = [
            ("d == %@", [Date(timeIntervalSinceReferenceDate: 123_456.789)]),
            ("d == %@", [Date(timeIntervalSince1970: 0)]),
            ("d BETWEEN %@", [[Date(timeIntervalSinceReferenceDate: 1), Date(timeIntervalSinceReferenceDate: 2)]]),
            ("u == %@", [UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!]),
            ("b == %@", [Data([0, 1, 2, 255])]),
            ("p == %@", [Decimal(string: "12345.6789")!]),
            ("l == %@", [URL(string: "https://example.com/x?y=1")!]),
            ("x IN %@", [Set(["b", "a", "c"])]),
            ("x IN %@", [[1, 2.5, "three"] as [Any]]),
            ("x == %@", [nil]),
            ("x == %@", [Double.infinity]),
            ("x == %@", [-Double.infinity]),
            ("x == %@", [Int8(-5)]),
            ("x == %@", [UInt64.max]),
            ("x == %@", [Float(0.1)]),
            ("x == %@", [true]),
            ("%K == 1", ["a.b.@count"]),
            ("%K == 1", ["first"]),
            ("%K == 1", ["self"]),
            ("x == %@", ["line\nbreak\r\u{7F}\u{0}"]),
            ("x == %@", [NSNumber(value: 3.25)]),
        ]
        for (format, args) in cases {
            let first = try NSPredicate.parse(format: format, arguments: args)
            let printed = first.predicateFormat
            let second = try NSPredicate.parse(format: printed)
            #expect(first == second, "\(format) \(args) -> \(printed)")
            #expect(first.hashValue == second.hashValue, "\(format) \(args) -> \(printed)")
        }
    }

    @Test func printedForms() throws {
        #expect(try NSPredicate.parse(format: "name = 'x'").predicateFormat == "name == \"x\"")
        #expect(try NSPredicate.parse(format: "a <> 1").predicateFormat == "a != 1")
        #expect(try NSPredicate.parse(format: "a => 1 and b =< 2").predicateFormat == "a >= 1 AND b <= 2")
        #expect(try NSPredicate.parse(format: "any x.y contains[cd] 'q'").predicateFormat == "ANY x.y CONTAINS[cd] \"q\"")
        #expect(try NSPredicate.parse(format: "none x == 1").predicateFormat == "NOT ANY x == 1")
        #expect(try NSPredicate.parse(format: "(a == 1 or b == 2) and c == 3").predicateFormat == "(a == 1 OR b == 2) AND c == 3")
        #expect(try NSPredicate.parse(format: "d == %@", arguments: [Date(timeIntervalSinceReferenceDate: 10)]).predicateFormat
                == "d == CAST(10.0, \"NSDate\")")
        #expect(try NSPredicate.parse(format: "x == %@", arguments: [nil]).predicateFormat == "x == nil")
        #expect(try NSPredicate.parse(format: "x IN %@", arguments: [Set([3, 1, 2])]).predicateFormat == "x IN {1, 2, 3}")
        #expect(try NSPredicate.parse(format: "%K == 1", arguments: ["in"]).predicateFormat == "#in == 1")
        #expect(try NSPredicate.parse(format: "a + b * c == 1").predicateFormat == "a + (b * c) == 1")
        #expect(try NSPredicate.parse(format: "SUBQUERY(p, $x, $x.w > 1).@count > 0").predicateFormat
                == "SUBQUERY(p, $x, $x.w > 1).@count > 0")
        #expect(try NSPredicate.parse(format: "sum(a) > 1").predicateFormat == "sum:(a) > 1")
        #expect(NSPredicate(value: true).predicateFormat == "TRUEPREDICATE")
        #expect(NSCompoundPredicate(andPredicateWithSubpredicates: []).predicateFormat == "TRUEPREDICATE")
        #expect(NSExpression(forKeyPath: "a.b").description == "a.b")
        #expect(NSExpression(forConstantValue: "q\"").description == "\"q\\\"\"")
        #expect(NSExpression(forFunction: "now", arguments: []).description == "now()")
    }

    @Test func hashableKeysInDictionaries() throws {
        var cache: [NSPredicate: Int] = [:]
        for (i, format) in Self.formats.enumerated() {
            cache[try NSPredicate.parse(format: format)] = i
        }
        for (i, format) in Self.formats.enumerated() {
            let found = cache[try NSPredicate.parse(format: format)]
            // Formats that are spelled differently but mean the same collapse to one entry.
            #expect(found != nil, "\(format)")
            if let found, found != i {
                #expect(try NSPredicate.parse(format: Self.formats[found]) == (try NSPredicate.parse(format: format)))
            }
        }
    }

    @Test func expressionRoundTrips() throws {
        let formats = [
            "a", "a.b.@count", "SELF", "$x", "$x.name", "1 + 2 * 3", "(1 + 2) * 3", "-a", "2 ** 3 ** 2",
            "sum:(items.price)", "now()", "FUNCTION(SELF, 'valueForKey:', 'a')", "{1, 'a', nil, YES}",
            "SUBQUERY(items, $i, $i.price > 1)", "TERNARY(a > 1, 'x', 'y')", "CAST('2.5', 'NSNumber')",
            "items[LAST].name", "a UNION b", "lowercase(name)", "%@", "%2$K",
        ]
        for format in formats {
            let first = try NSExpression.parse(format: format, arguments: [Date(timeIntervalSinceReferenceDate: 3), "key.path"])
            let printed = first.description
            let second = try NSExpression.parse(format: printed)
            #expect(first == second, "\(format) -> \(printed)")
            #expect(first.hashValue == second.hashValue, "\(format) -> \(printed)")
        }
    }
}
