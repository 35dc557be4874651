import Foundation

/// A type a fetch request can return: managed objects, object IDs, dictionaries or counts.
///
/// `NSFetchRequest` and `NSFetchedResultsController` are generic over any result type without a
/// constraint, so `NSFetchRequest<NSFetchRequestResult>` (the existential) works as it does with
/// Objective-C, where the protocol conforms to itself.
public protocol NSFetchRequestResult: AnyObject {}

extension NSDictionary: NSFetchRequestResult {}
extension NSNumber: NSFetchRequestResult {}

/// What a fetch request returns.
public struct NSFetchRequestResultType: OptionSet, Sendable, Hashable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    /// Managed objects (the default).
    public static let managedObjectResultType = NSFetchRequestResultType([])
    /// Object IDs.
    public static let managedObjectIDResultType = NSFetchRequestResultType(rawValue: 1)
    /// Dictionaries of the properties to fetch.
    public static let dictionaryResultType = NSFetchRequestResultType(rawValue: 2)
    /// A single count.
    public static let countResultType = NSFetchRequestResultType(rawValue: 4)
}
