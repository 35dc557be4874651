import Foundation

/// The symbolic subscripts `FIRST`, `LAST` and `SIZE` of `collection[...]`; appears as the
/// constant value of the index argument of an `objectFrom:withIndex:` function expression.
public enum PredicateIndexSymbol: String, Hashable, Sendable {
    /// The first element.
    case first = "FIRST"
    /// The last element.
    case last = "LAST"
    /// The number of elements.
    case size = "SIZE"
}

/// The body of a block expression.
/// Unchecked Sendable: immutable; its only property is a `@Sendable` closure.
final class ExpressionBlock: @unchecked Sendable {
    let body: @Sendable (Any?, [Any], NSMutableDictionary?) -> Any

    init(_ body: @escaping @Sendable (Any?, [Any], NSMutableDictionary?) -> Any) {
        self.body = body
    }
}

/// An expression in a predicate: a constant, the evaluated object, a variable, a key path, a
/// function, an aggregate, a set operation, a subquery, a conditional or a block.
///
/// Expressions are immutable trees. To walk one, switch on `expressionType` and read:
/// - `.constantValue`: `constantValue` (already unwrapped; `nil` for NULL). Collections stay
///   collections (`[Any]`, `Set`, …); dates, UUIDs, data and objects are stored as given.
/// - `.evaluatedObject`: nothing (`SELF`).
/// - `.variable`: `variable` (name without `$`).
/// - `.keyPath`: `keyPath` / `keyPathComponents` (pre-split; `@count` etc. appear as
///   `.collectionOperator`). `operand` is the object the path starts from: the evaluated
///   object for ordinary key paths, or another expression for `$x.name`,
///   `SUBQUERY(...).@count`, `%@.@count`.
/// - `.function`: `function` (selector name such as `"add:to:"`, `"sum:"`, `"now"`,
///   `"objectFrom:withIndex:"`, `"castObject:toType:"`), `arguments`; `functionReceiver` is
///   non-nil only for `FUNCTION(receiver, 'selector', ...)`.
/// - `.aggregate`: `aggregateExpressions` (also `collection as? [NSExpression]`).
/// - `.unionSet/.intersectSet/.minusSet`: `left`, `right`.
/// - `.subquery`: `subqueryCollection` (also `collection`), `variable` (iterator name),
///   `predicate`.
/// - `.conditional`: `predicate`, `trueExpression`, `falseExpression`.
/// - `.anyKey`, `.block`: in-memory only.
open class NSExpression: @unchecked Sendable, Hashable, CustomStringConvertible {
    /// The kinds of expression (Apple's raw values).
    public enum ExpressionType: UInt, Sendable {
        /// A constant value.
        case constantValue = 0
        /// `SELF`, the object being evaluated.
        case evaluatedObject = 1
        /// A `$VARIABLE`, replaced before evaluation.
        case variable = 2
        /// A key path read from the evaluated object.
        case keyPath = 3
        /// A function of other expressions (`sum:`, `add:to:`, `FUNCTION(...)`).
        case function = 4
        /// The union of two collections.
        case unionSet = 5
        /// The intersection of two collections.
        case intersectSet = 6
        /// The elements of one collection that are not in another.
        case minusSet = 7
        /// `SUBQUERY(collection, $x, predicate)`.
        case subquery = 13
        /// A literal collection, `{a, b, c}`.
        case aggregate = 14
        /// `ANYKEY`.
        case anyKey = 15
        /// A value computed by a block.
        case block = 19
        /// `TERNARY(predicate, a, b)`.
        case conditional = 20
    }

    enum Node {
        case constant(Any?)
        case evaluatedObject
        case variable(String)
        case keyPath(operand: NSExpression?, path: String, components: [KeyPathComponent])
        case function(name: String, receiver: NSExpression?, arguments: [NSExpression])
        case aggregate([NSExpression])
        case union(NSExpression, NSExpression)
        case intersect(NSExpression, NSExpression)
        case minus(NSExpression, NSExpression)
        case subquery(collection: NSExpression, variable: String, predicate: NSPredicate)
        case anyKey
        case block(ExpressionBlock, arguments: [NSExpression])
        case conditional(NSPredicate, NSExpression, NSExpression)
    }

    let node: Node
    /// The kind of this expression.
    public let expressionType: ExpressionType
    /// Set when this expression came from `init(format:)` with a malformed format string; such an
    /// expression evaluates to nil and prints as the original text.
    public let formatError: PredicateFormatError?
    /// For constant collections and aggregates of constants: the element values, computed once.
    let constantElements: [Any]?
    let constantElementsOrdered: Bool
    /// The built-in function this function expression names, resolved once.
    let builtin: BuiltinFunction?
    /// The text of an unparsable format.
    let invalidFormat: String?

    init(node: Node, formatError: PredicateFormatError? = nil, invalidFormat: String? = nil) {
        self.node = node
        self.formatError = formatError
        self.invalidFormat = invalidFormat
        var builtin: BuiltinFunction?
        var elements: [Any]?
        var ordered = true
        switch node {
        case .constant(let value):
            expressionType = .constantValue
            if let value, let collection = KeyPathWalker.elements(of: value) {
                elements = collection
                ordered = (value as? PredicateCollection)?.predicateIsOrdered ?? true
            }
        case .evaluatedObject: expressionType = .evaluatedObject
        case .variable: expressionType = .variable
        case .keyPath: expressionType = .keyPath
        case .function(let name, let receiver, _):
            expressionType = .function
            builtin = receiver == nil ? BuiltinFunction(rawValue: name) : nil
        case .aggregate(let items):
            expressionType = .aggregate
            var values: [Any] = []
            var allConstant = true
            for item in items {
                guard case .constant(let value) = item.node else { allConstant = false; break }
                values.append(value ?? NSNull())
            }
            if allConstant { elements = values }
        case .union: expressionType = .unionSet
        case .intersect: expressionType = .intersectSet
        case .minus: expressionType = .minusSet
        case .subquery: expressionType = .subquery
        case .anyKey: expressionType = .anyKey
        case .block: expressionType = .block
        case .conditional: expressionType = .conditional
        }
        self.builtin = builtin
        self.constantElements = elements
        self.constantElementsOrdered = ordered
    }

    // MARK: - Initializers (Apple's names)

    /// A constant. Optionals are unwrapped and `NSNull` becomes nil.
    public convenience init(forConstantValue obj: Any?) {
        self.init(node: .constant(KeyPathWalker.normalize(obj)))
    }

    /// `SELF`.
    open class func expressionForEvaluatedObject() -> NSExpression {
        NSExpression(node: .evaluatedObject)
    }

    /// `$name`.
    public convenience init(forVariable string: String) {
        self.init(node: .variable(string))
    }

    /// A key path read from the evaluated object; split into components once, here.
    public convenience init(forKeyPath keyPath: String) {
        self.init(node: .keyPath(operand: nil, path: keyPath, components: KeyPathComponent.components(of: keyPath)))
    }

    /// A key path read from the value of another expression (`$x.name`, `SUBQUERY(...).@count`).
    public convenience init(forKeyPath keyPath: String, operand: NSExpression) {
        let start: NSExpression? = operand.expressionType == .evaluatedObject ? nil : operand
        self.init(node: .keyPath(operand: start, path: keyPath, components: KeyPathComponent.components(of: keyPath)))
    }

    /// A built-in function such as `"sum:"`, `"add:to:"` or `"now"`. Arguments that are not
    /// expressions are wrapped as constants.
    public convenience init(forFunction name: String, arguments parameters: [Any]) {
        self.init(node: .function(name: name, receiver: nil, arguments: parameters.map(NSExpression.wrap)))
    }

    /// `FUNCTION(target, 'selectorName', arguments...)`.
    public convenience init(forFunction target: NSExpression, selectorName name: String, arguments parameters: [Any]?) {
        self.init(node: .function(name: name, receiver: target, arguments: (parameters ?? []).map(NSExpression.wrap)))
    }

    /// `{a, b, c}`.
    public convenience init(forAggregate subexpressions: [Any]) {
        self.init(node: .aggregate(subexpressions.map(NSExpression.wrap)))
    }

    /// The union of two collection expressions.
    public convenience init(forUnionSet left: NSExpression, with right: NSExpression) {
        self.init(node: .union(left, right))
    }

    /// The intersection of two collection expressions.
    public convenience init(forIntersectSet left: NSExpression, with right: NSExpression) {
        self.init(node: .intersect(left, right))
    }

    /// The elements of `left` that are not in `right`.
    public convenience init(forMinusSet left: NSExpression, with right: NSExpression) {
        self.init(node: .minus(left, right))
    }

    /// `SUBQUERY(expression, $variable, predicate)`.
    public convenience init(forSubquery expression: NSExpression, usingIteratorVariable variable: String, predicate: NSPredicate) {
        self.init(node: .subquery(collection: expression, variable: variable, predicate: predicate))
    }

    /// `ANYKEY` (evaluates to nil in memory).
    open class func expressionForAnyKey() -> NSExpression {
        NSExpression(node: .anyKey)
    }

    /// An expression computed by a block (in-memory only).
    public convenience init(block: @escaping @Sendable (Any?, [Any], NSMutableDictionary?) -> Any, arguments: [NSExpression]?) {
        self.init(node: .block(ExpressionBlock(block), arguments: arguments ?? []))
    }

    /// `TERNARY(predicate, trueExpression, falseExpression)`.
    public convenience init(forConditional predicate: NSPredicate, trueExpression: NSExpression, falseExpression: NSExpression) {
        self.init(node: .conditional(predicate, trueExpression, falseExpression))
    }

    /// Parses an expression format such as `"salary * 12"` or `"sum:(items.price)"`. A malformed
    /// format gives an expression with `formatError` set that evaluates to nil.
    public convenience init(format expressionFormat: String, _ args: Any?...) {
        self.init(format: expressionFormat, argumentList: args)
    }

    /// Parses an expression format with arguments taken from an array.
    public convenience init(format expressionFormat: String, argumentArray arguments: [Any]) {
        self.init(format: expressionFormat, argumentList: arguments.map { Optional($0) })
    }

    convenience init(format: String, argumentList: [Any?]) {
        do {
            let parsed = try PredicateParser.parseExpression(format, arguments: argumentList)
            self.init(node: parsed.node)
        } catch let error as PredicateFormatError {
            self.init(node: .constant(nil), formatError: error, invalidFormat: format)
        } catch {
            self.init(node: .constant(nil),
                      formatError: PredicateFormatError(kind: .syntax, message: "\(error)", position: 0, format: format),
                      invalidFormat: format)
        }
    }

    /// Parses an expression format, throwing a `PredicateFormatError` that names the position.
    public static func parse(format: String, arguments: [Any?] = []) throws -> NSExpression {
        try PredicateParser.parseExpression(format, arguments: arguments)
    }

    static func wrap(_ value: Any) -> NSExpression {
        if let expression = value as? NSExpression { return expression }
        return NSExpression(forConstantValue: value)
    }

    // MARK: - Accessors (Apple's names)

    /// The value of a constant expression (nil otherwise).
    open var constantValue: Any? {
        if case .constant(let value) = node { return value }
        return nil
    }

    /// The key path of a key-path expression ("" otherwise).
    open var keyPath: String {
        if case .keyPath(_, let path, _) = node { return path }
        return ""
    }

    /// The pre-split components of a key-path expression (empty otherwise).
    public var keyPathComponents: [KeyPathComponent] {
        if case .keyPath(_, _, let components) = node { return components }
        return []
    }

    /// The selector name of a function expression ("" otherwise).
    open var function: String {
        if case .function(let name, _, _) = node { return name }
        return ""
    }

    /// The arguments of a function or block expression.
    open var arguments: [NSExpression]? {
        switch node {
        case .function(_, _, let arguments): return arguments
        case .block(_, let arguments): return arguments
        default: return nil
        }
    }

    /// The receiver of a `FUNCTION(receiver, ...)` expression; nil for built-in functions.
    public var functionReceiver: NSExpression? {
        if case .function(_, let receiver, _) = node { return receiver }
        return nil
    }

    /// What a key path or function is applied to: for key paths, the expression the path starts
    /// from (`SELF` for ordinary key paths); for functions, the receiver (a nil constant for
    /// built-in functions).
    open var operand: NSExpression {
        switch node {
        case .keyPath(let operand, _, _): return operand ?? .expressionForEvaluatedObject()
        case .function(_, let receiver, _): return receiver ?? NSExpression(forConstantValue: nil)
        default: return NSExpression(forConstantValue: nil)
        }
    }

    /// The variable name (also the iterator variable of a subquery).
    open var variable: String {
        switch node {
        case .variable(let name): return name
        case .subquery(_, let name, _): return name
        default: return ""
        }
    }

    /// The element expressions of an aggregate (`[NSExpression]`), or the collection expression
    /// of a subquery.
    open var collection: Any {
        switch node {
        case .aggregate(let items): return items
        case .subquery(let collection, _, _): return collection
        default: return [NSExpression]()
        }
    }

    /// Typed form of `collection` for aggregates.
    public var aggregateExpressions: [NSExpression]? {
        if case .aggregate(let items) = node { return items }
        return nil
    }

    /// Typed form of `collection` for subqueries.
    public var subqueryCollection: NSExpression? {
        if case .subquery(let collection, _, _) = node { return collection }
        return nil
    }

    /// The predicate of a subquery or conditional expression.
    open var predicate: NSPredicate {
        switch node {
        case .subquery(_, _, let predicate): return predicate
        case .conditional(let predicate, _, _): return predicate
        default: return NSPredicate(value: true)
        }
    }

    /// Left side of a set operation.
    open var left: NSExpression {
        switch node {
        case .union(let l, _), .intersect(let l, _), .minus(let l, _): return l
        default: return NSExpression(forConstantValue: nil)
        }
    }

    /// Right side of a set operation.
    open var right: NSExpression {
        switch node {
        case .union(_, let r), .intersect(_, let r), .minus(_, let r): return r
        default: return NSExpression(forConstantValue: nil)
        }
    }

    /// Result of a conditional when its predicate holds.
    open var trueExpression: NSExpression {
        if case .conditional(_, let t, _) = node { return t }
        return NSExpression(forConstantValue: nil)
    }

    /// Result of a conditional when its predicate does not hold.
    open var falseExpression: NSExpression {
        if case .conditional(_, _, let f) = node { return f }
        return NSExpression(forConstantValue: nil)
    }

    /// The block of a block expression.
    open var expressionBlock: (@Sendable (Any?, [Any], NSMutableDictionary?) -> Any)? {
        if case .block(let block, _) = node { return block.body }
        return nil
    }

    // MARK: - Evaluation

    /// Evaluates the expression against an object; `context` supplies variable values.
    open func expressionValue(with object: Any?, context: NSMutableDictionary?) -> Any? {
        var variables: [String: Any] = [:]
        if let context {
            for (key, value) in context {
                if let name = key as? String { variables[name] = value }
            }
        }
        let evaluation = EvaluationContext(variables: variables, dictionary: context)
        return KeyPathWalker.normalize(evaluate(object, evaluation))
    }

    /// Evaluates the expression against an object with the given variable values.
    public func expressionValue(with object: Any?, variables: [String: Any] = [:]) -> Any? {
        KeyPathWalker.normalize(evaluate(object, variables.isEmpty ? .empty : EvaluationContext(variables: variables)))
    }

    /// Does nothing; present for source compatibility.
    open func allowEvaluation() {}

    // MARK: - Description, equality

    /// A format string that parses back to an equal expression.
    open var description: String {
        PredicateFormatter.format(self)
    }

    public static func == (lhs: NSExpression, rhs: NSExpression) -> Bool {
        lhs.isEqual(rhs)
    }

    /// Structural equality.
    open func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? NSExpression else { return false }
        if self === other { return true }
        if let elements = constantElements, let otherElements = other.constantElements {
            return ValueComparison.collectionsEqual(elements, constantElementsOrdered && expressionType == other.expressionType,
                                                    otherElements, other.constantElementsOrdered && expressionType == other.expressionType,
                                                    element: ValueComparison.constantsEqual)
        }
        switch (node, other.node) {
        case let (.constant(a), .constant(b)):
            if invalidFormat != nil || other.invalidFormat != nil { return invalidFormat == other.invalidFormat }
            return ValueComparison.constantsEqual(a, b)
        case (.evaluatedObject, .evaluatedObject), (.anyKey, .anyKey): return true
        case let (.variable(a), .variable(b)): return a == b
        case let (.keyPath(oa, _, ca), .keyPath(ob, _, cb)):
            return ca == cb && Self.optionalEqual(oa, ob)
        case let (.function(na, ra, aa), .function(nb, rb, ab)):
            return na == nb && Self.optionalEqual(ra, rb) && aa == ab
        case let (.aggregate(a), .aggregate(b)): return a == b
        case let (.union(a1, a2), .union(b1, b2)),
             let (.intersect(a1, a2), .intersect(b1, b2)),
             let (.minus(a1, a2), .minus(b1, b2)):
            return a1 == b1 && a2 == b2
        case let (.subquery(ca, va, pa), .subquery(cb, vb, pb)):
            return va == vb && ca == cb && pa == pb
        case let (.block(ba, aa), .block(bb, ab)): return ba === bb && aa == ab
        case let (.conditional(pa, ta, fa), .conditional(pb, tb, fb)): return pa == pb && ta == tb && fa == fb
        default: return false
        }
    }

    private static func optionalEqual(_ a: NSExpression?, _ b: NSExpression?) -> Bool {
        switch (a, b) {
        case (nil, nil): return true
        case let (x?, y?): return x == y
        default: return false
        }
    }

    open func hash(into hasher: inout Hasher) {
        if let elements = constantElements {
            ValueComparison.hashConstant(elements, into: &hasher)
            return
        }
        hasher.combine(expressionType)
        switch node {
        case .constant(let value):
            if let invalidFormat { hasher.combine(invalidFormat) } else { ValueComparison.hashConstant(value, into: &hasher) }
        case .evaluatedObject, .anyKey: break
        case .variable(let name): hasher.combine(name)
        case .keyPath(let operand, _, let components):
            hasher.combine(components)
            operand?.hash(into: &hasher)
        case .function(let name, let receiver, let arguments):
            hasher.combine(name)
            receiver?.hash(into: &hasher)
            hasher.combine(arguments)
        case .aggregate(let items): hasher.combine(items)
        case .union(let a, let b), .intersect(let a, let b), .minus(let a, let b):
            hasher.combine(a)
            hasher.combine(b)
        case .subquery(let collection, let variable, let predicate):
            hasher.combine(collection)
            hasher.combine(variable)
            hasher.combine(predicate)
        case .block(let block, let arguments):
            hasher.combine(ObjectIdentifier(block))
            hasher.combine(arguments)
        case .conditional(let predicate, let t, let f):
            hasher.combine(predicate)
            hasher.combine(t)
            hasher.combine(f)
        }
    }

    // MARK: - Substitution

    /// The leaf rewrite that replaces `$variables` found in `variables` by constants, leaving
    /// subquery iterator variables alone inside their subquery.
    static func substitution(of variables: [String: Any]) -> (NSExpression, Set<String>) -> NSExpression? {
        { leaf, bound in
            guard case .variable(let name) = leaf.node, !bound.contains(name), let value = variables[name] else { return nil }
            return NSExpression(forConstantValue: value)
        }
    }

    /// A copy with each leaf (a constant or a variable) replaced by what `rewrite` returns for
    /// it, or kept where it returns nil. `rewrite` also gets the subquery iterator variables
    /// bound where the leaf is. Unchanged subtrees are shared, and an unchanged tree is `self`.
    func rewritingLeaves(bound: Set<String> = [], _ rewrite: (NSExpression, Set<String>) -> NSExpression?) -> NSExpression {
        func each(_ expression: NSExpression) -> NSExpression { expression.rewritingLeaves(bound: bound, rewrite) }
        /// The rewritten expressions, or nil when every one is unchanged.
        func all(_ expressions: [NSExpression]) -> [NSExpression]? {
            let rewritten = expressions.map(each)
            return zip(rewritten, expressions).allSatisfy({ $0 === $1 }) ? nil : rewritten
        }
        /// The node with two rewritten operands, or self when neither changed.
        func pair(_ a: NSExpression, _ b: NSExpression, _ make: (NSExpression, NSExpression) -> Node) -> NSExpression {
            let (newA, newB) = (each(a), each(b))
            return newA === a && newB === b ? self : NSExpression(node: make(newA, newB))
        }
        switch node {
        case .constant, .variable:
            return rewrite(self, bound) ?? self
        case .evaluatedObject, .anyKey:
            return self
        case .keyPath(let operand, let path, let components):
            guard let operand else { return self }
            let rewritten = each(operand)
            if rewritten === operand { return self }
            if rewritten.expressionType == .evaluatedObject { return NSExpression(forKeyPath: path) }
            return NSExpression(node: .keyPath(operand: rewritten, path: path, components: components))
        case .function(let name, let receiver, let arguments):
            let newReceiver = receiver.map(each)
            let newArguments = all(arguments)
            if newReceiver === receiver && newArguments == nil { return self }
            return NSExpression(node: .function(name: name, receiver: newReceiver, arguments: newArguments ?? arguments))
        case .aggregate(let items):
            return all(items).map { NSExpression(node: .aggregate($0)) } ?? self
        case .union(let a, let b): return pair(a, b) { .union($0, $1) }
        case .intersect(let a, let b): return pair(a, b) { .intersect($0, $1) }
        case .minus(let a, let b): return pair(a, b) { .minus($0, $1) }
        case .subquery(let collection, let variable, let predicate):
            let newCollection = each(collection)
            let newPredicate = predicate.rewritingLeaves(bound: bound.union([variable]), rewrite)
            if newCollection === collection && newPredicate === predicate { return self }
            return NSExpression(node: .subquery(collection: newCollection, variable: variable, predicate: newPredicate))
        case .block(let block, let arguments):
            return all(arguments).map { NSExpression(node: .block(block, arguments: $0)) } ?? self
        case .conditional(let predicate, let t, let f):
            let newPredicate = predicate.rewritingLeaves(bound: bound, rewrite)
            let (newT, newF) = (each(t), each(f))
            if newPredicate === predicate && newT === t && newF === f { return self }
            return NSExpression(node: .conditional(newPredicate, newT, newF))
        }
    }
}
