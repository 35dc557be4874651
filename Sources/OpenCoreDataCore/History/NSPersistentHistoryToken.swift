import Foundation

/// A bookmark in persistent history: the last transaction seen in each store.
///
/// Tokens are opaque. Keep the `token` of the last transaction you processed (a token is `Codable`,
/// so it can be saved with `JSONEncoder` or `PropertyListEncoder`) and pass it to
/// `NSPersistentHistoryChangeRequest.fetchHistory(after:)` to get only what came after it.
/// Unchecked Sendable: immutable: one `let` dictionary of Sendable values.
public final class NSPersistentHistoryToken: NSObject, Codable, @unchecked Sendable {
    /// The number of the last transaction covered, by store identifier (`NSStoreUUID`).
    let transactionNumbers: [String: Int64]

    init(transactionNumbers: [String: Int64]) {
        self.transactionNumbers = transactionNumbers
    }

    /// The last transaction number this token covers in a store (nil: none of that store's history).
    func transactionNumber(inStore identifier: String) -> Int64? {
        transactionNumbers[identifier]
    }

    private enum CodingKeys: String, CodingKey {
        case transactionNumbers
    }

    /// Reads a token written by `encode(to:)`.
    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        transactionNumbers = try container.decode([String: Int64].self, forKey: .transactionNumbers)
    }

    /// Writes the token so that it can be read back later, in this process or another.
    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(transactionNumbers, forKey: .transactionNumbers)
    }

    /// Tokens are equal when they mark the same place in the same stores.
    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as AnyObject? as? NSPersistentHistoryToken else { return false }
        return transactionNumbers == other.transactionNumbers
    }

    /// A hash consistent with `isEqual(_:)`.
    public override var hash: Int {
        var hasher = Hasher()
        for (store, number) in transactionNumbers.sorted(by: { $0.key < $1.key }) {
            hasher.combine(store)
            hasher.combine(number)
        }
        return hasher.finalize()
    }

    /// The stores and transaction numbers, for logs.
    public override var description: String {
        let parts = transactionNumbers.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }
        return "<NSPersistentHistoryToken \(parts.joined(separator: ", "))>"
    }
}
