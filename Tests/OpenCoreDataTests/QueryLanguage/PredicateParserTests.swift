import Foundation
import Testing
import OpenCoreData
@testable import OpenCoreDataCore

@Suite("Predicate format parser")
struct PredicateParserTests {
    private func comparison(_ format: String, _ args: Any?...) throws -> NSComparisonPredicate {
        let predicate = try NSPredicate.parse(format: format, arguments: args)
        guard let comparison = predicate as? NSComparisonPredicate else {
            Issue.record("\(format) did not parse to a comparison: \(type(of: predicate))")
            throw PredicateFormatError(kind: .syntax, message: "not a comparison", position: 0, format: format)
        }
        return comparison
    }

    private func parseError(_ format: String, _ args: Any?...) -> PredicateFormatError? {
        do {
            let predicate = try NSPredicate.parse(format: format, arguments: args)
            Issue.record("\(format) parsed unexpectedly as \(predicate)")
            return nil
        } catch let error as PredicateFormatError {
            return error
        } catch {
            Issue.record("unexpected error type \(error)")
            return nil
        }
    }

    @Test func comparisonOperators() throws {
        let cases: [(String, NSComparisonPredicate.Operator)] = [
            ("a = 1", .equalTo), ("a == 1", .equalTo), ("a != 1", .notEqualTo), ("a <> 1", .notEqualTo),
            ("a < 1", .lessThan), ("a <= 1", .lessThanOrEqualTo), ("a =< 1", .lessThanOrEqualTo),
            ("a > 1", .greaterThan), ("a >= 1", .greaterThanOrEqualTo), ("a => 1", .greaterThanOrEqualTo),
            ("a BEGINSWITH 'x'", .beginsWith), ("a endswith 'x'", .endsWith), ("a Contains 'x'", .contains),
            ("a LIKE 'x*'", .like), ("a MATCHES 'x+'", .matches), ("a IN {1, 2}", .in),
            ("a BETWEEN {1, 2}", .between),
        ]
        for (format, op) in cases {
            let p = try comparison(format)
            #expect(p.predicateOperatorType == op, "\(format)")
            #expect(p.leftExpression.expressionType == .keyPath)
            #expect(p.leftExpression.keyPath == "a")
            #expect(p.comparisonPredicateModifier == .direct)
        }
    }

    @Test func operatorRawValuesMatchApple() {
        #expect(NSComparisonPredicate.Operator.lessThan.rawValue == 0)
        #expect(NSComparisonPredicate.Operator.equalTo.rawValue == 4)
        #expect(NSComparisonPredicate.Operator.in.rawValue == 10)
        #expect(NSComparisonPredicate.Operator.customSelector.rawValue == 11)
        #expect(NSComparisonPredicate.Operator.contains.rawValue == 99)
        #expect(NSComparisonPredicate.Operator.between.rawValue == 100)
        #expect(NSComparisonPredicate.Options.caseInsensitive.rawValue == 1)
        #expect(NSComparisonPredicate.Options.diacriticInsensitive.rawValue == 2)
        #expect(NSComparisonPredicate.Options.normalized.rawValue == 4)
        #expect(NSCompoundPredicate.LogicalType.not.rawValue == 0)
        #expect(NSCompoundPredicate.LogicalType.or.rawValue == 2)
        #expect(NSExpression.ExpressionType.subquery.rawValue == 13)
        #expect(NSExpression.ExpressionType.conditional.rawValue == 20)
    }

    @Test func stringOptions() throws {
        #expect(try comparison("name ==[c] 'x'").options == [.caseInsensitive])
        #expect(try comparison("name ==[d] 'x'").options == [.diacriticInsensitive])
        #expect(try comparison("name CONTAINS[cd] 'x'").options == [.caseInsensitive, .diacriticInsensitive])
        #expect(try comparison("name LIKE[n] 'x'").options == [.normalized])
        #expect(try comparison("name BEGINSWITH[CD] 'x'").options == [.caseInsensitive, .diacriticInsensitive])
    }

    @Test func compoundPredicatesAndPrecedence() throws {
        let p = try NSPredicate.parse(format: "a == 1 AND b == 2 OR NOT c == 3 && d == 4 || !(e == 5)")
        let or = try #require(p as? NSCompoundPredicate)
        #expect(or.compoundPredicateType == .or)
        #expect(or.predicates.count == 3)
        let firstAnd = try #require(or.predicates[0] as? NSCompoundPredicate)
        #expect(firstAnd.compoundPredicateType == .and)
        #expect(firstAnd.predicates.count == 2)
        let secondAnd = try #require(or.predicates[1] as? NSCompoundPredicate)
        #expect(secondAnd.compoundPredicateType == .and)
        let not = try #require(secondAnd.predicates[0] as? NSCompoundPredicate)
        #expect(not.compoundPredicateType == .not)
        #expect(not.subpredicates.count == 1)
        let lastNot = try #require(or.predicates[2] as? NSCompoundPredicate)
        #expect(lastNot.compoundPredicateType == .not)
    }

    @Test func parenthesesGroupPredicatesAndExpressions() throws {
        let grouped = try #require(try NSPredicate.parse(format: "(a == 1 OR b == 2) AND c == 3") as? NSCompoundPredicate)
        #expect(grouped.compoundPredicateType == .and)
        #expect((grouped.predicates[0] as? NSCompoundPredicate)?.compoundPredicateType == .or)
        let arithmetic = try comparison("(a + b) * 2 > 10")
        #expect(arithmetic.leftExpression.function == "multiply:by:")
        #expect(arithmetic.leftExpression.arguments?[0].function == "add:to:")
        let nested = try NSPredicate.parse(format: "((a == 1))")
        #expect(nested is NSComparisonPredicate)
    }

    @Test func modifiers() throws {
        #expect(try comparison("ANY pets.name == 'Rex'").comparisonPredicateModifier == .any)
        #expect(try comparison("SOME pets.name == 'Rex'").comparisonPredicateModifier == .any)
        #expect(try comparison("ALL pets.weight > 1").comparisonPredicateModifier == .all)
        let none = try #require(try NSPredicate.parse(format: "NONE pets.weight > 100") as? NSCompoundPredicate)
        #expect(none.compoundPredicateType == .not)
        #expect((none.predicates[0] as? NSComparisonPredicate)?.comparisonPredicateModifier == .any)
    }

    @Test func literals() throws {
        #expect(try comparison("a == 42").rightExpression.constantValue as? Int == 42)
        #expect(try comparison("a == -42").rightExpression.constantValue as? Int == -42)
        #expect(try comparison("a == 4.5").rightExpression.constantValue as? Double == 4.5)
        #expect(try comparison("a == 1e3").rightExpression.constantValue as? Double == 1000)
        #expect(try comparison("a == 2.5E-2").rightExpression.constantValue as? Double == 0.025)
        #expect(try comparison("a == 0x1F").rightExpression.constantValue as? Int == 31)
        #expect(try comparison("a == 0o17").rightExpression.constantValue as? Int == 15)
        #expect(try comparison("a == 0b101").rightExpression.constantValue as? Int == 5)
        #expect(try comparison("a == 'single'").rightExpression.constantValue as? String == "single")
        #expect(try comparison("a == \"double\"").rightExpression.constantValue as? String == "double")
        #expect(try comparison(#"a == "q\"uo\'te\\n\n\t\u00e9""#).rightExpression.constantValue as? String == "q\"uo'te\\n\n\té")
        #expect(try comparison("a == nil").rightExpression.constantValue == nil)
        #expect(try comparison("a == NULL").rightExpression.expressionType == .constantValue)
        #expect(try comparison("a == TRUE").rightExpression.constantValue as? Bool == true)
        #expect(try comparison("a == yes").rightExpression.constantValue as? Bool == true)
        #expect(try comparison("a == FALSE").rightExpression.constantValue as? Bool == false)
        #expect(try comparison("a == NO").rightExpression.constantValue as? Bool == false)
        #expect(try comparison("SELF == 1").leftExpression.expressionType == .evaluatedObject)
        let date = try comparison("a > CAST(1000.5, \"NSDate\")").rightExpression.constantValue as? Date
        #expect(date == Date(timeIntervalSinceReferenceDate: 1000.5))
        #expect(try NSPredicate.parse(format: "TRUEPREDICATE").booleanValue == true)
        #expect(try NSPredicate.parse(format: "falsepredicate").booleanValue == false)
    }

    @Test func aggregatesAndIndexes() throws {
        let p = try comparison("a IN {1, 'two', 3.0, nil}")
        #expect(p.rightExpression.expressionType == .aggregate)
        #expect(p.rightExpression.aggregateExpressions?.count == 4)
        let empty = try comparison("a IN {}")
        #expect(empty.rightExpression.aggregateExpressions?.isEmpty == true)
        let first = try comparison("tags[FIRST] == 'x'")
        #expect(first.leftExpression.function == "objectFrom:withIndex:")
        #expect(first.leftExpression.arguments?[1].constantValue as? PredicateIndexSymbol == .first)
        #expect(try comparison("tags[LAST] == 'x'").leftExpression.arguments?[1].constantValue as? PredicateIndexSymbol == .last)
        #expect(try comparison("tags[SIZE] == 2").leftExpression.arguments?[1].constantValue as? PredicateIndexSymbol == .size)
        #expect(try comparison("tags[1] == 'x'").leftExpression.arguments?[1].constantValue as? Int == 1)
    }

    @Test func keyPathsVariablesAndCollectionOperators() throws {
        let p = try comparison("spouse.pets.@count > $MIN")
        #expect(p.leftExpression.keyPath == "spouse.pets.@count")
        #expect(p.leftExpression.keyPathComponents == [.key("spouse"), .key("pets"), .collectionOperator(.count)])
        #expect(p.rightExpression.expressionType == .variable)
        #expect(p.rightExpression.variable == "MIN")
        #expect(try comparison("@sum.amount > 1").leftExpression.keyPath == "@sum.amount")
        #expect(try comparison("items.@max.price < 3").leftExpression.keyPathComponents[1] == .collectionOperator(.max))
        #expect(try comparison("items.@avg.price < 3").leftExpression.keyPathComponents[1] == .collectionOperator(.avg))
        #expect(try comparison("items.@distinctUnionOfObjects.kind CONTAINS 'x'").leftExpression.keyPathComponents[1]
                == .collectionOperator(.distinctUnionOfObjects))
        #expect(try comparison("#date == 1").leftExpression.keyPath == "date")
        #expect(try comparison("#IN == 1").leftExpression.keyPath == "IN")
        #expect(try comparison("a.in == 1").leftExpression.keyPath == "a.in")
        #expect(try comparison("SELF.name == 'x'").leftExpression.keyPath == "name")
        let rooted = try comparison("$x.name == 'x'").leftExpression
        #expect(rooted.expressionType == .keyPath)
        #expect(rooted.keyPath == "name")
        #expect(rooted.operand.expressionType == .variable)
    }

    @Test func formatArguments() throws {
        let p = try comparison("%K == %@", "name", "Bob")
        #expect(p.leftExpression.keyPath == "name")
        #expect(p.rightExpression.constantValue as? String == "Bob")
        #expect(try comparison("%K.%K == 1", "a", "b").leftExpression.keyPath == "a.b")
        #expect(try comparison("%K == 1", "spouse.name").leftExpression.keyPathComponents.count == 2)
        #expect(try comparison("a == %d", 7).rightExpression.constantValue as? Int == 7)
        #expect(try comparison("a == %i", Int32(7)).rightExpression.constantValue as? Int == 7)
        #expect(try comparison("a == %ld", 7).rightExpression.constantValue as? Int == 7)
        #expect(try comparison("a == %lld", Int64(7)).rightExpression.constantValue as? Int == 7)
        #expect(try comparison("a == %u", UInt(7)).rightExpression.constantValue as? Int == 7)
        #expect(try comparison("a == %f", 2.5).rightExpression.constantValue as? Double == 2.5)
        #expect(try comparison("a == %lf", Float(2.5)).rightExpression.constantValue as? Double == 2.5)
        #expect(try comparison("a == %s", "txt").rightExpression.constantValue as? String == "txt")
        #expect(try comparison("a == %@", nil).rightExpression.constantValue == nil)
        let optional: String? = nil
        #expect(try comparison("a == %@", optional).rightExpression.constantValue == nil)
        #expect(try comparison("a IN %@", [1, 2, 3]).rightExpression.constantValue as? [Int] == [1, 2, 3])
        #expect(try comparison("a IN %@", Set(["x"])).rightExpression.constantValue as? Set<String> == ["x"])
        #expect(try comparison("a BETWEEN %@", [1, 5]).rightExpression.constantValue as? [Int] == [1, 5])
        let positional = try NSPredicate.parse(format: "a == %2$@ AND b == %1$@", arguments: [1, 2])
        let and = try #require(positional as? NSCompoundPredicate)
        #expect((and.predicates[0] as? NSComparisonPredicate)?.rightExpression.constantValue as? Int == 2)
        #expect((and.predicates[1] as? NSComparisonPredicate)?.rightExpression.constantValue as? Int == 1)
        // Quoted specifiers are literal text.
        #expect(try comparison("a == '%@'").rightExpression.constantValue as? String == "%@")
        let date = Date(timeIntervalSinceReferenceDate: 5)
        #expect(try comparison("a < %@", date).rightExpression.constantValue as? Date == date)
        let person = QLFixtures.alice()
        #expect(try comparison("SELF == %@", person).rightExpression.constantValue as? QLPerson === person)
    }

    @Test func varargInitializersAcceptAnything() {
        let p = NSPredicate(format: "name == %@ AND age > %d AND tags IN %@", "Alice", 3, ["a"])
        #expect(p is NSCompoundPredicate)
        #expect(p.formatError == nil)
        let q = NSPredicate(format: "name == %@", argumentArray: ["x"])
        #expect(q is NSComparisonPredicate)
        let typed = NSComparisonPredicate(format: "age > 3")
        #expect(typed.predicateOperatorType == .greaterThan)
        let wrapped = NSCompoundPredicate(format: "age > 3")
        #expect(wrapped.compoundPredicateType == .and)
        #expect(wrapped.predicates.count == 1)
        let mismatch = NSComparisonPredicate(format: "a == 1 AND b == 2")
        #expect(mismatch.formatError != nil)
        #expect(mismatch.evaluate(with: ["a": 1, "b": 2]) == false)
    }

    @Test func subqueryFunctionCastAndTernary() throws {
        let p = try comparison("SUBQUERY(pets, $p, $p.weight > 10 AND $p.species == 'dog').@count > 0")
        let keyPath = p.leftExpression
        #expect(keyPath.expressionType == .keyPath)
        #expect(keyPath.keyPath == "@count")
        let subquery = keyPath.operand
        #expect(subquery.expressionType == .subquery)
        #expect(subquery.variable == "p")
        #expect(subquery.subqueryCollection?.keyPath == "pets")
        #expect(subquery.predicate is NSCompoundPredicate)

        let function = try comparison("FUNCTION(SELF, 'valueForKey:', 'name') == 'x'").leftExpression
        #expect(function.expressionType == .function)
        #expect(function.function == "valueForKey:")
        #expect(function.functionReceiver?.expressionType == .evaluatedObject)

        #expect(try comparison("sum:(items.price) > 1").leftExpression.function == "sum:")
        #expect(try comparison("sum(items.price) > 1").leftExpression.function == "sum:")
        #expect(try comparison("lowercase(name) == 'x'").leftExpression.function == "lowercase:")
        #expect(try comparison("now() > d").leftExpression.function == "now")
        #expect(try comparison("add:to:(a, 1) > 1").leftExpression.function == "add:to:")
        #expect(try comparison("max({1, 2, 3}) == 3").leftExpression.function == "max:")
        #expect(try comparison("a ** 2 > 1").leftExpression.function == "raise:toPower:")
        #expect(try comparison("-a < 1").leftExpression.function == "from:subtract:")
        #expect(try comparison("a - b / c > 1").leftExpression.arguments?[1].function == "divide:by:")

        let cast = try comparison("CAST(a, 'NSNumber') > 1").leftExpression
        #expect(cast.function == "castObject:toType:")
        let ternary = try comparison("TERNARY(a > 1, 'big', 'small') == 'big'").leftExpression
        #expect(ternary.expressionType == .conditional)
        #expect(ternary.trueExpression.constantValue as? String == "big")
    }

    @Test func setExpressions() throws {
        let p = try comparison("{1, 2} UNION {3} CONTAINS 3")
        #expect(p.leftExpression.expressionType == .unionSet)
        #expect(try comparison("a INTERSECT b CONTAINS 1").leftExpression.expressionType == .intersectSet)
        #expect(try comparison("a MINUS b CONTAINS 1").leftExpression.expressionType == .minusSet)
    }

    @Test func notInAndKeywordCase() throws {
        let p = try #require(try NSPredicate.parse(format: "a not in {1, 2}") as? NSCompoundPredicate)
        #expect(p.compoundPredicateType == .not)
        #expect((p.predicates[0] as? NSComparisonPredicate)?.predicateOperatorType == .in)
        #expect(try comparison("a like[c] 'x'").predicateOperatorType == .like)
        #expect(try NSPredicate.parse(format: "a == 1 and b == 2 or c == 3") is NSCompoundPredicate)
    }

    @Test func expressionFormat() throws {
        let e = try NSExpression.parse(format: "salary * 12 + %@", arguments: [100])
        #expect(e.function == "add:to:")
        #expect(e.expressionValue(with: ["salary": 10]) as? Int == 220)
        let bad = NSExpression(format: "salary *")
        #expect(bad.formatError != nil)
        #expect(bad.expressionValue(with: ["salary": 10]) == nil)
        #expect(bad.description == "salary *")
    }

    // MARK: - Errors

    @Test func errorsNameTheirPosition() {
        #expect(parseError("name == ")?.position == 8)
        #expect(parseError("(a == 1")?.position == 7)
        #expect(parseError("a === 1")?.position == 4)
        #expect(parseError("name == 'abc")?.position == 8)
        #expect(parseError("name == \"abc")?.kind == .syntax)
        #expect(parseError("")?.position == 0)
        #expect(parseError("a ==")?.position == 4)
        #expect(parseError("a == 1 AND")?.position == 10)
        #expect(parseError("a == 1)")?.position == 6)
        #expect(parseError("a ? 1")?.position == 2)
        #expect(parseError("a == 1 b == 2")?.position == 7)
        #expect(parseError("a IN {1, 2")?.position == 10)
        #expect(parseError("a ==[x] 1")?.position == 5)
        #expect(parseError("a == 0x")?.position == 5)
        #expect(parseError("AND == 1")?.position == 0)
        #expect(parseError("unknownFn(a) == 1")?.kind == .unknownFunction)
        #expect(parseError("SUBQUERY(a, b, c == 1).@count > 0")?.position == 12)
        #expect(parseError("a == 'x\\u12'") != nil)
        #expect(parseError("a.@bogus == 1") != nil)
    }

    @Test func argumentErrors() {
        let missing = parseError("a == %@ AND b == %@", 1)
        #expect(missing?.kind == .missingArgument)
        #expect(missing?.position == 17)
        #expect(parseError("a == %@")?.kind == .missingArgument)
        #expect(parseError("%K == 1", 5)?.kind == .invalidArgument)
        #expect(parseError("a == %d", "x")?.kind == .invalidArgument)
        #expect(parseError("a == %y", 1) != nil)
    }

    @Test func malformedFormatsNeverTrap() {
        let formats = ["name == ", "(a == 1", "a === 1", "name == 'abc", "a == %@ AND b == %@", "((((", "))))",
                       "{", "a IN {", "ANY", "NOT", "a BETWEEN", "SUBQUERY(", "FUNCTION(", "a[", "$", "#", "@",
                       "a == \"\\", "%", "%1$", String(repeating: "(", count: 5000) + "a == 1"]
        for format in formats {
            let p = NSPredicate(format: format, 1)
            #expect(p.formatError != nil, "\(format)")
            #expect(p.evaluate(with: ["a": 1, "name": "x"]) == false)
            #expect(p.predicateFormat == format)
        }
    }

    @Test func errorsBridgeToNSError() {
        guard let error = parseError("name == ") else { return }
        let ns = error as NSError
        #expect(ns.domain == NSCocoaErrorDomain)
        #expect(ns.code == 2048)
        #expect(ns.userInfo[PredicateFormatError.positionUserInfoKey] as? Int == 8)
        #expect((ns.userInfo[NSLocalizedDescriptionKey] as? String)?.contains("character 8") == true)
        #expect(error.description.contains("expected"))
    }

    @Test func equalityIsStructural() throws {
        let a = try NSPredicate.parse(format: "name == 'x' AND age > 3")
        let b = try NSPredicate.parse(format: "name = \"x\" && age > 3")
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(a != (try NSPredicate.parse(format: "name == 'x' AND age > 4")))
        #expect(try NSPredicate.parse(format: "a == 1") == (try NSPredicate.parse(format: "a == 1.0")))
        #expect(try NSPredicate.parse(format: "a IN {1, 2}") == (try NSPredicate.parse(format: "a IN %@", arguments: [[1, 2]])))
        #expect(try NSPredicate.parse(format: "a ==[c] 'x'") != (try NSPredicate.parse(format: "a == 'x'")))
        #expect(NSPredicate(value: true) == NSPredicate(value: true))
        #expect(NSPredicate(value: true) != NSPredicate(value: false))
        let set: Set<NSPredicate> = [a, b]
        #expect(set.count == 1)
    }

    @Test func substitutionVariables() throws {
        let template = try NSPredicate.parse(format: "age > $MIN AND name IN $NAMES AND SUBQUERY(pets, $MIN, $MIN.weight > 1).@count > 0")
        let filled = template.withSubstitutionVariables(["MIN": 40, "NAMES": ["Alice", "Bob"]])
        #expect(filled.predicateFormat.contains("age > 40"))
        #expect(filled.predicateFormat.contains("$MIN.weight"))
        #expect(filled.evaluate(with: QLFixtures.alice()))
        #expect(template.evaluate(with: QLFixtures.alice(), substitutionVariables: ["MIN": 50, "NAMES": ["Alice"]]) == false)
        #expect(template.evaluate(with: QLFixtures.alice(), substitutionVariables: ["MIN": 5, "NAMES": ["Alice"]]))
    }
}
