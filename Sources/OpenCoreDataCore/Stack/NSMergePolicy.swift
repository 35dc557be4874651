import Foundation

/// How a save resolves conflicts between the context's changes and the store.
open class NSMergePolicy: @unchecked Sendable {
    /// The kinds of merge policy.
    public enum MergePolicyType: UInt, Sendable {
        /// Fail the save on a conflict.
        case errorMergePolicyType = 0
        /// Keep the store's values for conflicting properties.
        case mergeByPropertyStoreTrumpMergePolicyType = 1
        /// Keep the context's values for conflicting properties.
        case mergeByPropertyObjectTrumpMergePolicyType = 2
        /// Write the context's objects over the store's.
        case overwriteMergePolicyType = 3
        /// Discard the context's changes to conflicting objects.
        case rollbackMergePolicyType = 4
    }

    /// The policy's kind.
    public let mergeType: MergePolicyType

    /// Creates a policy of a kind.
    public init(merge type: MergePolicyType) { self.mergeType = type }

    /// Fail on conflict (the default).
    public static let error = NSMergePolicy(merge: .errorMergePolicyType)
    /// Store wins, property by property.
    public static let mergeByPropertyStoreTrump = NSMergePolicy(merge: .mergeByPropertyStoreTrumpMergePolicyType)
    /// Context wins, property by property.
    public static let mergeByPropertyObjectTrump = NSMergePolicy(merge: .mergeByPropertyObjectTrumpMergePolicyType)
    /// Context overwrites the store.
    public static let overwrite = NSMergePolicy(merge: .overwriteMergePolicyType)
    /// Context's changes are discarded.
    public static let rollback = NSMergePolicy(merge: .rollbackMergePolicyType)
}

/// Fail on conflict.
public let NSErrorMergePolicy = NSMergePolicy.error
/// Store wins, property by property.
public let NSMergeByPropertyStoreTrumpMergePolicy = NSMergePolicy.mergeByPropertyStoreTrump
/// Context wins, property by property.
public let NSMergeByPropertyObjectTrumpMergePolicy = NSMergePolicy.mergeByPropertyObjectTrump
/// Context overwrites the store.
public let NSOverwriteMergePolicy = NSMergePolicy.overwrite
/// Context's changes are discarded.
public let NSRollbackMergePolicy = NSMergePolicy.rollback
