// A fetch reading a to-one relationship whose destination entity has subentities: the object ID
// of each destination needs the destination row's entity number. Apple's layout keeps it beside
// the key (`Z<n>_OWNER`); a store without that column reads it with a subquery in the fetch's
// own statement. Both are timed beside the same fetch over a destination without subentities.
import Foundation
import GRDB
import GRDBSQLite
import OpenCoreData

/// The stores of the subentity workloads, in the bench directory.
enum SubentityStore: String {
    /// Owner has no subentities.
    case plain = "subentity-plain.sqlite"
    /// Owner ⊃ SpecialOwner, in Apple's layout (with `Z<n>_OWNER`).
    case appleLayout = "subentity-apple.sqlite"
    /// Owner ⊃ SpecialOwner, the item table without `Z<n>_OWNER`.
    case withoutColumn = "subentity-nocolumn.sqlite"

    var hasSubentity: Bool { self != .plain }
}

/// Item (value, owner) → Owner (name), with SpecialOwner a subentity of Owner unless `plain`.
func makeSubentityModel(withSubentity: Bool) -> NSManagedObjectModel {
    let owner = NSEntityDescription(name: "Owner")
    let item = NSEntityDescription(name: "Item")
    let items = NSRelationshipDescription(name: "items", destination: item, toMany: true)
    let itemOwner = NSRelationshipDescription(name: "owner", destination: owner)
    items.inverseRelationship = itemOwner
    itemOwner.inverseRelationship = items
    owner.properties = [NSAttributeDescription(name: "name", type: .stringAttributeType), items]
    item.properties = [NSAttributeDescription(name: "value", type: .integer64AttributeType), itemOwner]
    let model = NSManagedObjectModel()
    if withSubentity {
        let special = NSEntityDescription(name: "SpecialOwner")
        special.properties = [NSAttributeDescription(name: "level", type: .integer64AttributeType)]
        owner.subentities = [special]
        model.entities = [owner, special, item]
    } else {
        model.entities = [owner, item]
    }
    return model
}

/// Makes the three stores: `rows` items over 1,000 owners, every other owner a SpecialOwner where
/// the model has the subentity; rows written with raw SQL into the schema the store made.
func prepareSubentityStores(_ directory: URL, rows: Int) throws {
    for store in [SubentityStore.plain, .appleLayout] {
        let url = directory.appendingPathComponent(store.rawValue)
        removeStore(url)
        _ = try openStore(url, model: makeSubentityModel(withSubentity: store.hasSubentity))
        let queue = try DatabaseQueue(path: url.path)
        try queue.write { db in
            let numbers = Dictionary(uniqueKeysWithValues: try Row.fetchAll(db, sql: "SELECT Z_NAME, Z_ENT FROM Z_PRIMARYKEY").map { ($0["Z_NAME"] as String, $0["Z_ENT"] as Int) })
            let ownerNumber = numbers["Owner"]!
            let specialNumber = numbers["SpecialOwner"] ?? ownerNumber
            let owners = 1000
            for pk in 1...owners {
                try db.execute(sql: "INSERT INTO ZOWNER (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (?, ?, 1, ?)",
                               arguments: [pk, pk % 2 == 0 ? specialNumber : ownerNumber, "owner \(pk)"])
            }
            let entityColumn = store.hasSubentity ? ", Z\(ownerNumber)_OWNER" : ""
            let statement = try db.makeStatement(sql: "INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZVALUE, ZOWNER\(entityColumn)) VALUES (?, ?, 1, ?, ?\(store.hasSubentity ? ", ?" : ""))")
            for pk in 1...rows {
                let owner = pk % owners + 1
                var arguments: [DatabaseValueConvertible] = [pk, numbers["Item"]!, pk &* 31, owner]
                if store.hasSubentity { arguments.append(owner % 2 == 0 ? specialNumber : ownerNumber) }
                try statement.execute(arguments: StatementArguments(arguments))
            }
            try db.execute(sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_NAME = 'Item'", arguments: [rows])
            try db.execute(sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_NAME = 'Owner'", arguments: [owners])
        }
        try queue.close()
    }
    let apple = directory.appendingPathComponent(SubentityStore.appleLayout.rawValue)
    let copy = directory.appendingPathComponent(SubentityStore.withoutColumn.rawValue)
    removeStore(copy)
    try FileManager.default.copyItem(at: apple, to: copy)
    let queue = try DatabaseQueue(path: copy.path)
    try queue.write { db in
        try db.execute(sql: "ALTER TABLE ZITEM DROP COLUMN \(try ownerEntityColumn(db))")
    }
    try queue.close()
}

/// The raw loop: every item's value, owner key and owner entity number. The checksum is the sum
/// of the values plus the number of items with an owner, as the OpenCoreData loops compute it.
func subentityRaw(_ directory: URL) throws -> Int64 {
    let url = directory.appendingPathComponent(SubentityStore.appleLayout.rawValue)
    let entityColumn = try DatabaseQueue(path: url.path).read(ownerEntityColumn)
    return try withRawFetchStatement(url, sql: "SELECT Z_PK, ZVALUE, ZOWNER, \(entityColumn) FROM ZITEM") { statement in
        var sum: Int64 = 0
        var entities: Int64 = 0
        while sqlite3_step(statement) == SQLITE_ROW {
            sum &+= sqlite3_column_int64(statement, 1)
            if sqlite3_column_type(statement, 2) != SQLITE_NULL { sum &+= 1 }
            entities &+= sqlite3_column_int64(statement, 3)
        }
        precondition(entities > 0)
        return sum
    }
}

/// The item table's column of the owner's entity number (`Z<n>_OWNER`, n the Owner's number).
func ownerEntityColumn(_ db: Database) throws -> String {
    try db.columns(in: "ZITEM").map(\.name).first { $0.hasSuffix("_OWNER") }!
}

/// Runs `body` on the queue of a private context over one of the subentity stores.
private func withSubentityContext<T>(_ directory: URL, _ store: SubentityStore, _ body: (NSManagedObjectContext) throws -> T) throws -> T {
    let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
    context.persistentStoreCoordinator = try openStore(directory.appendingPathComponent(store.rawValue), model: makeSubentityModel(withSubentity: store.hasSubentity))
    return try context.performAndWait { try body(context) }
}

/// Checks that half the owners read are SpecialOwners where the model has that subentity.
private func checkOwners(specials: Int, of rows: Int, in store: SubentityStore) {
    precondition(specials == (store.hasSubentity ? rows / 2 : 0), "owners of the wrong entity: \(specials) SpecialOwners")
}

/// Fetches every item and reads its value and its owner (a fault whose ID names the owner's
/// entity); checks the owners' entities.
func subentityOpenCoreData(_ directory: URL, store: SubentityStore) throws -> Int64 {
    try withSubentityContext(directory, store) { context in
        let items = try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Item"))
        var sum: Int64 = 0
        var specials = 0
        for item in items {
            sum &+= item.value(forKey: "value") as! Int64
            if let owner = item.value(forKey: "owner") as? NSManagedObject {
                sum &+= 1
                if owner.objectID.entity.name == "SpecialOwner" { specials += 1 }
            }
        }
        checkOwners(specials: specials, of: items.count, in: store)
        return sum
    }
}

/// Fetches every item as a dictionary of its value and its owner's object ID; checks the owners'
/// entities.
func subentityDictionaries(_ directory: URL, store: SubentityStore) throws -> Int64 {
    try withSubentityContext(directory, store) { context in
        let request = NSFetchRequest<NSDictionary>(entityName: "Item")
        request.resultType = .dictionaryResultType
        request.propertiesToFetch = ["value", "owner"]
        let rows = try context.fetch(request)
        var sum: Int64 = 0
        var specials = 0
        for row in rows {
            sum &+= row["value"] as! Int64
            if let owner = row["owner"] as? NSManagedObjectID {
                sum &+= 1
                if owner.entity.name == "SpecialOwner" { specials += 1 }
            }
        }
        checkOwners(specials: specials, of: rows.count, in: store)
        return sum
    }
}
