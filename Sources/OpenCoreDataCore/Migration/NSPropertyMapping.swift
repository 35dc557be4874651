import Foundation

/// How one property of a destination entity gets its value during a migration.
///
/// `valueExpression` is evaluated with the migration's variables (`$source`, `$manager`,
/// `$entityMapping`, `$entityPolicy`, and `$destination` for relationships); a nil expression
/// leaves the destination property at its default value.
/// Unchecked Sendable: not locked: built first, then used by one migration at a time.
open class NSPropertyMapping: NSObject, @unchecked Sendable {
    /// The name of the destination property.
    open var name: String?
    /// The expression whose value the destination property takes.
    open var valueExpression: NSExpression?
    /// Custom information for a migration policy.
    open var userInfo: [AnyHashable: Any]?

    /// What Xcode's "autogenerate" flag asks for: the expression is derived from the models when
    /// the mapping model is matched to them (see `NSMappingModel.resolveGeneratedExpressions`).
    struct ExpressionGeneration {
        /// The entity mapping whose destination instances a relationship takes.
        var sourceMappingName: String?
        /// The expression (text) naming the source instances, `$source.<name>` when nil.
        var sourceKeyPath: String?
    }

    /// Set for a mapping whose expression is still to be generated.
    var generation: ExpressionGeneration?

    /// Creates an empty property mapping.
    public override init() {}

    /// Creates a property mapping for a destination property.
    public init(name: String?, valueExpression: NSExpression?) {
        self.name = name
        self.valueExpression = valueExpression
    }

    /// The property name and its expression.
    open override var description: String {
        "\(name ?? "?") = \(valueExpression.map { $0.description } ?? "(default)")"
    }
}
