import Foundation

/// What a persistent history change did to its object.
public enum NSPersistentHistoryChangeType: Int, Sendable {
    /// The object was inserted.
    case insert = 0
    /// The object was updated.
    case update = 1
    /// The object was deleted.
    case delete = 2
}

/// One object's change within a persistent history transaction.
/// Unchecked Sendable: its transaction links are set while the result is built, then never changed.
open class NSPersistentHistoryChange: NSObject, @unchecked Sendable {
    /// The change's number, unique within its store and increasing with time.
    public let changeID: Int64
    /// The object that changed.
    public let changedObjectID: NSManagedObjectID
    /// Whether the object was inserted, updated or deleted.
    public let changeType: NSPersistentHistoryChangeType
    /// For an update, the properties that changed (nil for inserts and deletes).
    public let updatedProperties: Set<NSPropertyDescription>?
    /// For a delete, the values of the attributes marked "preserve after deletion"
    /// (`preservesValueInHistoryOnDeletion`), by name; nil otherwise.
    public let tombstone: [AnyHashable: Any]?
    /// The transaction the change belongs to.
    public var transaction: NSPersistentHistoryTransaction? { ownedTransaction ?? linkedTransaction }
    /// The transaction, when the transaction lists this change (it keeps the change alive).
    weak var linkedTransaction: NSPersistentHistoryTransaction?
    /// The transaction, when only the change is handed out (`.changesOnly` results).
    var ownedTransaction: NSPersistentHistoryTransaction?

    init(changeID: Int64, changedObjectID: NSManagedObjectID, changeType: NSPersistentHistoryChangeType,
         updatedProperties: Set<NSPropertyDescription>?, tombstone: [AnyHashable: Any]?) {
        self.changeID = changeID
        self.changedObjectID = changedObjectID
        self.changeType = changeType
        self.updatedProperties = updatedProperties
        self.tombstone = tombstone
    }

    /// The change, for logs.
    open override var description: String {
        let kind = switch changeType { case .insert: "insert"; case .update: "update"; case .delete: "delete" }
        return "<NSPersistentHistoryChange \(changeID) \(kind) \(changedObjectID.uriRepresentation().absoluteString)>"
    }
}
