/// Why a managed object's values were set again from a snapshot: what
/// `NSManagedObject.awake(fromSnapshotEvents:)` is told.
public struct NSSnapshotEventType: OptionSet, Sendable, Hashable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }

    /// Undo (or redo) of the object's insertion.
    public static let undoInsertion = NSSnapshotEventType(rawValue: 1 << 1)
    /// Undo (or redo) of the object's deletion.
    public static let undoDeletion = NSSnapshotEventType(rawValue: 1 << 2)
    /// Undo (or redo) of changes to the object's properties.
    public static let undoUpdate = NSSnapshotEventType(rawValue: 1 << 3)
    /// The context was rolled back.
    public static let rollback = NSSnapshotEventType(rawValue: 1 << 4)
    /// The object was refreshed, keeping its changes (`refresh(_:mergeChanges: true)`).
    public static let refresh = NSSnapshotEventType(rawValue: 1 << 5)
    /// A merge policy resolved a conflict of the object at save.
    public static let mergePolicy = NSSnapshotEventType(rawValue: 1 << 6)
}
