import Foundation

/// The two entities persistent history is described by, so that a history request can carry a
/// fetch request (`NSPersistentHistoryChangeRequest.fetchRequest`) whose predicate names their
/// properties: "Transaction" (`NSPersistentHistoryTransaction`) and "Change"
/// (`NSPersistentHistoryChange`).
///
/// They live in a model of their own, never added to a store: history rows are not managed
/// objects. The keys a predicate may use are those `value(forKey:)` answers on the two classes.
enum HistoryEntities {
    /// The model holding both entities (frozen).
    static let model: NSManagedObjectModel = {
        let transaction = NSEntityDescription(name: transactionName, className: "NSPersistentHistoryTransaction")
        let change = NSEntityDescription(name: changeName, className: "NSPersistentHistoryChange")
        let changes = NSRelationshipDescription(name: "changes", destination: change, toMany: true)
        let owner = NSRelationshipDescription(name: "transaction", destination: transaction)
        changes.inverseRelationship = owner
        owner.inverseRelationship = changes
        transaction.properties = [
            NSAttributeDescription(name: "author", type: .stringAttributeType),
            NSAttributeDescription(name: "bundleID", type: .stringAttributeType),
            NSAttributeDescription(name: "contextName", type: .stringAttributeType),
            NSAttributeDescription(name: "processID", type: .stringAttributeType),
            NSAttributeDescription(name: "storeID", type: .stringAttributeType),
            NSAttributeDescription(name: "timestamp", type: .dateAttributeType),
            NSAttributeDescription(name: "transactionNumber", type: .integer64AttributeType),
            changes,
        ]
        change.properties = [
            NSAttributeDescription(name: "changeID", type: .integer64AttributeType),
            NSAttributeDescription(name: "changeType", type: .integer64AttributeType),
            NSAttributeDescription(name: "changedObjectID", type: .objectIDAttributeType),
            NSAttributeDescription(name: "changedEntity", type: .undefinedAttributeType),
            NSAttributeDescription(name: "changedEntityName", type: .stringAttributeType),
            NSAttributeDescription(name: "tombstone", type: .transformableAttributeType),
            NSAttributeDescription(name: "updatedProperties", type: .transformableAttributeType),
            owner,
        ]
        let model = NSManagedObjectModel()
        model.entities = [transaction, change]
        model.freeze()
        return model
    }()

    static let transactionName = "Transaction"
    static let changeName = "Change"

    /// The entity of `NSPersistentHistoryTransaction`.
    static var transaction: NSEntityDescription { model.entitiesByName[transactionName]! }
    /// The entity of `NSPersistentHistoryChange`.
    static var change: NSEntityDescription { model.entitiesByName[changeName]! }

    /// A new fetch request on one of the two entities.
    static func fetchRequest(on entity: NSEntityDescription) -> NSFetchRequest<NSFetchRequestResult> {
        let request = NSFetchRequest<NSFetchRequestResult>()
        request.entity = entity
        return request
    }
}

extension NSPersistentHistoryTransaction: KeyValueCodingReadable {
    /// The entity describing transactions to a history request's fetch request.
    public class var entityDescription: NSEntityDescription? { HistoryEntities.transaction }

    /// The entity describing transactions, for a context (the same for every context).
    public class func entityDescription(with context: NSManagedObjectContext) -> NSEntityDescription? {
        HistoryEntities.transaction
    }

    /// A new fetch request on the transaction entity: set its predicate (on `author`,
    /// `contextName`, `timestamp`, …) and assign it to `NSPersistentHistoryChangeRequest.fetchRequest`
    /// to fetch only the transactions it matches.
    public class var fetchRequest: NSFetchRequest<NSFetchRequestResult>? {
        HistoryEntities.fetchRequest(on: HistoryEntities.transaction)
    }

    /// The transaction's properties by name, for predicates and sort descriptors: `author`,
    /// `bundleID`, `contextName`, `processID`, `storeID`, `timestamp`, `transactionNumber`,
    /// `token` and `changes`.
    public func value(forKey key: String) -> Any? {
        switch key {
        case "author": author
        case "bundleID": bundleID
        case "contextName": contextName
        case "processID": processID
        case "storeID": storeID
        case "timestamp": timestamp
        case "transactionNumber": transactionNumber
        case "token": token
        case "changes": changes
        default: nil
        }
    }
}

extension NSPersistentHistoryChange: KeyValueCodingReadable {
    /// The entity describing changes to a history request's fetch request.
    public class var entityDescription: NSEntityDescription? { HistoryEntities.change }

    /// The entity describing changes, for a context (the same for every context).
    public class func entityDescription(with context: NSManagedObjectContext) -> NSEntityDescription? {
        HistoryEntities.change
    }

    /// A new fetch request on the change entity: set its predicate (on `changeType`,
    /// `changedEntity`, `transaction.author`, …) and assign it to
    /// `NSPersistentHistoryChangeRequest.fetchRequest` to fetch only the changes it matches.
    public class var fetchRequest: NSFetchRequest<NSFetchRequestResult>? {
        HistoryEntities.fetchRequest(on: HistoryEntities.change)
    }

    /// The change's properties by name, for predicates and sort descriptors: `changeID`,
    /// `changeType` (the raw value, so `changeType == %d` works), `changedObjectID`,
    /// `changedEntity` (the changed object's `NSEntityDescription`), `changedEntityName`,
    /// `tombstone`, `updatedProperties` and `transaction`.
    public func value(forKey key: String) -> Any? {
        switch key {
        case "changeID": changeID
        case "changeType": changeType.rawValue
        case "changedObjectID": changedObjectID
        case "changedEntity": changedObjectID.entity
        case "changedEntityName": changedObjectID.entity.name
        case "tombstone": tombstone
        case "updatedProperties": updatedProperties
        case "transaction": transaction
        default: nil
        }
    }
}
