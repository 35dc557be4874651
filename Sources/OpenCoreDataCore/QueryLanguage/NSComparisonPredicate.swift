import Foundation

/// A comparison between two expressions: `left OP[options] right`, optionally with an
/// `ANY`/`ALL` modifier applying the comparison to each element of the left collection.
///
/// `NONE x OP y` is represented, as Apple does, as `NOT (ANY x OP y)` (an `NSCompoundPredicate`).
/// The right side of `IN` / `BETWEEN` may be an aggregate expression (`{1, 2}`) or a constant
/// collection (`%@` with an array or set).
/// Unchecked Sendable: immutable `let`s; its `PatternCache` guards itself with a lock.
open class NSComparisonPredicate: NSPredicate, @unchecked Sendable {
    /// The comparison operators (Apple's raw values).
    public enum Operator: UInt, Sendable, CaseIterable {
        /// `<`
        case lessThan = 0
        /// `<=`
        case lessThanOrEqualTo = 1
        /// `>`
        case greaterThan = 2
        /// `>=`
        case greaterThanOrEqualTo = 3
        /// `==`
        case equalTo = 4
        /// `!=`
        case notEqualTo = 5
        /// `MATCHES`: the whole string matches a regular expression.
        case matches = 6
        /// `LIKE`: a pattern with `*` and `?` wildcards.
        case like = 7
        /// `BEGINSWITH`
        case beginsWith = 8
        /// `ENDSWITH`
        case endsWith = 9
        /// `IN`: membership in a collection (or a substring of a string).
        case `in` = 10
        /// A comparison by a named method (not evaluated here).
        case customSelector = 11
        /// `CONTAINS`: a collection holds the value, or a string contains the substring.
        case contains = 99
        /// `BETWEEN {low, high}`, bounds included.
        case between = 100
    }

    /// How the left side is used.
    public enum Modifier: UInt, Sendable {
        /// Compare the left value itself.
        case direct = 0
        /// Every element of the left collection must satisfy the comparison (true when empty).
        case all = 1
        /// Some element of the left collection must satisfy the comparison.
        case any = 2
    }

    /// String comparison options: `[c]`, `[d]`, `[n]`.
    public struct Options: OptionSet, Sendable, Hashable {
        public let rawValue: UInt

        public init(rawValue: UInt) {
            self.rawValue = rawValue
        }

        /// `[c]`: ignore case.
        public static let caseInsensitive = Options(rawValue: 1)
        /// `[d]`: ignore diacritics.
        public static let diacriticInsensitive = Options(rawValue: 2)
        /// `[n]`: the strings are already normalized (accepted, changes nothing).
        public static let normalized = Options(rawValue: 4)
    }

    /// The left side.
    public let leftExpression: NSExpression
    /// The right side.
    public let rightExpression: NSExpression
    /// The comparison operator.
    public let predicateOperatorType: Operator
    /// How the left side is used: directly, or each element with `ANY`/`ALL`.
    public let comparisonPredicateModifier: Modifier
    /// The string comparison options.
    public let options: Options
    /// The selector of a custom-selector comparison (not evaluated in memory).
    public let customSelector: Selector?

    // Evaluation state computed once.
    let foldCase: Bool
    let foldDiacritics: Bool
    /// The right side when it is constant, classified and folded for the options.
    let preparedRight: PredicateValue?
    let likePattern: LikePattern?
    let regex: RegexMatcher?
    let membership: MembershipSet?
    let patternCache: PatternCache?

    /// Creates a comparison of two expressions.
    public init(leftExpression lhs: NSExpression, rightExpression rhs: NSExpression,
                modifier: Modifier, type: Operator, options: Options = []) {
        leftExpression = lhs
        rightExpression = rhs
        comparisonPredicateModifier = modifier
        predicateOperatorType = type
        self.options = options
        customSelector = nil
        foldCase = options.contains(.caseInsensitive) && type != .matches
        foldDiacritics = options.contains(.diacriticInsensitive)
        var prepared: PredicateValue?
        if let elements = rhs.constantElements {
            prepared = .collection(elements, ordered: rhs.constantElementsOrdered)
        } else if rhs.expressionType == .constantValue {
            prepared = PredicateValue.classify(rhs.constantValue)
        }
        if let value = prepared {
            prepared = ComparisonEvaluator.fold(value, case: foldCase, diacritics: foldDiacritics, elements: true)
        }
        preparedRight = prepared
        var like: LikePattern?
        var regex: RegexMatcher?
        var membership: MembershipSet?
        if let prepared {
            switch (type, prepared) {
            case (.like, .string(let pattern)): like = LikePattern(pattern)
            case (.matches, .string(let pattern)):
                regex = RegexMatcher(pattern: pattern, caseInsensitive: options.contains(.caseInsensitive))
            case (.in, .collection(let elements, _)): membership = MembershipSet(elements)
            default: break
            }
        }
        likePattern = like
        self.regex = regex
        self.membership = membership
        patternCache = (prepared == nil && (type == .like || type == .matches)) ? PatternCache() : nil
        super.init(content: .subclass)
    }

    /// A comparison that calls a custom selector. It prints and compares structurally but
    /// evaluates to false in memory (Linux has no Objective-C runtime).
    public init(leftExpression lhs: NSExpression, rightExpression rhs: NSExpression, customSelector selector: Selector) {
        leftExpression = lhs
        rightExpression = rhs
        comparisonPredicateModifier = .direct
        predicateOperatorType = .customSelector
        options = []
        customSelector = selector
        foldCase = false
        foldDiacritics = false
        preparedRight = nil
        likePattern = nil
        regex = nil
        membership = nil
        patternCache = nil
        super.init(content: .subclass)
    }

    public required init(invalidFormat format: String, error: PredicateFormatError) {
        leftExpression = NSExpression(forConstantValue: nil)
        rightExpression = NSExpression(forConstantValue: nil)
        comparisonPredicateModifier = .direct
        predicateOperatorType = .equalTo
        options = []
        customSelector = nil
        foldCase = false
        foldDiacritics = false
        preparedRight = nil
        likePattern = nil
        regex = nil
        membership = nil
        patternCache = nil
        super.init(invalidFormat: format, error: error)
    }

    override func evaluate(object: Any?, context: EvaluationContext) -> Bool {
        if isInvalid { return false }
        return ComparisonEvaluator.evaluate(self, object, context)
    }

    override func rewritingLeaves(bound: Set<String> = [], _ rewrite: (NSExpression, Set<String>) -> NSExpression?) -> NSPredicate {
        if formatError != nil { return self }
        let left = leftExpression.rewritingLeaves(bound: bound, rewrite)
        let right = rightExpression.rewritingLeaves(bound: bound, rewrite)
        if left === leftExpression && right === rightExpression { return self }
        if let customSelector {
            return NSComparisonPredicate(leftExpression: left, rightExpression: right, customSelector: customSelector)
        }
        return NSComparisonPredicate(leftExpression: left, rightExpression: right,
                                     modifier: comparisonPredicateModifier, type: predicateOperatorType, options: options)
    }

    open override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? NSComparisonPredicate else { return false }
        if self === other { return true }
        if formatError != nil || other.formatError != nil {
            return formatError == other.formatError && predicateFormat == other.predicateFormat
        }
        return predicateOperatorType == other.predicateOperatorType
            && comparisonPredicateModifier == other.comparisonPredicateModifier
            && options == other.options
            && customSelector == other.customSelector
            && leftExpression == other.leftExpression
            && rightExpression == other.rightExpression
    }

    open override func hash(into hasher: inout Hasher) {
        hasher.combine(predicateOperatorType)
        hasher.combine(comparisonPredicateModifier)
        hasher.combine(options.rawValue)
        hasher.combine(leftExpression)
        hasher.combine(rightExpression)
    }
}

/// Fast membership test for `x IN {constant strings and integers}`.
struct MembershipSet {
    let integers: Set<Int64>
    let strings: Set<String>
    let elements: [Any]

    /// Nil unless every element is a string or an integral number.
    init?(_ elements: [Any]) {
        var integers = Set<Int64>()
        var strings = Set<String>()
        for element in elements {
            switch PredicateValue.classify(element) {
            case .string(let s): strings.insert(s)
            case .number(let n):
                guard let exact = n.exactInt64 else { return nil }
                integers.insert(exact)
            default: return nil
            }
        }
        self.integers = integers
        self.strings = strings
        self.elements = elements
    }

    /// nil when the answer needs the linear scan.
    func contains(_ value: PredicateValue) -> Bool? {
        switch value {
        case .null: return false
        case .number(let n):
            guard let exact = n.exactInt64 else { return n.isNaN ? false : (n.doubleValue.rounded(.towardZero) != n.doubleValue ? false : nil) }
            return integers.contains(exact)
        case .string(let s):
            guard let index = strings.firstIndex(of: s) else { return false }
            return StringComparison.binaryEqual(strings[index], s) ? true : nil
        default:
            return nil
        }
    }
}
