import Foundation

/// Converts Foundation's `#Predicate` expression trees into `NSPredicate`/`NSExpression` trees,
/// resolving key paths against the model, so `#Predicate<Team> { $0.wins > 3 }` can be a fetch
/// request's predicate (run in SQL like any other).
///
/// Supported: comparisons (`<`, `<=`, `>`, `>=`, `==`, `!=`), `&&`, `||`, `!`, constants, `nil`,
/// key paths (through to-one relationships and optional chaining) and `String.contains`,
/// `starts(with:)` and `Sequence.contains` on constants. Anything else is
/// reported by `NSPredicate(_:)` returning a predicate whose `formatError` says so.
protocol NSPredicateConvertibleExpression {
    func nsExpression() throws -> NSExpression
}

/// An unsupported `#Predicate` construct.
struct FoundationPredicateConversionError: Error, CustomStringConvertible {
    let description: String
}

extension NSPredicate {
    /// The `NSPredicate` form of a Foundation `Predicate` on a managed object class.
    public convenience init<Input: NSManagedObject>(_ predicate: Predicate<Input>) {
        do {
            guard let root = predicate.expression as? NSPredicateConvertibleExpression else {
                throw FoundationPredicateConversionError(description: "unsupported #Predicate expression \(type(of: predicate.expression))")
            }
            let expression = try root.nsExpression()
            guard let converted = expression.constantValue as? NSPredicate else {
                throw FoundationPredicateConversionError(description: "the #Predicate body is not a condition")
            }
            self.init(format: converted.predicateFormat)
        } catch {
            self.init(format: "#Predicate: \(error)")
        }
    }
}

/// Wraps a predicate as an expression while converting (comparisons nest inside `&&` and `!`).
private func wrap(_ predicate: NSPredicate) -> NSExpression { NSExpression(forConstantValue: predicate) }

private func condition(_ expression: NSExpression) throws -> NSPredicate {
    if let predicate = expression.constantValue as? NSPredicate { return predicate }
    if expression.expressionType == .keyPath {
        return NSComparisonPredicate(leftExpression: expression, rightExpression: NSExpression(forConstantValue: true), modifier: .direct, type: .equalTo, options: [])
    }
    if let value = expression.constantValue as? Bool { return NSPredicate(value: value) }
    throw FoundationPredicateConversionError(description: "\(expression) is not a condition")
}

private func compare(_ lhs: NSExpression, _ rhs: NSExpression, _ type: NSComparisonPredicate.Operator, _ options: NSComparisonPredicate.Options = []) -> NSExpression {
    wrap(NSComparisonPredicate(leftExpression: lhs, rightExpression: rhs, modifier: .direct, type: type, options: options))
}

extension PredicateExpressions.Variable: NSPredicateConvertibleExpression {
    func nsExpression() throws -> NSExpression { .expressionForEvaluatedObject() }
}

extension PredicateExpressions.KeyPath: NSPredicateConvertibleExpression where Root: NSPredicateConvertibleExpression {
    func nsExpression() throws -> NSExpression {
        let base = try root.nsExpression()
        let name = KeyPathNames.name(of: keyPath, rootType: Root.Output.self)
        if base.expressionType == .keyPath { return NSExpression(forKeyPath: base.keyPath + "." + name) }
        return NSExpression(forKeyPath: name)
    }
}

extension PredicateExpressions.Value: NSPredicateConvertibleExpression {
    func nsExpression() throws -> NSExpression { NSExpression(forConstantValue: value) }
}

extension PredicateExpressions.NilLiteral: NSPredicateConvertibleExpression {
    func nsExpression() throws -> NSExpression { NSExpression(forConstantValue: nil) }
}

extension PredicateExpressions.Comparison: NSPredicateConvertibleExpression where LHS: NSPredicateConvertibleExpression, RHS: NSPredicateConvertibleExpression {
    func nsExpression() throws -> NSExpression {
        let type: NSComparisonPredicate.Operator = switch op {
        case .lessThan: .lessThan
        case .lessThanOrEqual: .lessThanOrEqualTo
        case .greaterThan: .greaterThan
        case .greaterThanOrEqual: .greaterThanOrEqualTo
        }
        return compare(try lhs.nsExpression(), try rhs.nsExpression(), type)
    }
}

extension PredicateExpressions.Equal: NSPredicateConvertibleExpression where LHS: NSPredicateConvertibleExpression, RHS: NSPredicateConvertibleExpression {
    func nsExpression() throws -> NSExpression { compare(try lhs.nsExpression(), try rhs.nsExpression(), .equalTo) }
}

extension PredicateExpressions.NotEqual: NSPredicateConvertibleExpression where LHS: NSPredicateConvertibleExpression, RHS: NSPredicateConvertibleExpression {
    func nsExpression() throws -> NSExpression { compare(try lhs.nsExpression(), try rhs.nsExpression(), .notEqualTo) }
}

extension PredicateExpressions.Conjunction: NSPredicateConvertibleExpression where LHS: NSPredicateConvertibleExpression, RHS: NSPredicateConvertibleExpression {
    func nsExpression() throws -> NSExpression {
        wrap(NSCompoundPredicate(andPredicateWithSubpredicates: [try condition(lhs.nsExpression()), try condition(rhs.nsExpression())]))
    }
}

extension PredicateExpressions.Disjunction: NSPredicateConvertibleExpression where LHS: NSPredicateConvertibleExpression, RHS: NSPredicateConvertibleExpression {
    func nsExpression() throws -> NSExpression {
        wrap(NSCompoundPredicate(orPredicateWithSubpredicates: [try condition(lhs.nsExpression()), try condition(rhs.nsExpression())]))
    }
}

extension PredicateExpressions.Negation: NSPredicateConvertibleExpression where Wrapped: NSPredicateConvertibleExpression {
    func nsExpression() throws -> NSExpression {
        wrap(NSCompoundPredicate(notPredicateWithSubpredicate: try condition(wrapped.nsExpression())))
    }
}

extension PredicateExpressions.OptionalFlatMap: NSPredicateConvertibleExpression
where LHS: NSPredicateConvertibleExpression, RHS: NSPredicateConvertibleExpression {
    func nsExpression() throws -> NSExpression {
        // `$0.priceInfo?.priceCategory`: the closure's key path continues the wrapped one.
        let base = try wrapped.nsExpression()
        let rest = try transform.nsExpression()
        guard base.expressionType == .keyPath else { return rest }
        if rest.expressionType == .keyPath { return NSExpression(forKeyPath: base.keyPath + "." + rest.keyPath) }
        return rest
    }
}

extension PredicateExpressions.StringContainsRegex: NSPredicateConvertibleExpression {
    func nsExpression() throws -> NSExpression {
        throw FoundationPredicateConversionError(description: "regular expressions in #Predicate are not supported; use MATCHES in NSPredicate(format:)")
    }
}

extension PredicateExpressions.SequenceContains: NSPredicateConvertibleExpression
where LHS: NSPredicateConvertibleExpression, RHS: NSPredicateConvertibleExpression {
    func nsExpression() throws -> NSExpression {
        let collection = try sequence.nsExpression()
        let element = try element.nsExpression()
        if collection.expressionType == .constantValue, collection.constantValue is String {
            return compare(element, collection, .in)
        }
        if collection.expressionType == .constantValue { return compare(element, collection, .in) }
        return compare(collection, element, .contains)
    }
}

extension PredicateExpressions.SequenceStartsWith: NSPredicateConvertibleExpression
where Base: NSPredicateConvertibleExpression, Prefix: NSPredicateConvertibleExpression {
    func nsExpression() throws -> NSExpression { compare(try base.nsExpression(), try prefix.nsExpression(), .beginsWith) }
}
