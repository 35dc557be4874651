import Foundation

/// `AND`, `OR` or `NOT` of other predicates.
///
/// An `AND` of no predicates is true, an `OR` of none is false; `NOT` negates the `AND` of its
/// subpredicates (normally exactly one). The parser builds flat lists: `a AND b AND c` is one
/// `AND` with three subpredicates.
/// Unchecked Sendable: immutable: every stored property is a `let`.
open class NSCompoundPredicate: NSPredicate, @unchecked Sendable {
    /// The logical operators (Apple's raw values).
    public enum LogicalType: UInt, Sendable {
        /// `NOT`
        case not = 0
        /// `AND`
        case and = 1
        /// `OR`
        case or = 2
    }

    /// The logical operator.
    public let compoundPredicateType: LogicalType
    /// The subpredicates, typed.
    public let predicates: [NSPredicate]

    /// The subpredicates (Apple's type; every element is an `NSPredicate`).
    open var subpredicates: [Any] {
        predicates
    }

    /// Creates a compound predicate of a type over subpredicates.
    public init(type: LogicalType, subpredicates: [NSPredicate]) {
        compoundPredicateType = type
        predicates = subpredicates
        super.init(content: .subclass)
    }

    /// True when every subpredicate is true (true for none).
    public convenience init(andPredicateWithSubpredicates subpredicates: [NSPredicate]) {
        self.init(type: .and, subpredicates: subpredicates)
    }

    /// True when at least one subpredicate is true (false for none).
    public convenience init(orPredicateWithSubpredicates subpredicates: [NSPredicate]) {
        self.init(type: .or, subpredicates: subpredicates)
    }

    /// The negation of a predicate.
    public convenience init(notPredicateWithSubpredicate predicate: NSPredicate) {
        self.init(type: .not, subpredicates: [predicate])
    }

    public required init(invalidFormat format: String, error: PredicateFormatError) {
        compoundPredicateType = .and
        predicates = []
        super.init(invalidFormat: format, error: error)
    }

    override class func adapting(_ parsed: NSPredicate) -> NSPredicate? {
        NSCompoundPredicate(type: .and, subpredicates: [parsed])
    }

    override func evaluate(object: Any?, context: EvaluationContext) -> Bool {
        if isInvalid { return false }
        switch compoundPredicateType {
        case .and:
            for predicate in predicates where !predicate.evaluate(object: object, context: context) { return false }
            return true
        case .or:
            for predicate in predicates where predicate.evaluate(object: object, context: context) { return true }
            return false
        case .not:
            for predicate in predicates where !predicate.evaluate(object: object, context: context) { return true }
            return false
        }
    }

    override func rewritingLeaves(bound: Set<String> = [], _ rewrite: (NSExpression, Set<String>) -> NSExpression?) -> NSPredicate {
        if formatError != nil { return self }
        let substituted = predicates.map { $0.rewritingLeaves(bound: bound, rewrite) }
        if zip(substituted, predicates).allSatisfy({ $0 === $1 }) { return self }
        return NSCompoundPredicate(type: compoundPredicateType, subpredicates: substituted)
    }

    open override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? NSCompoundPredicate else { return false }
        if self === other { return true }
        if formatError != nil || other.formatError != nil {
            return formatError == other.formatError && predicateFormat == other.predicateFormat
        }
        return compoundPredicateType == other.compoundPredicateType && predicates == other.predicates
    }

    open override func hash(into hasher: inout Hasher) {
        hasher.combine(compoundPredicateType)
        hasher.combine(predicates)
    }
}
