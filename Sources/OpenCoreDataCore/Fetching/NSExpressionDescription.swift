import Foundation

/// A computed column of a dictionary fetch: an expression (a key path, or a function such as
/// `sum:` over one) and the name its value has in each result dictionary.
/// Unchecked Sendable: not locked: set it up first; the fetch request using it only reads it.
open class NSExpressionDescription: NSPropertyDescription, @unchecked Sendable {
    /// The expression to compute.
    public var expression: NSExpression?
    /// The type of the computed value.
    public var expressionResultType: NSAttributeType = .undefinedAttributeType

    /// Creates an empty description; set `name`, `expression` and `expressionResultType`.
    public override init() {
        super.init()
    }

    /// A copy with the same name, expression and result type (`NSCopying`).
    open override func copy(with zone: NSZone? = nil) -> Any {
        let copy = NSExpressionDescription()
        copySettings(to: copy)
        copy.expression = expression
        copy.expressionResultType = expressionResultType
        return copy
    }

    open override var description: String {
        "(NSExpressionDescription) \(name) = \(expression.map { "\($0)" } ?? "nil")"
    }
}
