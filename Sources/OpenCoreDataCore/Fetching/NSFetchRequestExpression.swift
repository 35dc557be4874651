import Foundation

/// An expression whose value is the result of a fetch request run in a context: the fetched
/// results, or their number for a count-only expression.
///
/// Both parts are expressions, evaluated first against the same object: `requestExpression` must
/// give an `NSFetchRequest` and `contextExpression` an `NSManagedObjectContext`. Evaluate it on
/// the context's queue, as the fetch itself requires. A fetch that fails, or parts that give
/// something else, evaluate to nil. It is evaluated in memory only, as a block expression is: its
/// `expressionType` is `.block` (Core Data's value for it, 50, has no case in this enum).
public final class NSFetchRequestExpression: NSExpression, @unchecked Sendable {
    /// The expression that gives the fetch request.
    public let requestExpression: NSExpression
    /// The expression that gives the managed object context.
    public let contextExpression: NSExpression
    /// Whether the expression gives the number of results (`count(for:)`) instead of the results.
    public let isCountOnlyRequest: Bool

    init(request: NSExpression, context: NSExpression, countOnly: Bool) {
        requestExpression = request
        contextExpression = context
        isCountOnlyRequest = countOnly
        super.init(node: .block(ExpressionBlock { _, values, _ in Self.run(values, countOnly: countOnly) as Any }, arguments: [request, context]))
    }

    /// An expression that runs the request `fetch` gives in the context `context` gives: a fetch,
    /// or with `countFlag` a count.
    public class func expression(forFetch fetch: NSExpression, context: NSExpression, countOnly countFlag: Bool) -> NSExpression {
        NSFetchRequestExpression(request: fetch, context: context, countOnly: countFlag)
    }

    /// The fetch or count of the evaluated request and context; nil if they are not a request
    /// and a context, or the fetch fails.
    private static func run(_ values: [Any], countOnly: Bool) -> Any? {
        guard values.count == 2, let request = (values[0] as? FetchRequestErasing)?.erased,
              let context = values[1] as? NSManagedObjectContext else { return nil }
        if countOnly { return (try? context.count(for: request)).map { NSNumber(value: $0) } }
        return try? context.fetch(request)
    }
}
