import Foundation
import Testing
import OpenCoreData
@testable import OpenCoreDataCore

@Suite("Predicate evaluation")
struct PredicateEvaluationTests {
    private func check(_ format: String, _ args: Any?..., on object: Any?, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        do {
            return try NSPredicate.parse(format: format, arguments: args).evaluate(with: object)
        } catch {
            Issue.record("\(format): \(error)", sourceLocation: sourceLocation)
            return false
        }
    }

    let row: [String: Any] = [
        "name": "Zoë Smith", "age": 42, "age16": Int16(42), "age64": Int64(42), "ratio": 0.5, "ratioF": Float(0.5),
        "flag": true, "count": NSNumber(value: 3), "price": Decimal(string: "19.99")!, "nothing": NSNull(),
        "tags": ["red", "Green", "blue"], "numbers": [3, 1, 4, 1, 5], "created": Date(timeIntervalSinceReferenceDate: 1000),
        "id": UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!, "blob": Data([1, 2, 3]),
        "site": URL(string: "https://example.com/a")!, "nested": ["inner": ["value": 7]], "empty": [Int](),
    ]

    @Test func numericComparisonsAcrossTypes() {
        #expect(check("age == 42", on: row))
        #expect(check("age16 == 42.0", on: row))
        #expect(check("age64 == age", on: row))
        #expect(check("age > 41.5 AND age < 42.5", on: row))
        #expect(check("ratio == ratioF", on: row))
        #expect(check("ratio == 0.5", on: row))
        #expect(check("flag == YES", on: row))
        #expect(check("flag == 1", on: row))
        #expect(check("flag != NO", on: row))
        #expect(check("count == 3", on: row))
        #expect(check("count > 2.9", on: row))
        #expect(check("price > 19.98 AND price < 20", on: row))
        #expect(check("price == %@", Decimal(string: "19.99")!, on: row))
        #expect(check("age >= %@", NSNumber(value: 42), on: row))
        #expect(check("age <= %@", UInt8(42), on: row))
        #expect(check("age BETWEEN {40, 50}", on: row))
        #expect(check("age BETWEEN %@", [42, 42], on: row))
        #expect(!check("age BETWEEN {43, 50}", on: row))
        #expect(check("age IN {1, 42.0, 'x'}", on: row))
        #expect(check("9223372036854775807 > 9223372036854775806.0", on: row) == false) // same double
        #expect(check("18446744073709551615 > 9223372036854775807", on: row))
        #expect(check("-9223372036854775808 < 0", on: row))
    }

    @Test func incompatibleTypesAreFalseNotCrashes() {
        #expect(!check("name > 3", on: row))
        #expect(!check("name == 3", on: row))
        #expect(check("name != 3", on: row))
        #expect(!check("created > 3", on: row))
        #expect(!check("age BEGINSWITH 'x'", on: row))
        #expect(!check("age LIKE '4*'", on: row))
        #expect(!check("age MATCHES '4.'", on: row))
        #expect(!check("tags > 1", on: row))
        #expect(!check("age BETWEEN {1}", on: row))
        #expect(!check("age IN 5", on: row))
        #expect(!check("missing.deeper.path == 1", on: row))
        #expect(!check("name.length == 1", on: row))
        #expect(!check("a == 1", on: nil))
        #expect(!check("a == 1", on: 17))
    }

    @Test func nullSemantics() {
        #expect(check("nothing == nil", on: row))
        #expect(check("missing == nil", on: row))
        #expect(check("missing == NULL", on: row))
        #expect(!check("missing != nil", on: row))
        #expect(check("name != nil", on: row))
        #expect(!check("name == nil", on: row))
        #expect(!check("missing < 5", on: row))
        #expect(!check("missing > 5", on: row))
        #expect(!check("missing >= nil", on: row))
        #expect(check("missing != 5", on: row))
        #expect(!check("missing == 5", on: row))
        #expect(!check("missing CONTAINS 'x'", on: row))
        #expect(!check("missing IN {1}", on: row))
        #expect(!check("age IN nil", on: row))
        #expect(check("age != %@", nil, on: row))
        let optional: Int? = nil
        #expect(check("boxed == nil", on: ["boxed": optional as Any]))
        #expect(check("boxed == 3", on: ["boxed": Optional(3) as Any]))
    }

    @Test func stringOperatorsAndOptions() {
        #expect(check("name == 'Zoë Smith'", on: row))
        #expect(!check("name == 'zoë smith'", on: row))
        #expect(check("name ==[c] 'zoë smith'", on: row))
        #expect(check("name ==[cd] 'ZOE SMITH'", on: row))
        #expect(!check("name ==[c] 'ZOE SMITH'", on: row))
        #expect(check("name ==[d] 'Zoe Smith'", on: row))
        #expect(check("name BEGINSWITH 'Zo'", on: row))
        #expect(!check("name BEGINSWITH 'zo'", on: row))
        #expect(check("name BEGINSWITH[c] 'zo'", on: row))
        #expect(check("name ENDSWITH 'ith'", on: row))
        #expect(check("name ENDSWITH[c] 'SMITH'", on: row))
        #expect(check("name CONTAINS 'ë S'", on: row))
        #expect(check("name CONTAINS[cd] 'E s'", on: row))
        #expect(check("name LIKE 'Z*h'", on: row))
        #expect(check("name LIKE 'Z?? *'", on: row))
        #expect(!check("name LIKE 'Z?h'", on: row))
        #expect(check("name LIKE[cd] 'zoe*'", on: row))
        #expect(check("'a*b' LIKE 'a\\\\*b'", on: row))
        #expect(!check("'axb' LIKE 'a\\\\*b'", on: row))
        #expect(check("name MATCHES 'Z.. [A-Z][a-z]+'", on: row))
        #expect(!check("name MATCHES 'Zo'", on: row)) // the whole string must match
        #expect(check("name MATCHES[c] 'zoë.*'", on: row))
        #expect(check("name MATCHES[cd] 'zoe smith'", on: row))
        #expect(check("'abc123' MATCHES '[a-z]+\\\\d+'", on: row))
        #expect(check("'ab' MATCHES 'a|ab'", on: row))
        #expect(!check("name MATCHES '(unclosed'", on: row))
        #expect(check("'Smith' IN name", on: row))
        #expect(check("'smith' IN[c] name", on: row))
        #expect(!check("'smythe' IN name", on: row))
        #expect(check("name LIKE %@", "*Smith", on: row))
        #expect(check("name MATCHES %@", ".*Smi.*", on: row))
    }

    /// A decomposed accent (`e` + U+0301) is a diacritic like a composed one: `[d]` ignores it,
    /// as Foundation's folding of the whole string does.
    @Test func decomposedAccentsFoldAsComposedOnes() {
        let decomposed = ["name": "Ze\u{0301}bulon"]
        #expect(check("name ==[d] 'Zebulon'", on: decomposed))
        #expect(check("name ==[cd] 'ZÉBULON'", on: decomposed))
        #expect(check("name BEGINSWITH[cd] 'zeb'", on: decomposed))
        #expect(!check("name ==[c] 'zebulon'", on: decomposed), "only [d] drops the accent")
        #expect(StringComparison.canonical("Ze\u{0301}bulon") == "zebulon")
        #expect(StringComparison.canonical("Ze\u{0301}bulon") == StringComparison.canonical("Zébulon"))
    }

    @Test func patternsFromKeyPathsAreEvaluatedPerObject() throws {
        let p = try NSPredicate.parse(format: "name LIKE pattern AND name MATCHES regex")
        #expect(p.evaluate(with: ["name": "abc", "pattern": "a*", "regex": "a.c"]))
        #expect(!p.evaluate(with: ["name": "abc", "pattern": "b*", "regex": "a.c"]))
        #expect(p.evaluate(with: ["name": "xyz", "pattern": "x?z", "regex": "[xyz]+"]))
    }

    @Test func collectionsInAndContains() {
        #expect(check("tags CONTAINS 'red'", on: row))
        #expect(!check("tags CONTAINS 'green'", on: row))
        #expect(check("tags CONTAINS[c] 'green'", on: row))
        #expect(check("'blue' IN tags", on: row))
        #expect(check("'BLUE' IN[c] tags", on: row))
        #expect(check("name IN %@", ["x", "Zoë Smith"], on: row))
        #expect(check("name IN %@", Set(["Zoë Smith"]), on: row))
        #expect(check("name IN[c] {'ZOË SMITH'}", on: row))
        #expect(!check("name IN {}", on: row))
        #expect(check("numbers CONTAINS 4", on: row))
        #expect(check("numbers CONTAINS 4.0", on: row))
        #expect(check("age IN %@", NSArray(array: [1, 42]), on: row))
        #expect(check("age IN %@", NSSet(array: [42]), on: row))
        let many = (0..<10_000).map { "id\($0)" }
        #expect(check("name IN %@", many + ["Zoë Smith"], on: row))
        #expect(!check("name IN %@", many, on: row))
        #expect(check("age IN %@", Array(0..<10_000), on: row))
    }

    @Test func otherValueTypes() {
        #expect(check("created == %@", Date(timeIntervalSinceReferenceDate: 1000), on: row))
        #expect(check("created > CAST(999, 'NSDate')", on: row))
        #expect(check("created BETWEEN %@", [Date(timeIntervalSinceReferenceDate: 0), Date(timeIntervalSinceReferenceDate: 2000)], on: row))
        #expect(check("id == %@", UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!, on: row))
        #expect(check("id == 'E621E1F8-C36C-495A-93FC-0C247A3E6E5F'", on: row))
        #expect(check("blob == %@", Data([1, 2, 3]), on: row))
        #expect(check("blob < %@", Data([1, 2, 4]), on: row))
        #expect(check("site == %@", URL(string: "https://example.com/a")!, on: row))
        #expect(check("site == 'https://example.com/a'", on: row))
        #expect(check("nested.inner.value == 7", on: row))
        #expect(check("empty.@count == 0", on: row))
    }

    @Test func aggregateKeyPathOperators() {
        #expect(check("numbers.@count == 5", on: row))
        #expect(check("numbers.@sum == 14", on: row))
        #expect(check("numbers.@max == 5", on: row))
        #expect(check("numbers.@min == 1", on: row))
        #expect(check("numbers.@avg == 2.8", on: row))
        #expect((NSExpression(forKeyPath: "numbers.@distinctUnionOfObjects").expressionValue(with: row) as? [Any])?.count == 4)
        #expect((NSExpression(forKeyPath: "numbers.@unionOfObjects.self").expressionValue(with: row) as? [Any])?.count == 5)
        #expect(check("tags[FIRST] == 'red'", on: row))
        #expect(check("tags[LAST] == 'blue'", on: row))
        #expect(check("tags[SIZE] == 3", on: row))
        #expect(check("tags[1] == 'Green'", on: row))
        #expect(check("nested['inner'].value == 7", on: row))
    }

    @Test func objectGraphWithToOneAndToMany() {
        let alice = QLFixtures.alice()
        #expect(check("name == 'Alice'", on: alice))
        #expect(check("spouse.name == 'Bob'", on: alice))
        #expect(check("spouse.spouse == nil", on: alice))
        #expect(check("spouse.age - age == 3", on: alice))
        #expect(check("pets.@count == 2", on: alice))
        #expect(check("ANY pets.name == 'Rex'", on: alice))
        #expect(check("SOME pets.species == 'cat'", on: alice))
        #expect(!check("ANY pets.species == 'fish'", on: alice))
        #expect(check("ALL pets.weight > 3", on: alice))
        #expect(!check("ALL pets.weight > 10", on: alice))
        #expect(check("NONE pets.species == 'fish'", on: alice))
        #expect(!check("NONE pets.species == 'dog'", on: alice))
        #expect(check("ANY pets.name IN {'Rex', 'Fido'}", on: alice))
        #expect(check("ANY pets.name BEGINSWITH[c] 't'", on: alice))
        #expect(check("ANY pets.toys == 'rope'", on: alice)) // key path through a to-many flattens
        #expect(check("pets.toys.@count == 3", on: alice))
        #expect(check("pets.@sum.weight == 34", on: alice))
        #expect(check("pets.@max.weight == 30", on: alice))
        #expect(check("pets.@avg.weight == 17", on: alice))
        #expect(check("visits.@sum.cost == 200.5", on: alice))
        #expect(check("visits[FIRST].place == 'Paris'", on: alice))
        #expect(check("ANY visits.place ==[cd] 'zurich'", on: alice))
        #expect(check("pets CONTAINS %@", QLFixtures.rex, on: alice))
        #expect(!check("pets CONTAINS %@", QLFixtures.nemo, on: alice))
        #expect(check("%@ IN pets", QLFixtures.tom, on: alice))
        #expect(check("SELF == %@", alice, on: alice))
        #expect(!check("SELF == %@", QLFixtures.loner(), on: alice))
        #expect(check("SELF IN %@", [QLFixtures.loner(), alice], on: alice))
        #expect(check("spouse != nil AND spouse.height > height", on: alice))
        #expect(check("score == 7 AND balance > 10", on: alice))
        #expect(check("birthday < %@", Date(timeIntervalSinceReferenceDate: 200_000), on: alice))
        #expect(check("ANY tags ==[cd] 'ecrivain'", on: alice))
        #expect(check("tags CONTAINS[cd] 'ECRIVAIN'", on: alice))
    }

    @Test func emptyAndNilCollections() {
        let loner = QLFixtures.loner()
        #expect(check("ALL pets.weight > 1000", on: loner)) // vacuously true
        #expect(!check("ANY pets.weight > 0", on: loner))
        #expect(check("NONE pets.weight > 0", on: loner))
        #expect(check("pets.@count == 0", on: loner))
        #expect(check("name == nil", on: loner))
        #expect(check("spouse == nil", on: loner))
        #expect(!check("spouse.name == 'Bob'", on: loner))
        #expect(check("spouse.name == nil", on: loner))
        #expect(check("ALL spouse.pets.weight > 1000", on: loner))
    }

    @Test func subqueries() {
        let alice = QLFixtures.alice()
        #expect(check("SUBQUERY(pets, $p, $p.weight > 10).@count == 1", on: alice))
        #expect(check("SUBQUERY(pets, $p, $p.weight > 1 AND $p.species IN {'dog', 'cat'}).@count == 2", on: alice))
        #expect(check("SUBQUERY(pets, $p, ANY $p.toys == 'mouse').@count == 1", on: alice))
        #expect(check("SUBQUERY(pets, $p, species == 'dog').@count == 1", on: alice))
        #expect(check("SUBQUERY(visits, $v, $v.cost > 100)[FIRST].place == 'Paris'", on: alice))
        #expect(check("SUBQUERY(pets, $p, SUBQUERY($p.toys, $t, $t BEGINSWITH 'r').@count > 0).@count == 1", on: alice))
        #expect(check("SUBQUERY(pets, $p, $p.weight > 100).@count == 0", on: alice))
        #expect(check("SUBQUERY(pets, $p, $p.weight > 1).@count == 2", on: QLFixtures.alice()))
        #expect(check("SUBQUERY(pets, $p, $p.weight > 1).@count == 0", on: QLFixtures.loner()))
    }

    @Test func compoundLogic() {
        let alice = QLFixtures.alice()
        #expect(check("name == 'Alice' AND (age < 10 OR age > 40)", on: alice))
        #expect(!check("name == 'Alice' AND NOT (age < 10 OR age > 40)", on: alice))
        #expect(check("NOT name == 'Bob'", on: alice))
        #expect(check("TRUEPREDICATE", on: alice))
        #expect(!check("FALSEPREDICATE", on: alice))
        #expect(check("TRUEPREDICATE OR name == 'x'", on: nil))
        #expect(NSCompoundPredicate(andPredicateWithSubpredicates: []).evaluate(with: alice))
        #expect(!NSCompoundPredicate(orPredicateWithSubpredicates: []).evaluate(with: alice))
        let not = NSCompoundPredicate(notPredicateWithSubpredicate: NSPredicate(format: "age > 40"))
        #expect(!not.evaluate(with: alice))
    }

    @Test func arithmeticAndFunctions() {
        #expect(check("age * 2 == 84", on: row))
        #expect(check("age / 4 == 10.5", on: row))
        #expect(check("age + 0.5 > 42", on: row))
        #expect(check("2 ** 10 == 1024", on: row))
        #expect(check("-age == -42", on: row))
        #expect(check("age - -1 == 43", on: row))
        #expect(check("modulus:by:(age, 5) == 2", on: row))
        #expect(check("sum:(numbers) == 14", on: row))
        #expect(check("average(numbers) == 2.8", on: row))
        #expect(check("count(numbers) == 5", on: row))
        #expect(check("min(numbers) == 1 AND max(numbers) == 5", on: row))
        #expect(check("median(numbers) == 3", on: row))
        #expect(check("mode({1, 2, 2, 3}) CONTAINS 2", on: row))
        #expect(check("stddev({2, 4, 4, 4, 5, 5, 7, 9}) == 2", on: row))
        #expect(check("sqrt(16) == 4 AND abs(-3) == 3 AND ceiling(1.2) == 2 AND floor(1.8) == 1 AND trunc(-1.5) == -1", on: row))
        #expect(check("ln(exp(1)) == 1 AND log(100) == 2 AND raise:toPower:(2, 3) == 8", on: row))
        #expect(check("uppercase(name) == 'ZOË SMITH' AND lowercase('AbC') == 'abc'", on: row))
        #expect(check("now() > created", on: row))
        #expect(check("bitwiseAnd:with:(6, 3) == 2 AND bitwiseOr:with:(4, 1) == 5 AND bitwiseXor:with:(5, 1) == 4", on: row))
        #expect(check("leftshift:by:(1, 4) == 16 AND rightshift:by:(16, 2) == 4 AND onesComplement(0) == -1", on: row))
        #expect(check("TERNARY(age > 40, 'old', 'young') == 'old'", on: row))
        #expect(check("FUNCTION(SELF, 'valueForKey:', 'age') == 42", on: row))
        #expect(check("CAST('42', 'NSNumber') == age", on: row))
        #expect(check("{1, 2} UNION {2, 3} CONTAINS 3", on: row))
        #expect(check("({1, 2} INTERSECT {2, 3}).@count == 1", on: row))
        #expect(check("({1, 2} MINUS {2, 3}).@count == 1", on: row))
        #expect(check("created + 10 > created", on: row))
    }

    @Test func blockPredicatesAndExpressions() {
        let p = NSPredicate { object, bindings in
            (object as? [String: Any])?["age"] as? Int == bindings?["AGE"] as? Int
        }
        #expect(p.evaluate(with: row, substitutionVariables: ["AGE": 42]))
        #expect(!p.evaluate(with: row, substitutionVariables: ["AGE": 41]))
        let doubled = NSExpression(block: { _, args, _ in ((args.first as? Int) ?? 0) * 2 }, arguments: [NSExpression(forKeyPath: "age")])
        #expect(doubled.expressionValue(with: row, context: nil) as? Int == 84)
    }

    @Test func expressionValues() {
        #expect(NSExpression(forKeyPath: "spouse.name").expressionValue(with: QLFixtures.alice(), context: nil) as? String == "Bob")
        #expect(NSExpression(forConstantValue: 5).expressionValue(with: nil, context: nil) as? Int == 5)
        #expect(NSExpression.expressionForEvaluatedObject().expressionValue(with: 9, context: nil) as? Int == 9)
        let context = NSMutableDictionary()
        context["X"] = 12
        #expect(NSExpression(forVariable: "X").expressionValue(with: nil, context: context) as? Int == 12)
        let sum = NSExpression(forFunction: "sum:", arguments: [NSExpression(forKeyPath: "numbers")])
        #expect(sum.expressionValue(with: row, context: nil) as? Int == 14)
        let add = NSExpression(forFunction: "add:to:", arguments: [NSExpression(forConstantValue: 1), NSExpression(forConstantValue: 2.5)])
        #expect(add.expressionValue(with: nil, context: nil) as? Double == 3.5)
        let overflow = NSExpression(format: "%@ + 1", Int64.max)
        #expect(overflow.expressionValue(with: nil) as? Double == Double(Int64.max) + 1)
        let agg = NSExpression(forAggregate: [NSExpression(forConstantValue: 1), NSExpression(forKeyPath: "age")])
        #expect((agg.expressionValue(with: row, context: nil) as? [Any])?.count == 2)
        let subquery = NSExpression(format: "SUBQUERY(pets, $p, $p.weight < 10)")
        #expect((subquery.expressionValue(with: QLFixtures.alice()) as? [Any])?.count == 1)
    }

    @Test func comparisonPredicateBuiltByHand() {
        let p = NSComparisonPredicate(leftExpression: NSExpression(forKeyPath: "name"),
                                      rightExpression: NSExpression(forConstantValue: "zoë*"),
                                      modifier: .direct, type: .like, options: [.caseInsensitive])
        #expect(p.evaluate(with: row))
        #expect(p.predicateFormat == "name LIKE[c] \"zoë*\"")
        let custom = NSComparisonPredicate(leftExpression: NSExpression(forKeyPath: "name"),
                                           rightExpression: NSExpression(forConstantValue: "x"),
                                           customSelector: Selector("isFoo:"))
        #expect(!custom.evaluate(with: row))
        #expect(custom.customSelector == "isFoo:")
    }

    @Test func concurrentEvaluationIsSafe() throws {
        let predicates = try [
            "name LIKE pattern", "name MATCHES regex", "SUBQUERY(items, $i, $i > 2).@count == 2",
            "name ==[cd] 'ÉCOLE'", "ANY items IN {3, 4}",
        ].map { try NSPredicate.parse(format: $0) }
        nonisolated(unsafe) let rows: [[String: Any]] = (0..<64).map { i in
            ["name": i % 2 == 0 ? "école" : "ecole\(i)", "pattern": i % 3 == 0 ? "e*" : "x*", "regex": "[eé]c.*", "items": [1, 2, 3, 4]]
        }
        let expected = rows.map { row in predicates.map { $0.evaluate(with: row) } }
        let mismatches = QLCounter()
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<20 {
                for (i, row) in rows.enumerated() where predicates.map({ $0.evaluate(with: row) }) != expected[i] {
                    mismatches.increment()
                }
            }
        }
        #expect(mismatches.value == 0)
        #expect(expected[0] == [false, true, true, true, true])
    }

    @Test func customSequencesAreCollections() {
        let holder: [String: Any] = ["live": QLLiveSet([QLFixtures.rex, QLFixtures.tom])]
        #expect(check("live.@count == 2", on: holder))
        #expect(check("ANY live.name == 'Tom'", on: holder))
        #expect(check("live CONTAINS %@", QLFixtures.rex, on: holder))
        #expect(check("SUBQUERY(live, $p, $p.weight > 10).@count == 1", on: holder))
    }

    @Test func percentLiteralAndArgumentArrays() throws {
        #expect(check("'100%' ENDSWITH %%", on: nil))
        let p = NSPredicate(format: "name == 'x'", argumentArray: nil)
        #expect(p.evaluate(with: ["name": "x"]))
        let q = NSPredicate(format: "%K BEGINSWITH %@", argumentArray: ["name", "Zo"])
        #expect(q.evaluate(with: row))
    }
}

/// Counts from several threads.
final class QLCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    func increment() {
        lock.lock()
        count += 1
        lock.unlock()
    }

    var value: Int {
        lock.lock()
        defer { lock.unlock() }
        return count
    }
}

/// A collection class that is only a `Sequence`, like a live to-many relationship proxy.
final class QLLiveSet: Sequence {
    private let items: [QLPet]

    init(_ items: [QLPet]) {
        self.items = items
    }

    func makeIterator() -> IndexingIterator<[QLPet]> {
        items.makeIterator()
    }
}
