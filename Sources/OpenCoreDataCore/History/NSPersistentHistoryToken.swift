import Foundation

/// A bookmark in persistent history: the last transaction seen in each store.
///
/// Tokens are opaque. Keep the `token` of the last transaction you processed and pass it to
/// `NSPersistentHistoryChangeRequest.fetchHistory(after:)` to get only what came after it. A token
/// is `NSSecureCoding`, so it is saved as on Apple's platforms with
/// `NSKeyedArchiver.archivedData(withRootObject:requiringSecureCoding:)` and read back with
/// `NSKeyedUnarchiver.unarchivedObject(ofClass:from:)`; it is also `Codable`.
/// Unchecked Sendable: immutable: one `let` dictionary of Sendable values.
public final class NSPersistentHistoryToken: NSObject, NSSecureCoding, Codable, @unchecked Sendable {
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

    /// Tokens decode only what they encode: a dictionary of numbers by store identifier.
    public static var supportsSecureCoding: Bool { true }

    /// Archives the token: its transaction numbers by store identifier.
    public func encode(with coder: NSCoder) {
        let numbers = NSMutableDictionary()
        for (store, number) in transactionNumbers { numbers[NSString(string: store)] = NSNumber(value: number) }
        coder.encode(numbers, forKey: Self.archiveKey)
    }

    /// Reads a token archived by `encode(with:)`; nil (with the coder's error set when it is a
    /// keyed unarchiver) for anything else.
    public init?(coder: NSCoder) {
        guard let numbers = coder.decodeObject(of: [NSDictionary.self, NSString.self, NSNumber.self], forKey: Self.archiveKey) as? NSDictionary else {
            coder.failWithError(CoreDataError.make(.fileReadCorruptFile, "The archive holds no persistent history token."))
            return nil
        }
        var decoded: [String: Int64] = [:]
        for (store, number) in numbers {
            guard let store = store as? String, let number = number as? NSNumber else {
                coder.failWithError(CoreDataError.make(.fileReadCorruptFile, "The archived persistent history token is malformed."))
                return nil
            }
            decoded[store] = number.int64Value
        }
        transactionNumbers = decoded
        super.init()
    }

    /// The archive key of the transaction numbers.
    private static let archiveKey = "transactionNumbers"

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
