import Foundation
import GRDB

/// The comparisons SQL can't express with their in-memory meaning, which a store's queries hand
/// to SQLite as the function `OCD_MATCH`, so SQL and in-memory evaluation agree.
///
/// `OCD_MATCH(token, value)` evaluates the comparison registered under `token` (its left side is
/// the column's value); `OCD_MATCH(token, left, right)` compares two columns. Tokens live for one
/// query. Each store has its own registry, whose function its connections call: a query locks
/// only its own store's registry, once per row it tests.
final class SQLPredicateRegistry: Sendable {
    /// A registered comparison, and its two-value form built once for column-to-column comparisons.
    struct Entry {
        let predicate: NSComparisonPredicate
        let pairwise: NSComparisonPredicate
    }

    private let entries = LockedValue<(next: Int64, predicates: [Int64: Entry])>((1, [:]))

    /// Registers a comparison for one query; `unregister` it when the query is done.
    func register(_ predicate: NSComparisonPredicate) -> Int64 {
        let pairwise = NSComparisonPredicate(leftExpression: NSExpression(forKeyPath: "l"), rightExpression: NSExpression(forKeyPath: "r"),
                                             modifier: .direct, type: predicate.predicateOperatorType, options: predicate.options)
        return entries.withLock { state in
            let token = state.next
            state.next += 1
            state.predicates[token] = Entry(predicate: predicate, pairwise: pairwise)
            return token
        }
    }

    /// Forgets a comparison registered by `register`.
    func unregister(_ token: Int64) {
        entries.withLock { _ = $0.predicates.removeValue(forKey: token) }
    }

    /// The number of comparisons registered now (0 between queries).
    var count: Int { entries.withLock { $0.predicates.count } }

    /// `OCD_MATCH`, answering from this registry.
    func matchFunction() -> DatabaseFunction {
        DatabaseFunction("OCD_MATCH", argumentCount: nil, pure: true) { [entries] values -> DatabaseValueConvertible? in
            guard values.count >= 2, let token = Int64.fromDatabaseValue(values[0]),
                  let entry = entries.withLock({ $0.predicates[token] }) else { return false }
            let left = Self.swiftValue(values[1])
            if values.count == 3 {
                var pair: [String: Any] = [:]
                pair["l"] = left
                pair["r"] = Self.swiftValue(values[2])
                return entry.pairwise.evaluate(with: pair)
            }
            return entry.predicate.evaluate(with: left)
        }
    }

    static func swiftValue(_ value: DatabaseValue) -> Any? {
        switch value.storage {
        case .null: nil
        case .int64(let integer): integer
        case .double(let double): double
        case .string(let string): string
        case .blob(let data): data
        }
    }
}
