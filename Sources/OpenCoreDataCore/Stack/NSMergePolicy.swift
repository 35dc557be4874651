import Foundation

/// The kinds of merge policy, Apple's top-level name.
public typealias NSMergePolicyType = NSMergePolicy.MergePolicyType

/// How a save resolves conflicts between the context's changes and the store.
///
/// A context's save hands the conflicts it meets to `resolve(mergeConflicts:)` of its
/// `mergePolicy`; when that returns, the save is tried again with the resolved objects. Subclasses
/// may override the `resolve` methods (calling `super` for the standard behaviour).
/// Unchecked Sendable: immutable: `mergeType` is its only stored property.
open class NSMergePolicy: NSObject, @unchecked Sendable {
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

    // MARK: Resolving

    /// Resolves a list of conflicts (`NSMergeConflict`s and `NSConstraintConflict`s) by passing
    /// each kind to its own method; throws when the policy can't resolve them.
    open func resolve(mergeConflicts list: [Any]) throws {
        let lockingConflicts = list.compactMap { $0 as? NSMergeConflict }
        let constraintConflicts = list.compactMap { $0 as? NSConstraintConflict }
        if !lockingConflicts.isEmpty { try resolve(optimisticLockingConflicts: lockingConflicts) }
        if !constraintConflicts.isEmpty { try resolve(constraintConflicts: constraintConflicts) }
    }

    /// Resolves objects that changed in the store since they were read: the error policy throws
    /// 133020 (`NSManagedObjectMergeError`) listing them; the others merge as their kind says.
    open func resolve(optimisticLockingConflicts list: [NSMergeConflict]) throws {
        guard mergeType != .errorMergePolicyType else { throw Self.mergeError(list) }
        for conflict in list { merge(conflict) }
    }

    /// Resolves uniqueness-constraint violations: the error policy throws 133021
    /// (`NSManagedObjectConstraintMergeError`) listing them; the trump policies merge the objects
    /// with the rows they collide with.
    open func resolve(constraintConflicts list: [NSConstraintConflict]) throws {
        switch mergeType {
        case .mergeByPropertyObjectTrumpMergePolicyType, .overwriteMergePolicyType:
            for conflict in list { conflict.resolve(insertedObjectWins: true) }
        case .mergeByPropertyStoreTrumpMergePolicyType, .rollbackMergePolicyType:
            for conflict in list { conflict.resolve(insertedObjectWins: false) }
        case .errorMergePolicyType:
            throw Self.constraintError(list)
        }
    }

    /// The error a save fails with when uniqueness-constraint conflicts remain.
    static func constraintError(_ list: [NSConstraintConflict]) -> NSError {
        CoreDataError.make(.constraintConflict, "Constraint unique violation: \(list.map(\.description).joined(separator: "; ")).",
                           userInfo: [NSPersistentStoreSaveConflictsErrorKey: list])
    }

    /// The error a save fails with when optimistic-locking conflicts remain.
    static func mergeError(_ list: [NSMergeConflict]) -> NSError {
        let names = list.map { "\($0.sourceObject.objectID)" }.joined(separator: ", ")
        return CoreDataError.make(.mergeConflict, "Could not merge changes: \(names) changed in the store since \(list.count == 1 ? "it was" : "they were") read.",
                                  userInfo: [NSPersistentStoreSaveConflictsErrorKey: list])
    }

    /// Brings one conflicting object to the state this policy chooses, with the store's version,
    /// so that saving it again succeeds.
    private func merge(_ conflict: NSMergeConflict) {
        let object = conflict.sourceObject
        guard let context = object.managedObjectContext else { return }
        guard let persisted = conflict.persistedSnapshot else {
            // The store's deletion wins whatever the policy (see docs/Differences.md).
            context.forgetObjectDeletedInStore(object)
            return
        }
        object.fireFaultIfNeeded()
        let cached = conflict.cachedSnapshot ?? [:]
        let current = object.snapshot(of: object.values)
        for property in object.entity.frozenProperties where !property.isTransient {
            if let relationship = property as? NSRelationshipDescription, relationship.isToMany {
                // To-many contents are not in snapshots: rollback reloads them, the others keep the context's.
                if mergeType == .rollbackMergePolicyType { object.values[property.slot] = nil }
                continue
            }
            let name = property.name
            let stored = NSManagedObject.unwrapped(persisted[name])
            let original = NSManagedObject.unwrapped(cached[name])
            if takesStoreValue(changedInContext: !ValueComparison.isEqual(NSManagedObject.unwrapped(current[name]), original),
                               changedInStore: !ValueComparison.isEqual(stored, original)) {
                object.values[property.slot] = stored
            }
        }
        object.committedValues = object.slotValues(from: persisted)
        object.storeVersion = Int64(conflict.newVersionNumber)
        if mergeType == .rollbackMergePolicyType { context.forgetChanges(of: object) }
        object.awake(fromSnapshotEvents: .mergePolicy)
    }

    /// Whether a property takes the store's value under this policy.
    private func takesStoreValue(changedInContext: Bool, changedInStore: Bool) -> Bool {
        switch mergeType {
        case .mergeByPropertyStoreTrumpMergePolicyType: changedInStore
        case .mergeByPropertyObjectTrumpMergePolicyType: !changedInContext
        case .overwriteMergePolicyType: false
        case .rollbackMergePolicyType, .errorMergePolicyType: true
        }
    }
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
