import Foundation
import OpenCoreData

/// What the predicate parser promises for any text, checked on one fuzz input.
///
/// The input, read as UTF-8, is parsed as a predicate (with a fixed list of arguments for its
/// `%@`, `%K`, `%d`… specifiers) and as an expression. Either it is rejected with a
/// `PredicateFormatError`, or the result prints as a format that parses back to an equal tree and
/// prints the same again; a parsed predicate is also evaluated against a sample object. A crash
/// anywhere in this, or a broken promise (returned as text), is a bug.
public enum PredicateFuzzCheck {
    /// The arguments the specifiers of a fuzz input take, in order.
    nonisolated(unsafe) public static let arguments: [Any?] = [
        "name", 42, "pets", 2.5, ["a", "b"] as [Any], nil, Date(timeIntervalSinceReferenceDate: 86_400),
        "tags.@count", Decimal(string: "12.5") as Any, UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F") as Any,
    ]

    /// The object parsed predicates are evaluated against: keys the seed predicates use.
    nonisolated(unsafe) static let sample: [String: Any] = [
        "name": "Zoë Smith", "age": 42, "a": 1, "b": 2, "c": 3.5, "flags": 11, "tags": ["a", "b"],
        "pets": [["name": "Rex", "weight": 12, "species": "dog"], ["name": "Tom", "weight": 4, "species": "cat"]] as [[String: Any]],
        "birthday": Date(timeIntervalSinceReferenceDate: 0), "price": Decimal(string: "12.5") as Any,
        "dict": ["key": 1], "spouse": ["name": "Bob"],
    ]

    /// Values for `$variables`.
    nonisolated(unsafe) static let variables: [String: Any] = ["MIN": 1, "MAX": 100, "VAR": 1, "x": ["name": "x"]]

    /// Checks one input; returns a description of the broken promise, or nil when all held.
    public static func check(_ data: Data) -> String? {
        let format = String(decoding: data, as: UTF8.self)
        let predicate = roundTrip(format, "predicate", parse: { try NSPredicate.parse(format: $0, arguments: $1) }, print: \.predicateFormat) {
            _ = $0.evaluate(with: sample, substitutionVariables: variables)
        }
        if let predicate { return predicate }
        return roundTrip(format, "expression", parse: { try NSExpression.parse(format: $0, arguments: $1) }, print: \.description) {
            _ = $0.expressionValue(with: sample, variables: variables)
        }
    }

    /// Parses `format` as a `kind`; a tree that comes out must print as text that parses back to
    /// an equal tree and prints the same again, and is then evaluated.
    static func roundTrip<Tree: Equatable>(_ format: String, _ kind: String, parse: (String, [Any?]) throws -> Tree,
                                           print: (Tree) -> String, evaluate: (Tree) -> Void) -> String? {
        let parsed: Tree
        do {
            parsed = try parse(format, arguments)
        } catch is PredicateFormatError {
            return nil
        } catch {
            return "parsing a \(kind) threw \(type(of: error)), not a PredicateFormatError: \(error)"
        }
        let printed = print(parsed)
        let reparsed: Tree
        do {
            reparsed = try parse(printed, [])
        } catch {
            return "the \(kind) prints as \(printed), which does not parse: \(error)"
        }
        if print(reparsed) != printed {
            return "printing the \(kind) is not stable: \(printed) → \(print(reparsed))"
        }
        if !containsNaN(printed) && reparsed != parsed {
            return "the \(kind) \(printed) parses back to a different \(kind)"
        }
        evaluate(parsed)
        return nil
    }

    /// NaN is unequal to itself, so trees holding it can't compare equal after a round trip.
    static func containsNaN(_ printed: String) -> Bool {
        printed.range(of: "nan", options: .caseInsensitive) != nil
    }
}
