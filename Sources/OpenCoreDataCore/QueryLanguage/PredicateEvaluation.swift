import Foundation

/// Variable bindings during one evaluation.
///
/// A context is only mutated by the subquery that created it (to bind its iterator variable),
/// so the shared `empty` context, which no subquery owns, is never mutated and may be used
/// from any thread.
final class EvaluationContext: @unchecked Sendable {
    var variables: [String: Any]
    /// The caller's dictionary for block expressions, when one was given.
    let dictionary: NSMutableDictionary?

    init(variables: [String: Any] = [:], dictionary: NSMutableDictionary? = nil) {
        self.variables = variables
        self.dictionary = dictionary
    }

    /// The context of evaluations without variables.
    static let empty = EvaluationContext()

    /// A context for a subquery: the same bindings, which the subquery may then extend.
    func child() -> EvaluationContext {
        EvaluationContext(variables: variables, dictionary: dictionary)
    }
}

extension NSExpression {
    /// Evaluates the expression. Results may contain boxed optionals or `NSNull`; consumers
    /// classify them (`PredicateValue.classify`) which treats both as nil.
    func evaluate(_ object: Any?, _ context: EvaluationContext) -> Any? {
        switch node {
        case .constant(let value):
            return value
        case .evaluatedObject:
            return object
        case .variable(let name):
            return context.variables[name]
        case .keyPath(let operand, _, let components):
            let base = operand.map { $0.evaluate(object, context) } ?? object
            if components.count == 1, case .key(let key) = components[0] {
                return KeyPathWalker.value(of: base, forKey: key)
            }
            return KeyPathWalker.value(of: base, components: components[...])
        case .function:
            return ExpressionFunctions.evaluate(self, object, context)
        case .aggregate(let items):
            if let constantElements { return constantElements }
            return items.map { $0.evaluate(object, context) ?? NSNull() }
        case .union(let l, let r):
            let a = collectionValue(l, object, context), b = collectionValue(r, object, context)
            return ValueComparison.distinct(a + b)
        case .intersect(let l, let r):
            let a = ValueComparison.distinct(collectionValue(l, object, context))
            let b = collectionValue(r, object, context).map(PredicateValue.classify)
            return a.filter { item in
                let c = PredicateValue.classify(item)
                return b.contains { ValueComparison.equal(c, $0) }
            }
        case .minus(let l, let r):
            let a = ValueComparison.distinct(collectionValue(l, object, context))
            let b = collectionValue(r, object, context).map(PredicateValue.classify)
            return a.filter { item in
                let c = PredicateValue.classify(item)
                return !b.contains { ValueComparison.equal(c, $0) }
            }
        case .subquery(let collection, let variable, let predicate):
            let elements = collectionValue(collection, object, context)
            let inner = context.child()
            var result: [Any] = []
            for element in elements {
                inner.variables[variable] = element
                if predicate.evaluate(object: element, context: inner) { result.append(element) }
            }
            return result
        case .anyKey:
            return nil
        case .block(let block, let arguments):
            let values = arguments.map { KeyPathWalker.normalize($0.evaluate(object, context)) ?? NSNull() }
            let dictionary = context.dictionary ?? {
                let d = NSMutableDictionary()
                for (key, value) in context.variables { d[key] = value }
                return d
            }()
            return block.body(object, values, dictionary)
        case .conditional(let predicate, let t, let f):
            return predicate.evaluate(object: object, context: context) ? t.evaluate(object, context) : f.evaluate(object, context)
        }
    }

    /// The value of an expression as a list of elements (a non-collection is one element, nil none).
    func collectionValue(_ expression: NSExpression, _ object: Any?, _ context: EvaluationContext) -> [Any] {
        if let constantElements = expression.constantElements { return constantElements }
        guard let value = KeyPathWalker.normalize(expression.evaluate(object, context)) else { return [] }
        return KeyPathWalker.elements(of: value) ?? [value]
    }
}

/// Evaluation of `NSComparisonPredicate` with Core Data's in-memory semantics.
enum ComparisonEvaluator {
    static func evaluate(_ predicate: NSComparisonPredicate, _ object: Any?, _ context: EvaluationContext) -> Bool {
        let right: PredicateValue
        if let prepared = predicate.preparedRight {
            right = prepared
        } else {
            right = fold(PredicateValue.classify(predicate.rightExpression.evaluate(object, context)),
                         case: predicate.foldCase, diacritics: predicate.foldDiacritics, elements: true)
        }
        let left = PredicateValue.classify(predicate.leftExpression.evaluate(object, context))
        switch predicate.comparisonPredicateModifier {
        case .direct:
            return compare(predicate, left, right)
        case .any:
            switch left {
            case .null: return false
            case .collection(let elements, _):
                for element in elements where compare(predicate, PredicateValue.classify(element), right) { return true }
                return false
            default: return compare(predicate, left, right)
            }
        case .all:
            switch left {
            case .null: return true
            case .collection(let elements, _):
                for element in elements where !compare(predicate, PredicateValue.classify(element), right) { return false }
                return true
            default: return compare(predicate, left, right)
            }
        }
    }

    /// Folds strings (and, if `elements`, strings inside a collection) for `[c]`/`[d]`.
    static func fold(_ value: PredicateValue, case foldCase: Bool, diacritics: Bool, elements: Bool) -> PredicateValue {
        if !foldCase && !diacritics { return value }
        switch value {
        case .string(let s):
            return .string(StringComparison.fold(s, caseInsensitive: foldCase, diacriticInsensitive: diacritics))
        case .collection(let items, let ordered) where elements:
            return .collection(items.map { item -> Any in
                if case .string(let s) = PredicateValue.classify(item) {
                    return StringComparison.fold(s, caseInsensitive: foldCase, diacriticInsensitive: diacritics)
                }
                return item
            }, ordered: ordered)
        default:
            return value
        }
    }

    /// One comparison of an (unfolded) left value with the prepared right value.
    static func compare(_ p: NSComparisonPredicate, _ leftValue: PredicateValue, _ right: PredicateValue) -> Bool {
        let left = p.foldCase || p.foldDiacritics ? fold(leftValue, case: p.foldCase, diacritics: p.foldDiacritics, elements: false) : leftValue
        switch p.predicateOperatorType {
        case .equalTo:
            return ValueComparison.equal(left, right)
        case .notEqualTo:
            return !ValueComparison.equal(left, right)
        case .lessThan:
            return ValueComparison.order(left, right) == .orderedAscending
        case .lessThanOrEqualTo:
            guard let r = ValueComparison.order(left, right) else { return false }
            return r != .orderedDescending
        case .greaterThan:
            return ValueComparison.order(left, right) == .orderedDescending
        case .greaterThanOrEqualTo:
            guard let r = ValueComparison.order(left, right) else { return false }
            return r != .orderedAscending
        case .beginsWith:
            guard case .string(let s) = left, case .string(let prefix) = right else { return false }
            return StringComparison.hasPrefix(s, prefix)
        case .endsWith:
            guard case .string(let s) = left, case .string(let suffix) = right else { return false }
            return StringComparison.hasSuffix(s, suffix)
        case .contains:
            switch (left, right) {
            case let (.string(s), .string(needle)):
                return StringComparison.contains(s, needle)
            case let (.collection(elements, _), _):
                return elements.contains { element in
                    ValueComparison.equal(fold(PredicateValue.classify(element), case: p.foldCase, diacritics: p.foldDiacritics, elements: false), right)
                }
            default:
                return false
            }
        case .like:
            guard case .string(let s) = left, case .string(let pattern) = right else { return false }
            let compiled = p.likePattern ?? p.patternCache?.likePattern(pattern) ?? LikePattern(pattern)
            return compiled.matches(s)
        case .matches:
            guard case .string(let s) = left, case .string(let pattern) = right else { return false }
            let matcher = p.regex
                ?? p.patternCache?.regexMatcher(pattern, caseInsensitive: p.options.contains(.caseInsensitive))
                ?? RegexMatcher(pattern: pattern, caseInsensitive: p.options.contains(.caseInsensitive))
            return matcher.matches(s)
        case .in:
            switch right {
            case .collection(let elements, _):
                if let membership = p.membership, let answer = membership.contains(left) { return answer }
                return elements.contains { ValueComparison.equal(left, PredicateValue.classify($0)) }
            case .string(let haystack):
                guard case .string(let needle) = left else { return false }
                return StringComparison.contains(haystack, needle)
            default:
                return false
            }
        case .between:
            guard case .collection(let bounds, _) = right, bounds.count == 2 else { return false }
            guard let low = ValueComparison.order(left, PredicateValue.classify(bounds[0])),
                  let high = ValueComparison.order(left, PredicateValue.classify(bounds[1])) else { return false }
            return low != .orderedAscending && high != .orderedDescending
        case .customSelector:
            return false
        }
    }
}
