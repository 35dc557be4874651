import Foundation

/// A conflict between an object's unsaved changes and a newer version of the same object in the
/// store (optimistic locking: another context or process saved it after this context read it).
///
/// Snapshots map property names to values: attributes as their Swift values, to-one relationships
/// as the destination's `NSManagedObjectID`, nil as `NSNull`. To-many relationships are not included.
open class NSMergeConflict: NSObject {
    /// The object whose save conflicted.
    public let sourceObject: NSManagedObject
    /// The object's values in the context when the conflict was found.
    public let objectSnapshot: [String: Any]?
    /// The object's values when the context last read them from the store.
    public let cachedSnapshot: [String: Any]?
    /// The object's values in the store now; nil when the object was deleted from the store.
    public let persistedSnapshot: [String: Any]?
    /// The store's version of the object now (`Z_OPT`; 0 when it was deleted).
    public let newVersionNumber: Int
    /// The version of the object the context read.
    public let oldVersionNumber: Int

    /// Creates a conflict for an object, with the versions and snapshots involved.
    public init(source srcObject: NSManagedObject, newVersion newvers: Int, oldVersion oldvers: Int,
                cachedSnapshot cachesnap: [String: Any]?, persistedSnapshot persnap: [String: Any]?) {
        sourceObject = srcObject
        objectSnapshot = srcObject.isFault ? nil : srcObject.snapshot(of: srcObject.values)
        cachedSnapshot = cachesnap
        persistedSnapshot = persnap
        newVersionNumber = newvers
        oldVersionNumber = oldvers
        super.init()
    }

    open override var description: String {
        "NSMergeConflict (\(sourceObject.objectID)) { oldVersion = \(oldVersionNumber); newVersion = \(newVersionNumber); "
            + "persistedSnapshot = \(persistedSnapshot.map { "\($0)" } ?? "deleted") }"
    }
}

/// Thrown by a store's save when records changed in the store since they were read; the context
/// turns it into `NSMergeConflict`s for its merge policy. The store's transaction is rolled back.
struct StoreVersionConflicts: Error {
    /// The objects whose stored version no longer matches (or which no longer exist).
    let objectIDs: [NSManagedObjectID]
}
