import Foundation

/// Names a generation of the stores' data: the state they were in at one moment, which a context
/// pinned to it keeps reading whatever is saved since (`NSManagedObjectContext.setQueryGenerationFrom(_:)`).
///
/// `current` asks for the newest generation, fixed at the context's next read. A pinned context's
/// `queryGenerationToken` names the generation it reads; another context of the same coordinator
/// can pin to that token and read the same data. Two tokens are equal when they name the same
/// generation.
/// Unchecked Sendable: immutable.
public final class NSQueryGenerationToken: NSObject, NSCopying, @unchecked Sendable {
    /// The token that pins a context to the newest generation, fixed at its next fetch or fault.
    public static let current = NSQueryGenerationToken(generation: nil)

    /// The generation named; nil for `current`.
    let generation: QueryGeneration?

    init(generation: QueryGeneration?) {
        self.generation = generation
        super.init()
    }

    /// Tokens are immutable: a copy is the token itself.
    public func copy(with zone: NSZone? = nil) -> Any { self }

    /// Whether `object` is a token of the same generation.
    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? NSQueryGenerationToken else { return false }
        return other.generation === generation
    }

    public override var hash: Int { generation.map { ObjectIdentifier($0).hashValue } ?? 0 }

    /// The token, for logs.
    public override var description: String {
        guard let generation else { return "<NSQueryGenerationToken current>" }
        return "<NSQueryGenerationToken \(generation.number)>"
    }
}

/// The key of a pinned context's new query generation token in its did-save notification.
public let NSManagedObjectContextQueryGenerationKey = "queryGeneration"
