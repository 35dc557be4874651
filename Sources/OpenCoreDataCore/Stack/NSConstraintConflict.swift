import Foundation

/// A violation of an entity's uniqueness constraint found by a save: inserted objects whose
/// constrained values equal each other's or those of a row already in the store.
open class NSConstraintConflict: NSObject {
    /// The names of the properties of the violated constraint.
    public let constraint: [String]
    /// The values the conflicting objects share, by property name.
    public let constraintValues: [String: Any]
    /// The object already in the store with these values; nil when only unsaved objects collide.
    public let databaseObject: NSManagedObject?
    /// The stored values of `databaseObject`, by property name.
    public let databaseSnapshot: [String: Any]?
    /// The unsaved objects that violate the constraint.
    public let conflictingObjects: [NSManagedObject]
    /// The values of each conflicting object when the conflict was found, by property name.
    public let conflictingSnapshots: [[AnyHashable: Any]]
    /// The store's version of `databaseObject`.
    let databaseVersion: Int64

    /// Creates a conflict between unsaved objects and, optionally, an object already stored (as
    /// a custom merge policy's tests do).
    public convenience init(constraint contraint: [String], database databaseObject: NSManagedObject?, databaseSnapshot: [AnyHashable: Any]?,
                conflicting conflictingObjects: [NSManagedObject], conflictingSnapshots: [Any]) {
        let snapshot = databaseSnapshot.map { Dictionary(uniqueKeysWithValues: $0.compactMap { key, value in (key.base as? String).map { ($0, value) } }) }
        self.init(constraint: contraint, databaseObject: databaseObject, databaseSnapshot: snapshot,
                  conflicting: conflictingObjects, snapshots: conflictingSnapshots.compactMap { $0 as? [AnyHashable: Any] }, databaseVersion: 0)
    }

    init(constraint: [String], databaseObject: NSManagedObject?, databaseSnapshot: [String: Any]?,
         conflicting: [NSManagedObject], snapshots: [[AnyHashable: Any]], databaseVersion: Int64) {
        self.constraint = constraint
        self.databaseObject = databaseObject
        self.databaseSnapshot = databaseSnapshot
        self.conflictingObjects = conflicting
        self.conflictingSnapshots = snapshots
        self.databaseVersion = databaseVersion
        var values: [String: Any] = [:]
        if let first = conflicting.first {
            for name in constraint { values[name] = first.value(forKey: name) ?? NSNull() }
        }
        self.constraintValues = values
        super.init()
    }

    open override var description: String {
        "NSConstraintConflict (\(constraint.joined(separator: ", ")) = \(constraintValues)) { databaseObject = \(databaseObject.map { "\($0.objectID)" } ?? "nil"); "
            + "conflictingObjects = \(conflictingObjects.map(\.objectID)) }"
    }

    /// Resolves the conflict for the trump policies. The first conflicting object survives and
    /// the other unsaved duplicates are dropped; when a stored row is involved, the survivor takes
    /// that row's identity (the save updates the row instead of inserting one), keeping its own
    /// values when `insertedObjectWins`, the row's otherwise.
    func resolve(insertedObjectWins: Bool) {
        guard let survivor = conflictingObjects.first, let context = survivor.managedObjectContext else { return }
        for duplicate in conflictingObjects.dropFirst() where duplicate.lives(in: context) {
            context.delete(duplicate)
        }
        guard let databaseObject, let databaseSnapshot else { return }
        context.adoptStoredIdentity(databaseObject.objectID, for: survivor, storedValues: survivor.slotValues(from: databaseSnapshot),
                                    version: databaseVersion, keepingOwnValues: insertedObjectWins)
    }
}

/// Thrown by a store's save when inserted records violate uniqueness constraints; the context
/// turns it into `NSConstraintConflict`s for its merge policy. The store's transaction is rolled back.
struct StoreConstraintConflicts: Error {
    /// One violation: the constraint, the unsaved objects, and the stored row they collide with.
    struct Violation {
        let constraint: [String]
        let objectIDs: [NSManagedObjectID]
        let storedObjectID: NSManagedObjectID?
    }
    let violations: [Violation]
}
