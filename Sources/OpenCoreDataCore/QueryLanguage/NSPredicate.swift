import Foundation

/// Lets `NSPredicate(format:)` hand back the subclass the format describes
/// (`NSComparisonPredicate`, `NSCompoundPredicate`, …), as Apple's class cluster does.
public protocol PredicateFormatConstructible {}

/// The body of a block predicate.
/// Unchecked Sendable: immutable; its only property is a `@Sendable` closure.
final class PredicateBlock: @unchecked Sendable {
    let body: @Sendable (Any?, [String: Any]?) -> Bool

    init(_ body: @escaping @Sendable (Any?, [String: Any]?) -> Bool) {
        self.body = body
    }
}

/// A logical condition on an object.
///
/// Instances are immutable. `NSPredicate(format:)` returns an `NSComparisonPredicate` or
/// `NSCompoundPredicate` for comparisons and `AND`/`OR`/`NOT`; plain `NSPredicate` instances
/// are `TRUEPREDICATE`/`FALSEPREDICATE` (`booleanValue`), block predicates, and predicates whose
/// format could not be parsed (`formatError` set; they evaluate to false and print their text).
open class NSPredicate: @unchecked Sendable, Hashable, CustomStringConvertible, PredicateFormatConstructible {
    enum Content {
        case constant(Bool)
        case block(PredicateBlock)
        case invalid(String)
        /// The predicate is a subclass that stores its own content.
        case subclass
    }

    let content: Content

    /// Set when the predicate came from a malformed format string.
    public let formatError: PredicateFormatError?

    /// Whether `formatError` is set (checked on every evaluation).
    let isInvalid: Bool

    init(content: Content, formatError: PredicateFormatError? = nil) {
        self.content = content
        self.formatError = formatError
        self.isInvalid = formatError != nil
    }

    /// `TRUEPREDICATE` or `FALSEPREDICATE`.
    public convenience init(value: Bool) {
        self.init(content: .constant(value))
    }

    /// A predicate evaluated by a block (in-memory only; cannot be translated to SQL).
    public convenience init(block: @escaping @Sendable (Any?, [String: Any]?) -> Bool) {
        self.init(content: .block(PredicateBlock(block)))
    }

    /// A predicate standing for a format string that could not be parsed.
    public required init(invalidFormat format: String, error: PredicateFormatError) {
        self.content = .invalid(format)
        self.formatError = error
        self.isInvalid = true
    }

    /// Parses a predicate format, throwing a `PredicateFormatError` that names the position.
    public static func parse(format: String, arguments: [Any?] = []) throws -> NSPredicate {
        try PredicateParser.parsePredicate(format, arguments: arguments)
    }

    /// For `NSSubclass(format:)` when the format describes another kind of predicate: a
    /// predicate of the receiving class with the same meaning, if there is one.
    class func adapting(_ parsed: NSPredicate) -> NSPredicate? {
        nil
    }

    // MARK: - Properties

    /// The value of `TRUEPREDICATE`/`FALSEPREDICATE`; nil for every other predicate.
    public var booleanValue: Bool? {
        if case .constant(let value) = content { return value }
        return nil
    }

    /// Whether this is a block predicate.
    public var isBlockPredicate: Bool {
        if case .block = content { return true }
        return false
    }

    /// A format string that parses back to an equal predicate (the original text for a
    /// predicate whose format could not be parsed).
    open var predicateFormat: String {
        PredicateFormatter.format(self)
    }

    open var description: String {
        predicateFormat
    }

    // MARK: - Evaluation

    /// Whether the object satisfies the predicate.
    open func evaluate(with object: Any?) -> Bool {
        evaluate(object: object, context: .empty)
    }

    /// Whether the object satisfies the predicate, with values for `$variables`.
    open func evaluate(with object: Any?, substitutionVariables bindings: [String: Any]?) -> Bool {
        guard let bindings, !bindings.isEmpty else { return evaluate(object: object, context: .empty) }
        return evaluate(object: object, context: EvaluationContext(variables: bindings))
    }

    /// Evaluation entry point overridden by the subclasses.
    func evaluate(object: Any?, context: EvaluationContext) -> Bool {
        switch content {
        case .constant(let value): return value
        case .block(let block): return block.body(object, context.variables)
        case .invalid, .subclass: return false
        }
    }

    /// Does nothing; present for source compatibility.
    open func allowEvaluation() {}

    // MARK: - Substitution

    /// A copy with `$variables` replaced by constant values. Variables without a value are kept.
    public func withSubstitutionVariables(_ variables: [String: Any]) -> Self {
        (substituting(variables) as? Self) ?? self
    }

    /// A copy with `$variables` found in `variables` replaced by constants.
    func substituting(_ variables: [String: Any]) -> NSPredicate {
        if variables.isEmpty { return self }
        return rewritingLeaves(NSExpression.substitution(of: variables))
    }

    /// A copy with the leaves of its expressions rewritten (see
    /// `NSExpression.rewritingLeaves`); overridden by the subclasses that hold expressions.
    func rewritingLeaves(bound: Set<String> = [], _ rewrite: (NSExpression, Set<String>) -> NSExpression?) -> NSPredicate {
        self
    }

    // MARK: - Equality

    public static func == (lhs: NSPredicate, rhs: NSPredicate) -> Bool {
        lhs.isEqual(rhs)
    }

    /// Structural equality: predicates parsed from the same text are equal.
    open func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? NSPredicate else { return false }
        if self === other { return true }
        guard Swift.type(of: other) == NSPredicate.self, Swift.type(of: self) == NSPredicate.self else { return false }
        switch (content, other.content) {
        case let (.constant(a), .constant(b)): return a == b
        case let (.block(a), .block(b)): return a === b
        case let (.invalid(a), .invalid(b)): return a == b
        default: return false
        }
    }

    open func hash(into hasher: inout Hasher) {
        switch content {
        case .constant(let value): hasher.combine(value)
        case .block(let block): hasher.combine(ObjectIdentifier(block))
        case .invalid(let text): hasher.combine(text)
        case .subclass: hasher.combine(0)
        }
    }
}

extension PredicateFormatConstructible where Self: NSPredicate {
    /// Parses a predicate format string. Arguments fill `%@` (any value, including nil,
    /// collections, dates and objects), `%K` (a key path string), `%d`/`%i`/`%ld`… (integers),
    /// `%f`/`%lf` (floating point) and `%s` (strings).
    ///
    /// A malformed format never traps: the result is a predicate with `formatError` set that
    /// evaluates to false and whose `predicateFormat` is the original text.
    public init(format predicateFormat: String, _ args: Any?...) {
        self.init(format: predicateFormat, argumentList: args)
    }

    /// Parses a predicate format string with arguments taken from an array.
    public init(format predicateFormat: String, argumentArray arguments: [Any]?) {
        self.init(format: predicateFormat, argumentList: (arguments ?? []).map { Optional($0) })
    }

    init(format: String, argumentList: [Any?]) {
        let parsed: NSPredicate
        do {
            parsed = try PredicateParser.parsePredicate(format, arguments: argumentList)
        } catch let error as PredicateFormatError {
            self = Self(invalidFormat: format, error: error)
            return
        } catch {
            self = Self(invalidFormat: format, error: PredicateFormatError(kind: .syntax, message: "\(error)", position: 0, format: format))
            return
        }
        if let same = parsed as? Self {
            self = same
        } else if let adapted = Self.adapting(parsed) as? Self {
            self = adapted
        } else {
            let error = PredicateFormatError(kind: .unsupported,
                                       message: "the format describes a \(Swift.type(of: parsed)), which cannot be represented as \(Self.self)",
                                       position: 0, format: format)
            self = Self(invalidFormat: format, error: error)
        }
    }
}
