// ocd-bench: OpenCoreData against raw sqlite3 (and GRDB) on the same work, in one run.
//
// Usage: swift run -c release ocd-bench [--rows N]
// Each measurement runs in a child process of its own, so its peak resident memory is its own.
// The object workloads also measure a floor (FloorBaselines.swift): the raw loop plus the least
// work Core Data's API requires, which an implementation can hardly go below.
import Foundation
import GRDB
import GRDBSQLite
import OpenCoreData

let columns = (0..<10).map { "a\($0)" }

/// The benchmark model: one entity with ten Integer 64 attributes.
func makeModel() -> NSManagedObjectModel {
    let entity = NSEntityDescription(name: "Row", properties: columns.map { NSAttributeDescription(name: $0, type: .integer64AttributeType) })
    let model = NSManagedObjectModel()
    model.entities = [entity]
    return model
}

func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

/// A coordinator with the SQLite store at `url` added, for `model` (the benchmark model by default).
func openStore(_ url: URL, model: NSManagedObjectModel = makeModel()) throws -> NSPersistentStoreCoordinator {
    let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
    try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url, options: nil)
    return coordinator
}

/// Creates a store holding `rows` rows, written with raw SQL for speed.
func prepareFetchStore(_ url: URL, rows: Int) throws {
    removeStore(url)
    _ = try openStore(url)
    let queue = try DatabaseQueue(path: url.path)
    try queue.write { db in
        let statement = try db.makeStatement(sql: "INSERT INTO ZROW (Z_PK, Z_ENT, Z_OPT, \(columns.map { "Z" + $0.uppercased() }.joined(separator: ", "))) VALUES (?, 1, 1, \(Array(repeating: "?", count: 10).joined(separator: ", ")))")
        for pk in 1...rows {
            try statement.execute(arguments: StatementArguments([pk] + (0..<10).map { pk &* 31 &+ $0 }))
        }
        try db.execute(sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_NAME = 'Row'", arguments: [rows])
    }
}

// MARK: Workloads (each returns a checksum so nothing is optimized away)

/// Hands `body` the raw sqlite3 statement of `sql` over a store opened read-only; by default the
/// one reading every row of the fetch store (primary key, then the ten values), for the raw and
/// floor loops.
func withRawFetchStatement<Result>(_ url: URL, sql: String = "SELECT Z_PK, \(columns.map { "Z" + $0.uppercased() }.joined(separator: ", ")) FROM ZROW",
                                   _ body: (OpaquePointer?) throws -> Result) throws -> Result {
    var db: OpaquePointer?
    guard sqlite3_open_v2(url.path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK else { throw NSError(domain: "bench", code: 1) }
    defer { sqlite3_close(db) }
    var statement: OpaquePointer?
    sqlite3_prepare_v2(db, sql, -1, &statement, nil)
    defer { sqlite3_finalize(statement) }
    return try body(statement)
}

func fetchRaw(_ url: URL) throws -> Int64 {
    try withRawFetchStatement(url) { statement in
        var sum: Int64 = 0
        while sqlite3_step(statement) == SQLITE_ROW {
            for index in 1...10 { sum &+= sqlite3_column_int64(statement, Int32(index)) }
        }
        return sum
    }
}

func fetchGRDB(_ url: URL) throws -> Int64 {
    let queue = try DatabaseQueue(path: url.path)
    return try queue.read { db in
        var sum: Int64 = 0
        let rows = try Row.fetchCursor(db, sql: "SELECT Z_PK, \(columns.map { "Z" + $0.uppercased() }.joined(separator: ", ")) FROM ZROW")
        while let row = try rows.next() {
            for index in 1...10 { sum &+= row[index] as Int64 }
        }
        return sum
    }
}

/// Fetches every row and reads every value as a program would (`value(forKey:) as! Int64`).
/// `withoutCast` reads the values without the Swift runtime's dynamic cast instead, to show what
/// that cast costs (not how a program should read values).
func fetchOpenCoreData(_ url: URL, withoutCast: Bool = false, numbers: NumberStyle = .native) throws -> Int64 {
    let coordinator = try openStore(url)
    let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
    context.persistentStoreCoordinator = coordinator
    let start = now()
    var fetched = start
    let sum = try context.performAndWait {
        let objects = try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Row"))
        fetched = now()
        var sum: Int64 = 0
        for object in objects {
            if withoutCast {
                for key in columns { sum &+= int64WithoutCast(object.value(forKey: key)) }
            } else if numbers == .nsNumber {
                // As code written for Apple's platforms reads a number.
                for key in columns { sum &+= (object.value(forKey: key) as! NSNumber).int64Value }
            } else if numbers == .floor {
                // An NSNumber made for each value read, the least a value(forKey:) answering
                // NSNumber would do.
                for key in columns { sum &+= NSNumber(value: object.value(forKey: key) as! Int64).int64Value }
            } else {
                for key in columns { sum &+= object.value(forKey: key) as! Int64 }
            }
        }
        return sum
    }
    if ProcessInfo.processInfo.environment["OCD_BENCH_PHASES"] != nil {
        let read = now()
        withExtendedLifetime(context) {}
        FileHandle.standardError.write("fetch \(fetched - start) s, read \(read - fetched) s\n".data(using: .utf8)!)
    }
    return sum
}

/// An `Int64` held in an `Any?`, read from the existential's buffer once its type metadata is
/// checked to be `Int64`'s (an `Any?` is three words of buffer and then the type, nil for nil).
@inline(__always)
func int64WithoutCast(_ value: Any?) -> Int64 {
    withUnsafeBytes(of: value) { bytes in
        let type = bytes.load(fromByteOffset: 3 * MemoryLayout<Int>.size, as: UnsafeRawPointer?.self)
        precondition(type == unsafeBitCast(Int64.self as Any.Type, to: UnsafeRawPointer.self), "not an Int64")
        return bytes.load(as: Int64.self)
    }
}

/// Makes the insert store anew (the same empty Core Data schema), then hands `body` its raw sqlite3
/// INSERT statement inside one transaction, for the raw and floor loops: bind the primary key and
/// the ten values, step, reset.
func withRawInsertStatement(_ url: URL, rows: Int, _ body: (OpaquePointer?) -> Void) throws {
    removeStore(url)
    _ = try openStore(url)
    var db: OpaquePointer?
    sqlite3_open_v2(url.path, &db, SQLITE_OPEN_READWRITE, nil)
    defer { sqlite3_close(db) }
    sqlite3_exec(db, "BEGIN IMMEDIATE", nil, nil, nil)
    var statement: OpaquePointer?
    sqlite3_prepare_v2(db, "INSERT INTO ZROW (Z_PK, Z_ENT, Z_OPT, \(columns.map { "Z" + $0.uppercased() }.joined(separator: ", "))) VALUES (?, 1, 1, \(Array(repeating: "?", count: 10).joined(separator: ", ")))", -1, &statement, nil)
    body(statement)
    sqlite3_finalize(statement)
    sqlite3_exec(db, "UPDATE Z_PRIMARYKEY SET Z_MAX = \(rows) WHERE Z_NAME = 'Row'", nil, nil, nil)
    sqlite3_exec(db, "COMMIT", nil, nil, nil)
}

func insertRaw(_ url: URL, rows: Int) throws -> Int64 {
    try withRawInsertStatement(url, rows: rows) { statement in
        for pk in 1...rows {
            sqlite3_bind_int64(statement, 1, Int64(pk))
            for index in 0..<10 { sqlite3_bind_int64(statement, Int32(index + 2), Int64(pk &* 31 &+ index)) }
            sqlite3_step(statement)
            sqlite3_reset(statement)
        }
    }
    return Int64(rows)
}

/// How the bridged-value workloads hand numbers over and read them back.
enum NumberStyle {
    /// Swift `Int64` values.
    case native
    /// `NSNumber` objects, as code written for Apple's platforms uses them.
    case nsNumber
    /// The native path plus making (or, when reading, unboxing into) one `NSNumber` per value:
    /// what any implementation on Linux pays, where an `NSNumber` is a heap object, not a tagged
    /// pointer.
    case floor
}

func insertOpenCoreData(_ url: URL, rows: Int, bridged: NumberStyle = .native) throws -> Int64 {
    removeStore(url)
    let coordinator = try openStore(url)
    let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
    context.persistentStoreCoordinator = coordinator
    try context.performAndWait {
        let entity = coordinator.managedObjectModel.entitiesByName["Row"]!
        let start = now()
        for pk in 1...rows {
            let object = NSManagedObject(entity: entity, insertInto: context)
            switch bridged {
            case .nsNumber:
                // As code written for Apple's platforms (and GRDB's Core Data benchmark) sets a number.
                for (index, key) in columns.enumerated() { object.setValue(NSNumber(value: Int64(pk &* 31 &+ index)), forKey: key) }
            case .floor:
                // The least any implementation does with such a number: the program makes it, the
                // setter reads its value once, and it is freed.
                for (index, key) in columns.enumerated() { object.setValue(NSNumber(value: Int64(pk &* 31 &+ index)).int64Value, forKey: key) }
            case .native:
                for (index, key) in columns.enumerated() { object.setValue(Int64(pk &* 31 &+ index), forKey: key) }
            }
        }
        let inserted = now()
        try context.save()
        if ProcessInfo.processInfo.environment["OCD_BENCH_PHASES"] != nil {
            FileHandle.standardError.write("insert \(inserted - start) s, save \(now() - inserted) s\n".data(using: .utf8)!)
        }
    }
    return Int64(rows)
}

// MARK: Query-language workloads (1,000,000 rows)

/// A to-one relationship `toOne` from `child` to `parent` and its to-many inverse `toMany`.
func inversePair(from child: NSEntityDescription, _ toOne: String, to parent: NSEntityDescription, _ toMany: String)
    -> (NSRelationshipDescription, NSRelationshipDescription) {
    let forward = NSRelationshipDescription(name: toOne, destination: parent)
    let inverse = NSRelationshipDescription(name: toMany, destination: child, toMany: true)
    forward.inverseRelationship = inverse
    inverse.inverseRelationship = forward
    return (forward, inverse)
}

/// The query model: Item (name, score, category, group) → Group (title).
func makeQueryModel() -> NSManagedObjectModel {
    let item = NSEntityDescription(name: "Item")
    let group = NSEntityDescription(name: "Group")
    let (itemGroup, groupItems) = inversePair(from: item, "group", to: group, "items")
    item.properties = [
        NSAttributeDescription(name: "name", type: .stringAttributeType),
        NSAttributeDescription(name: "score", type: .doubleAttributeType),
        NSAttributeDescription(name: "category", type: .integer64AttributeType),
        itemGroup,
    ]
    group.properties = [NSAttributeDescription(name: "title", type: .stringAttributeType), groupItems]
    let model = NSManagedObjectModel()
    model.entities = [item, group]
    return model
}

let queryWords = ["alpha", "Bravo", "charlie", "Délta", "echo", "Foxtrot", "golf", "Hôtel", "india", "Juliet"]

func openQueryStore(_ url: URL) throws -> NSPersistentStoreCoordinator {
    try openStore(url, model: makeQueryModel())
}

func prepareQueryStore(_ url: URL, rows: Int) throws {
    removeStore(url)
    _ = try openQueryStore(url)
    let queue = try DatabaseQueue(path: url.path)
    try queue.write { db in
        for index in 1...100 { try db.execute(sql: "INSERT INTO ZGROUP (Z_PK, Z_ENT, Z_OPT, ZTITLE) VALUES (?, 1, 1, ?)", arguments: [index, "group\(index % 10)"]) }
        let statement = try db.makeStatement(sql: "INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZNAME, ZSCORE, ZCATEGORY, ZGROUP) VALUES (?, 2, 1, ?, ?, ?, ?)")
        for pk in 1...rows {
            let name = queryWords[pk % queryWords.count] + " \(pk % 1000)"
            try statement.execute(arguments: [pk, name, Double(pk % 10_000) / 100, pk % 1000, pk % 100 + 1])
        }
        try db.execute(sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_NAME = 'Item'", arguments: [rows])
        try db.execute(sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = 100 WHERE Z_NAME = 'Group'")
    }
}

let inCategories = Array(stride(from: 0, to: 1000, by: 10))

func queryRaw(_ url: URL) throws -> Int64 {
    var db: OpaquePointer?
    sqlite3_open_v2(url.path, &db, SQLITE_OPEN_READONLY, nil)
    defer { sqlite3_close(db) }
    let sql = "SELECT t0.Z_PK FROM ZITEM t0 LEFT JOIN ZGROUP j1 ON j1.Z_PK = t0.ZGROUP WHERE t0.ZSCORE BETWEEN 10 AND 60 AND t0.ZCATEGORY IN (\(inCategories.map(String.init).joined(separator: ","))) AND j1.ZTITLE = 'group3' AND t0.ZNAME LIKE '%delta%' ORDER BY t0.ZSCORE DESC, t0.ZNAME"
    var statement: OpaquePointer?
    sqlite3_prepare_v2(db, sql, -1, &statement, nil)
    defer { sqlite3_finalize(statement) }
    var ids: [Int64] = []
    while sqlite3_step(statement) == SQLITE_ROW { ids.append(sqlite3_column_int64(statement, 0)) }
    return Int64(ids.count)
}

func queryOpenCoreData(_ url: URL) throws -> Int64 {
    let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
    context.persistentStoreCoordinator = try openQueryStore(url)
    return try context.performAndWait {
        let request = NSFetchRequest<NSManagedObjectID>(entityName: "Item")
        request.resultType = .managedObjectIDResultType
        request.predicate = NSPredicate(format: "name CONTAINS[cd] %@ AND score BETWEEN {10, 60} AND category IN %@ AND group.title == %@", "delta", inCategories, "group3")
        request.sortDescriptors = [NSSortDescriptor(key: "score", ascending: false), NSSortDescriptor(key: "name", ascending: true)]
        return Int64(try context.fetch(request).count)
    }
}

func aggregateRaw(_ url: URL) throws -> Int64 {
    var db: OpaquePointer?
    sqlite3_open_v2(url.path, &db, SQLITE_OPEN_READONLY, nil)
    defer { sqlite3_close(db) }
    var statement: OpaquePointer?
    sqlite3_prepare_v2(db, "SELECT ZCATEGORY, COUNT(ZNAME), TOTAL(ZSCORE) FROM ZITEM GROUP BY ZCATEGORY ORDER BY ZCATEGORY", -1, &statement, nil)
    defer { sqlite3_finalize(statement) }
    var sum: Int64 = 0
    while sqlite3_step(statement) == SQLITE_ROW { sum &+= sqlite3_column_int64(statement, 1) &+ Int64(sqlite3_column_double(statement, 2)) }
    return sum
}

func aggregateOpenCoreData(_ url: URL) throws -> Int64 {
    let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
    context.persistentStoreCoordinator = try openQueryStore(url)
    return try context.performAndWait {
        let request = NSFetchRequest<NSDictionary>(entityName: "Item")
        request.resultType = .dictionaryResultType
        let count = NSExpressionDescription()
        count.name = "count"
        count.expression = NSExpression(forFunction: "count:", arguments: [NSExpression(forKeyPath: "name")])
        count.expressionResultType = .integer64AttributeType
        let total = NSExpressionDescription()
        total.name = "total"
        total.expression = NSExpression(forFunction: "sum:", arguments: [NSExpression(forKeyPath: "score")])
        total.expressionResultType = .doubleAttributeType
        request.propertiesToFetch = ["category", count, total]
        request.propertiesToGroupBy = ["category"]
        request.sortDescriptors = [NSSortDescriptor(key: "category", ascending: true)]
        return try context.fetch(request).reduce(0) { $0 &+ ($1["count"] as! Int64) &+ Int64($1["total"] as! Double) }
    }
}

func batchUpdateRaw(_ url: URL) throws -> Int64 {
    var db: OpaquePointer?
    sqlite3_open_v2(url.path, &db, SQLITE_OPEN_READWRITE, nil)
    defer { sqlite3_close(db) }
    sqlite3_exec(db, "UPDATE ZITEM SET ZSCORE = ZSCORE + 1, Z_OPT = Z_OPT + 1 WHERE ZCATEGORY < 500", nil, nil, nil)
    return Int64(sqlite3_changes(db))
}

func batchUpdateOpenCoreData(_ url: URL) throws -> Int64 {
    let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
    context.persistentStoreCoordinator = try openQueryStore(url)
    return try context.performAndWait {
        let request = NSBatchUpdateRequest(entityName: "Item")
        request.predicate = NSPredicate(format: "category < 500")
        request.propertiesToUpdate = ["score": NSExpression(format: "score + 1")]
        request.resultType = .updatedObjectsCountResultType
        return Int64((try context.execute(request) as! NSBatchUpdateResult).result as! Int)
    }
}

func batchDeleteRaw(_ url: URL) throws -> Int64 {
    var db: OpaquePointer?
    sqlite3_open_v2(url.path, &db, SQLITE_OPEN_READWRITE, nil)
    defer { sqlite3_close(db) }
    sqlite3_exec(db, "DELETE FROM ZITEM WHERE ZCATEGORY < 500", nil, nil, nil)
    return Int64(sqlite3_changes(db))
}

func batchDeleteOpenCoreData(_ url: URL) throws -> Int64 {
    let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
    context.persistentStoreCoordinator = try openQueryStore(url)
    return try context.performAndWait {
        let fetch = NSFetchRequest<NSFetchRequestResult>(entityName: "Item")
        fetch.predicate = NSPredicate(format: "category < 500")
        let request = NSBatchDeleteRequest(fetchRequest: fetch)
        request.resultType = .resultTypeCount
        return Int64((try context.execute(request) as! NSBatchDeleteResult).result as! Int)
    }
}

// MARK: Fetched results controller workloads

/// Items with a section column: Item (name, score, category) over the query store.
func controllerRequest() -> NSFetchRequest<NSManagedObject> {
    let request = NSFetchRequest<NSManagedObject>(entityName: "Item")
    request.sortDescriptors = [NSSortDescriptor(key: "category", ascending: true), NSSortDescriptor(key: "score", ascending: false)]
    request.fetchBatchSize = 20
    return request
}

/// The raw query of IDs and the section column in the controller's order; with `tieBreak`, rows
/// with equal sort values come in primary key order, as the controller defines its order.
func controllerRaw(_ url: URL, tieBreak: Bool = false) throws -> Int64 {
    var db: OpaquePointer?
    sqlite3_open_v2(url.path, &db, SQLITE_OPEN_READONLY, nil)
    defer { sqlite3_close(db) }
    var statement: OpaquePointer?
    sqlite3_prepare_v2(db, "SELECT Z_PK, ZCATEGORY FROM ZITEM ORDER BY ZCATEGORY ASC, ZSCORE DESC\(tieBreak ? ", Z_PK" : "")", -1, &statement, nil)
    defer { sqlite3_finalize(statement) }
    var ids: [Int64] = []
    var sections = 0
    var last: Int64 = -1
    while sqlite3_step(statement) == SQLITE_ROW {
        ids.append(sqlite3_column_int64(statement, 0))
        let category = sqlite3_column_int64(statement, 1)
        if category != last { sections += 1; last = category }
    }
    return Int64(ids.count &+ sections)
}

func controllerOpenCoreData(_ url: URL, cacheName: String?, withDelegate: Bool = false) throws -> Int64 {
    let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
    context.persistentStoreCoordinator = try openQueryStore(url)
    return try context.performAndWait {
        let controller = NSFetchedResultsController(fetchRequest: controllerRequest(), managedObjectContext: context, sectionNameKeyPath: "category", cacheName: cacheName)
        // A table view's delegate (per-change callbacks, no snapshot method) turns tracking on.
        let delegate = withDelegate ? CountingDelegate() : nil
        controller.delegate = delegate
        try controller.performFetch()
        // What a table asks first: the section counts, then the first screen of rows.
        let sections = controller.sections ?? []
        let rows = sections.reduce(0) { $0 + $1.numberOfObjects }
        for row in 0..<min(20, sections.first?.numberOfObjects ?? 0) {
            _ = controller.object(at: IndexPath(row: row, section: 0)).value(forKey: "name")
        }
        return Int64(rows &+ sections.count)
    }
}

/// Counts delegate callbacks and notes when the last batch ended.
final class CountingDelegate: NSFetchedResultsControllerDelegate {
    var changes = 0
    var finished = 0.0
    func controller(_ controller: NSFetchedResultsController<NSFetchRequestResult>, didChange anObject: Any, at indexPath: IndexPath?,
                    for type: NSFetchedResultsChangeType, newIndexPath: IndexPath?) { changes += 1 }
    func controllerDidChangeContent(_ controller: NSFetchedResultsController<NSFetchRequestResult>) { finished = now() }
}

/// Times the delivery of saved changes to a controller over all rows: from the call to `save()` to
/// the delegate's `controllerDidChangeContent` (the save's writing comes after and is not counted).
func controllerChangeOpenCoreData(_ url: URL, changes: Int) throws -> (Double, Int64) {
    let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
    context.persistentStoreCoordinator = try openQueryStore(url)
    return try context.performAndWait {
        let request = controllerRequest()
        request.fetchBatchSize = 0
        let controller = NSFetchedResultsController(fetchRequest: request, managedObjectContext: context, sectionNameKeyPath: "category", cacheName: nil)
        let delegate = CountingDelegate()
        controller.delegate = delegate
        try controller.performFetch()
        let objects = controller.fetchedObjects ?? []
        for index in 0..<changes { objects[(index &* 7919) % objects.count].setValue(Double(index % 100), forKey: "score") }
        // From the call to save() to the last callback: the save's own checks and its change
        // notification are counted, its writing (which comes after the callbacks) is not.
        let began = now()
        try context.save()
        return (delegate.finished - began, Int64(delegate.changes))
    }
}

/// A request for the IDs of the `Item`s a controller's request shows, in its order (its sort
/// descriptors and limit).
func itemIDRequest(sortedAs request: NSFetchRequest<NSManagedObject>) -> NSFetchRequest<NSManagedObjectID> {
    let ids = NSFetchRequest<NSManagedObjectID>(entityName: "Item")
    ids.resultType = .managedObjectIDResultType
    ids.sortDescriptors = request.sortDescriptors
    ids.fetchLimit = request.fetchLimit
    return ids
}

/// The request of a controller of the best twenty scores (no sections, a limit of 20).
func limitedControllerRequest() -> NSFetchRequest<NSManagedObject> {
    let request = NSFetchRequest<NSManagedObject>(entityName: "Item")
    request.sortDescriptors = [NSSortDescriptor(key: "score", ascending: false)]
    request.fetchLimit = 20
    return request
}

/// An object far outside the best twenty, which `limitedControllerChange` lifts to the top.
private func objectOutsideTheWindow(_ context: NSManagedObjectContext) throws -> NSManagedObject {
    let request = itemIDRequest(sortedAs: limitedControllerRequest())
    request.fetchOffset = 1_000
    request.fetchLimit = 1
    return context.object(with: try context.fetch(request)[0])
}

/// Times one saved change delivered to a controller with a limit (the best twenty scores): an
/// object from outside the window rises to its top, from the call to `save()` to the delegate's
/// `controllerDidChangeContent`.
func limitedControllerChangeOpenCoreData(_ url: URL) throws -> (Double, Int64) {
    let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
    context.persistentStoreCoordinator = try openQueryStore(url)
    return try context.performAndWait {
        let controller = NSFetchedResultsController(fetchRequest: limitedControllerRequest(), managedObjectContext: context, sectionNameKeyPath: nil, cacheName: nil)
        let delegate = CountingDelegate()
        controller.delegate = delegate
        try controller.performFetch()
        try objectOutsideTheWindow(context).setValue(Double(1_000_000), forKey: "score")
        let began = now()
        try context.save()
        return (delegate.finished - began, Int64(delegate.changes))
    }
}

/// The alternative for a window: fetch its twenty IDs again after the save and diff them.
func limitedControllerRefetchAndDiff(_ url: URL) throws -> (Double, Int64) {
    let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
    context.persistentStoreCoordinator = try openQueryStore(url)
    return try context.performAndWait {
        let request = itemIDRequest(sortedAs: limitedControllerRequest())
        let before = try context.fetch(request)
        try objectOutsideTheWindow(context).setValue(Double(1_000_000), forKey: "score")
        try context.save()
        let begin = now()
        let after = try context.fetch(request)
        let difference = after.difference(from: before)
        return (now() - begin, Int64(difference.count))
    }
}

/// The alternative: refetch everything after the save and diff the ordered IDs with `difference(from:)`.
func controllerChangeRefetchAndDiff(_ url: URL, changes: Int) throws -> (Double, Int64) {
    let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
    context.persistentStoreCoordinator = try openQueryStore(url)
    return try context.performAndWait {
        let request = itemIDRequest(sortedAs: controllerRequest())
        let before = try context.fetch(request)
        let objects = before.prefix(changes &* 7919 + 1)
        for index in 0..<changes { context.object(with: objects[(index &* 7919) % objects.count]).setValue(Double(index % 100), forKey: "score") }
        try context.save()
        let begin = now()
        let after = try context.fetch(request)
        let difference = after.difference(from: before)
        return (now() - begin, Int64(difference.count))
    }
}

// MARK: Child-process runner

struct Measurement {
    let seconds: Double
    let peakKiB: Int
    let checksum: String
    /// More times a workload reported, in seconds (the matrix's changes: the whole save's, then
    /// one change's share).
    var extras: [Double] = []
}

/// Runs one workload in a child process and returns its time, peak memory and checksum.
func measure(_ mode: String, rows: Int, directory: URL) throws -> Measurement {
    let executable = URL(fileURLWithPath: CommandLine.arguments[0]).path
    let output = directory.appendingPathComponent("\(mode).out")
    let argv = [executable, "--child", mode, "--rows", String(rows), "--dir", directory.path, "--out", output.path]
    var pid: pid_t = 0
    let cArgs = argv.map { strdup($0) } + [nil]
    defer { cArgs.forEach { free($0) } }
    guard posix_spawn(&pid, executable, nil, nil, cArgs, environ) == 0 else { throw NSError(domain: "bench", code: 2) }
    var status: Int32 = 0
    var usage = rusage()
    // A workload that runs past the time limit is stopped and reported as such.
    let deadline = now() + timeLimit
    while wait4(pid, &status, WNOHANG, &usage) == 0 {
        if now() > deadline {
            kill(pid, SIGKILL)
            wait4(pid, &status, 0, &usage)
            return Measurement(seconds: .infinity, peakKiB: usage.ru_maxrss, checksum: "timed out")
        }
        usleep(2_000)
    }
    let text = try String(contentsOf: output, encoding: .utf8).split(separator: " ")
    return Measurement(seconds: Double(text[0]) ?? .nan, peakKiB: usage.ru_maxrss, checksum: String(text[1]),
                       extras: text.dropFirst(2).map { Double($0) ?? .nan })
}

/// Removes a store file with its WAL and shared-memory files (a stale WAL left beside a fresh copy
/// would be replayed into it, and grow run after run).
func removeStore(_ url: URL) {
    for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: url.path + suffix) }
}

func runChild(mode: String, rows: Int, directory: URL, output: String) throws {
    let fetchURL = directory.appendingPathComponent("fetch.sqlite")
    let insertURL = directory.appendingPathComponent("insert-\(mode).sqlite")
    let start = now()
    let checksum: Int64
    switch mode {
    case "prepare": try prepareFetchStore(fetchURL, rows: rows); checksum = 0
    case "prepare-query": try prepareQueryStore(directory.appendingPathComponent("query.sqlite"), rows: rows); checksum = 0
    case "query-raw": checksum = try queryRaw(directory.appendingPathComponent("query.sqlite"))
    case "query-ocd": checksum = try queryOpenCoreData(directory.appendingPathComponent("query.sqlite"))
    case "aggregate-raw": checksum = try aggregateRaw(directory.appendingPathComponent("query.sqlite"))
    case "aggregate-ocd": checksum = try aggregateOpenCoreData(directory.appendingPathComponent("query.sqlite"))
    case "frc-raw": checksum = try controllerRaw(directory.appendingPathComponent("query.sqlite"))
    case "frc-raw-tiebreak": checksum = try controllerRaw(directory.appendingPathComponent("query.sqlite"), tieBreak: true)
    case "frc-ocd": checksum = try controllerOpenCoreData(directory.appendingPathComponent("query.sqlite"), cacheName: nil)
    case "frc-ocd-delegate": checksum = try controllerOpenCoreData(directory.appendingPathComponent("query.sqlite"), cacheName: nil, withDelegate: true)
    case "frc-cache-warm": checksum = try controllerOpenCoreData(directory.appendingPathComponent("query.sqlite"), cacheName: "ocd-bench-\(getppid())")
    case "frc-cached": checksum = try controllerOpenCoreData(directory.appendingPathComponent("query.sqlite"), cacheName: "ocd-bench-\(getppid())")
    case "frc-change-ocd", "frc-change-diff", "frc-changes-ocd", "frc-changes-diff", "frc-limited-change-ocd", "frc-limited-change-diff":
        let copy = directory.appendingPathComponent("\(mode).sqlite")
        removeStore(copy)
        try FileManager.default.copyItem(at: directory.appendingPathComponent("query.sqlite"), to: copy)
        let count = mode.hasPrefix("frc-changes") ? 10_000 : 1
        let (seconds, result) = switch mode {
        case "frc-limited-change-ocd": try limitedControllerChangeOpenCoreData(copy)
        case "frc-limited-change-diff": try limitedControllerRefetchAndDiff(copy)
        case "frc-change-ocd", "frc-changes-ocd": try controllerChangeOpenCoreData(copy, changes: count)
        default: try controllerChangeRefetchAndDiff(copy, changes: count)
        }
        try "\(seconds) \(result > 0 ? 1 : 0)".write(toFile: output, atomically: true, encoding: .utf8)
        return
    case "update-raw", "update-ocd", "delete-raw", "delete-ocd":
        // Each run works on a fresh copy of the query store, made before the clock starts.
        let copy = directory.appendingPathComponent("\(mode).sqlite")
        removeStore(copy)
        try FileManager.default.copyItem(at: directory.appendingPathComponent("query.sqlite"), to: copy)
        let begin = now()
        switch mode {
        case "update-raw": checksum = try batchUpdateRaw(copy)
        case "update-ocd": checksum = try batchUpdateOpenCoreData(copy)
        case "delete-raw": checksum = try batchDeleteRaw(copy)
        default: checksum = try batchDeleteOpenCoreData(copy)
        }
        try "\(now() - begin) \(checksum)".write(toFile: output, atomically: true, encoding: .utf8)
        return
    case "fetch-raw": checksum = try fetchRaw(fetchURL)
    case "fetch-grdb": checksum = try fetchGRDB(fetchURL)
    case "fetch-ocd": checksum = try fetchOpenCoreData(fetchURL)
    case "fetch-uncast": checksum = try fetchOpenCoreData(fetchURL, withoutCast: true)
    case "fetch-ocd-nsnumber": checksum = try fetchOpenCoreData(fetchURL, numbers: .nsNumber)
    case "fetch-nsnumber-floor": checksum = try fetchOpenCoreData(fetchURL, numbers: .floor)
    case "fetch-floor": checksum = try fetchFloor(fetchURL)
    case "fetch-floor-reading", "insert-floor-sets":
        // Parts of a floor, timed by themselves (their set-up not counted).
        let (seconds, result) = mode == "insert-floor-sets" ? insertFloorSetsOnly(rows: rows) : try fetchFloorReadingOnly(fetchURL)
        try "\(seconds) \(result)".write(toFile: output, atomically: true, encoding: .utf8)
        return
    case "insert-raw": checksum = try insertRaw(insertURL, rows: rows)
    case "insert-floor": checksum = try insertFloor(insertURL, rows: rows)
    case "insert-floor-typed": checksum = try insertFloor(insertURL, rows: rows, typed: true)
    case "fetch-floor-typed": checksum = try fetchFloorTyped(fetchURL)
    case "insert-ocd": checksum = try insertOpenCoreData(insertURL, rows: rows)
    case "insert-ocd-typed": checksum = try insertTyped(insertURL, rows: rows)
    case "fetch-ocd-typed": checksum = try fetchTyped(fetchURL)
    case "subentity-prepare": try prepareSubentityStores(directory, rows: rows); checksum = 0
    case "subentity-raw": checksum = try subentityRaw(directory)
    case "subentity-plain-ocd": checksum = try subentityOpenCoreData(directory, store: .plain)
    case "subentity-apple-ocd": checksum = try subentityOpenCoreData(directory, store: .appleLayout)
    case "subentity-nocolumn-ocd": checksum = try subentityOpenCoreData(directory, store: .withoutColumn)
    case "subentity-plain-dict": checksum = try subentityDictionaries(directory, store: .plain)
    case "subentity-apple-dict": checksum = try subentityDictionaries(directory, store: .appleLayout)
    case "subentity-nocolumn-dict": checksum = try subentityDictionaries(directory, store: .withoutColumn)
    case let matrix where matrix.hasPrefix("matrix-"):
        try runMatrixChild(mode: matrix, rows: rows, directory: directory, output: output)
        return
    case "insert-ocd-nsnumber": checksum = try insertOpenCoreData(insertURL, rows: rows, bridged: .nsNumber)
    case "insert-nsnumber-floor": checksum = try insertOpenCoreData(insertURL, rows: rows, bridged: .floor)
    default: throw NSError(domain: "bench", code: 3)
    }
    let seconds = now() - start
    // The phases a typed-property workload marked (none for the others), after the result.
    let phases = PhaseClock.current.seconds.map { " \($0)" }.joined()
    try "\(seconds) \(checksum)\(phases)".write(toFile: output, atomically: true, encoding: .utf8)
}

// MARK: Main

/// Prints a line at once (the output of a long run appears as it goes).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

var rows = 200_000
var queryRows = 1_000_000
/// How many rounds the controller matrix runs the raw query, the floor and `performFetch` in (see `Rounds`).
var matrixRuns = 1
/// How many rounds the object-graph reports run (see `Rounds`).
nonisolated(unsafe) var objectRuns = 3
/// The controller matrix's section keys (`--sections`, comma-separated): all by default.
var matrixSections = MatrixCell.Section.allCases
var skipQueries = false
/// `--phases`: after the typed-property workloads, where their time goes beside their floors'.
var showPhases = false
/// Seconds after which a workload is stopped and reported as timed out.
nonisolated(unsafe) var timeLimit = 60.0
/// Runs only one group of workloads: objects, typed, relationships, bridged, queries, controller, controller-matrix or batch.
var only: String?
var childMode: String?
/// `--store postgres://…`: run the PostgreSQL workloads against that server instead.
var postgresStore: URL?
/// How many objects the PostgreSQL workloads write and read (`--rows` sets it too).
var postgresRows = 50_000
/// How many saves the PostgreSQL latency workload times.
var postgresSaves = 1_000
var directory = FileManager.default.temporaryDirectory.appendingPathComponent("ocd-bench-\(getpid())")
var output = ""
var iterator = CommandLine.arguments.dropFirst().makeIterator()
while let argument = iterator.next() {
    switch argument {
    case "--rows":
        rows = Int(iterator.next() ?? "") ?? rows
        postgresRows = rows
    case "--store": postgresStore = iterator.next().flatMap(URL.init(string:))
    case "--saves": postgresSaves = Int(iterator.next() ?? "") ?? postgresSaves
    case "--query-rows": queryRows = Int(iterator.next() ?? "") ?? queryRows
    case "--runs":
        matrixRuns = max(1, Int(iterator.next() ?? "") ?? matrixRuns)
        objectRuns = matrixRuns
    case "--skip-queries": skipQueries = true
    case "--phases": showPhases = true
    case "--only": only = iterator.next()
    case "--sections": matrixSections = (iterator.next() ?? "").split(separator: ",").compactMap { MatrixCell.Section(rawValue: String($0)) }
    case "--time-limit": timeLimit = Double(iterator.next() ?? "") ?? timeLimit
    case "--child": childMode = iterator.next()
    case "--dir": directory = URL(fileURLWithPath: iterator.next() ?? "")
    case "--out": output = iterator.next() ?? ""
    default: say("Usage: ocd-bench [--rows N] [--query-rows N] [--runs N] [--skip-queries] [--phases] [--only objects|typed|relationships|bridged|queries|controller|controller-matrix|batch] [--sections none,team,level,department] [--time-limit SECONDS] [--store postgres://user:password@host:port/database [--saves N]]"); exit(2)
    }
}

if let childMode {
    // A child is normally started by this program; run by hand, it needs the same two arguments.
    guard !output.isEmpty else { say("ocd-bench --child MODE needs --out FILE (where the child writes its result) and --dir DIRECTORY"); exit(2) }
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    try runChild(mode: childMode, rows: rows, directory: directory, output: output)
    exit(0)
}

if let postgresStore {
    try runPostgreSQLBenchmark(postgresStore, rows: postgresRows, saves: postgresSaves)
    exit(0)
}

try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: directory) }
say("ocd-bench: \(rows) objects of one entity with ten Integer 64 attributes (each workload run \(objectRuns) times, each run in its own process, in rounds of one run of each; times are medians, and a ratio is the median of the rounds' ratios)\n")
if only == nil || only == "objects" || only == "typed" || only == "bridged" { try prepareFetchStore(directory.appendingPathComponent("fetch.sqlite"), rows: rows) }

/// The workloads of one report measured in rounds: each round runs every workload once, one
/// after the other, each in its own process. A stretch of load from elsewhere on a shared machine
/// then falls on all of them alike rather than on one workload's runs, and a ratio is taken
/// within a round. A workload's time is the median of its runs; its ratio to the baseline the
/// median of its rounds' ratios (a run that timed out stops the rounds).
struct Rounds {
    private let baseline: String
    /// Each workload's runs, by mode, in round order (the baseline's too).
    private var runs: [String: [Measurement]] = [:]

    init(baseline: String, others: [String], runs count: Int, rows: Int, directory: URL) throws {
        self.baseline = baseline
        for _ in 0..<max(1, count) {
            for mode in [baseline] + others { runs[mode, default: []].append(try measure(mode, rows: rows, directory: directory)) }
            if runs.values.contains(where: { !$0.last!.seconds.isFinite }) { break }
        }
    }

    /// The run of median time.
    func median(_ mode: String) -> Measurement {
        let sorted = runs[mode]!.sorted { $0.seconds < $1.seconds }
        return sorted[sorted.count / 2]
    }

    /// The median of the rounds' ratios to the baseline (0 when the baseline timed out).
    func ratio(_ mode: String) -> Double {
        let sorted = zip(runs[mode]!, runs[baseline]!).map { run, base in base.seconds.isFinite ? run.seconds / base.seconds : 0 }.sorted()
        return sorted[sorted.count / 2]
    }
}

/// Measures a baseline, the contenders and, when given, a floor (see FloorBaselines.swift) in
/// `objectRuns` rounds (see `Rounds`), and prints each against the baseline; each OpenCoreData
/// line also says how far above the floor it is, and when the target is below the floor's own
/// ratio.
///
/// `parts` are pieces of the floor timed by themselves, printed under it against the baseline.
func report(_ title: String, baseline: (String, String), contenders: [(String, String)], floor floorMode: (String, String)? = nil,
            parts: [(String, String)] = [], target: Double, absoluteTarget: Double? = nil, rows: Int, directory: URL) throws {
    let others = contenders.map(\.1) + (floorMode.map { [$0.1] } ?? []) + parts.map(\.1)
    let rounds = try Rounds(baseline: baseline.1, others: others, runs: objectRuns, rows: rows, directory: directory)
    let base = rounds.median(baseline.1)
    say(title)
    let baseTime = base.seconds.isFinite ? String(format: "%8.1f ms", base.seconds * 1000) : "> \(Int(timeLimit)) s (stopped)"
    say("  \(baseline.0.padding(toLength: 40, withPad: " ", startingAt: 0)) \(baseTime)   1.00x   peak \(base.peakKiB / 1024) MiB")
    func printLine(_ name: String, _ mode: String) {
        let result = rounds.median(mode)
        let ratio = rounds.ratio(mode)
        var verdict = ""
        if mode.contains("ocd") || mode.hasSuffix("cached") {
            verdict = ratio <= target ? "  (target <= \(target)x: met)" : "  (target <= \(target)x: NOT met)"
            if let floorMode, base.seconds.isFinite {
                let floorRatio = rounds.ratio(floorMode.1)
                verdict += String(format: "  %.2fx the floor", ratio / floorRatio)
                if floorRatio > target { verdict += ", whose own \(String(format: "%.2fx", floorRatio)) is above the target" }
            }
        }
        if let absoluteTarget {
            verdict = result.seconds < absoluteTarget ? "  (target < \(absoluteTarget * 1000) ms: met)" : "  (target < \(absoluteTarget * 1000) ms: NOT met)"
        }
        let check = result.checksum == base.checksum || !base.seconds.isFinite ? "" : "  CHECKSUM MISMATCH"
        say("  \(name.padding(toLength: 40, withPad: " ", startingAt: 0)) \(String(format: "%8.1f ms", result.seconds * 1000)) \(String(format: "%6.2fx", ratio))   peak \(result.peakKiB / 1024) MiB\(verdict)\(check)")
    }
    for (name, mode) in contenders { printLine(name, mode) }
    if let floorMode { printLine(floorMode.0, floorMode.1) }
    for (name, mode) in parts { printLine(name, mode) }
    say("")
}

@MainActor func runs(_ group: String) -> Bool { only == nil || only == group }

if runs("objects") {
    try report("fetch + read every value", baseline: ("raw sqlite3 loop", "fetch-raw"),
               contenders: [("GRDB Row cursor", "fetch-grdb"), ("OpenCoreData fetch, value(forKey:)", "fetch-ocd"),
                            ("(same without as! Int64)", "fetch-uncast")],
               floor: ("floor: raw loop + what the API requires", "fetch-floor"),
               parts: [("  of which reading the values alone", "fetch-floor-reading")], target: 1.5, rows: rows, directory: directory)
    try report("insert + save in one transaction", baseline: ("raw prepared INSERT loop", "insert-raw"),
               contenders: [("OpenCoreData insert + save()", "insert-ocd")],
               floor: ("floor: raw loop + what the API requires", "insert-floor"),
               parts: [("  of which the two notification sets", "insert-floor-sets")], target: 2.0, rows: rows, directory: directory)
}

if runs("objects") || runs("typed") {
    // What apps write: typed properties of a managed object subclass.
    try report("fetch + read every value through typed @Managed properties", baseline: ("raw sqlite3 loop", "fetch-raw"),
               contenders: [("OpenCoreData fetch, row.a0 ... row.a9", "fetch-ocd-typed")],
               floor: ("floor: raw loop + objects, typed reads", "fetch-floor-typed"), target: 2.0, rows: rows, directory: directory)
    try report("insert + save through typed @Managed properties", baseline: ("raw prepared INSERT loop", "insert-raw"),
               contenders: [("OpenCoreData TypedRow(context:), row.a0 = ...", "insert-ocd-typed")],
               floor: ("floor: raw loop + objects, typed sets", "insert-floor-typed"), target: 2.0, rows: rows, directory: directory)
    if showPhases {
        try reportPhases("typed fetch", phases: TypedPhases.fetch, workload: "fetch-ocd-typed", floor: "fetch-floor-typed", rows: rows, directory: directory)
        try reportPhases("typed insert", phases: TypedPhases.insert, workload: "insert-ocd-typed", floor: "insert-floor-typed", rows: rows, directory: directory)
    }
}

if runs("objects") || runs("relationships") {
    // A to-one whose destination has subentities: each destination ID needs the row's entity.
    try prepareSubentityStores(directory, rows: rows)
    try report("fetch + read a value and a to-one (1,000 owners; half are SpecialOwner, a subentity)",
               baseline: ("OpenCoreData, Owner without subentities", "subentity-plain-ocd"),
               contenders: [("raw sqlite3 loop (key + entity number)", "subentity-raw"),
                            ("OpenCoreData, Apple's Z<n>_OWNER column", "subentity-apple-ocd"),
                            ("OpenCoreData, no column: subquery", "subentity-nocolumn-ocd")], target: 1.3, rows: rows, directory: directory)
    try report("dictionary fetch of the value and the to-one (its object ID)",
               baseline: ("OpenCoreData, Owner without subentities", "subentity-plain-dict"),
               contenders: [("OpenCoreData, Apple's Z<n>_OWNER column", "subentity-apple-dict"),
                            ("OpenCoreData, no column: subquery", "subentity-nocolumn-dict")], target: 1.3, rows: rows, directory: directory)
}

if runs("objects") || runs("bridged") {
    // Foundation's bridged values against native ones, through the same API: the target is the
    // bridged path within 1.2x of the native one.
    try report("insert + save, NSNumber values", baseline: ("OpenCoreData insert, Int64 values", "insert-ocd"),
               contenders: [("OpenCoreData insert, setValue(NSNumber)", "insert-ocd-nsnumber")],
               floor: ("floor: Int64 path + making each NSNumber", "insert-nsnumber-floor"), target: 1.2, rows: rows, directory: directory)
    try report("fetch + read every value as NSNumber", baseline: ("OpenCoreData fetch, as! Int64", "fetch-ocd"),
               contenders: [("OpenCoreData fetch, as! NSNumber", "fetch-ocd-nsnumber")],
               floor: ("floor: as! Int64 + an NSNumber per value", "fetch-nsnumber-floor"), target: 1.2, rows: rows, directory: directory)
}

if !skipQueries && (runs("queries") || runs("controller") || runs("batch")) {
    say("query language: \(queryRows) rows of Item (name, score, category) → Group (title)\n")
    try prepareQueryStore(directory.appendingPathComponent("query.sqlite"), rows: queryRows)
}
if !skipQueries && runs("queries") {
    try report("compound predicate (CONTAINS[cd], BETWEEN, IN 100 values, to-one key path) + two-key sort, IDs", baseline: ("hand-written SQL (LIKE)", "query-raw"),
               contenders: [("OpenCoreData fetch", "query-ocd")], target: 1.3, rows: queryRows, directory: directory)
    try report("grouped aggregate (COUNT, SUM by category)", baseline: ("hand-written SQL", "aggregate-raw"),
               contenders: [("OpenCoreData dictionary fetch", "aggregate-ocd")], target: 1.3, rows: queryRows, directory: directory)
}
if !skipQueries && runs("controller") {
    try report("fetched results controller: performFetch, batch size 20, sections by category, first screen read", baseline: ("raw query of IDs + section column", "frc-raw"),
               contenders: [("raw query, primary-key tie-break", "frc-raw-tiebreak"), ("OpenCoreData performFetch", "frc-ocd"),
                            ("performFetch with a delegate", "frc-ocd-delegate")], target: 1.3, rows: queryRows, directory: directory)
    _ = try measure("frc-cache-warm", rows: queryRows, directory: directory)
    try report("fetched results controller: relaunch with a valid cache", baseline: ("performFetch without cache", "frc-ocd"),
               contenders: [("OpenCoreData performFetch from cache", "frc-cached")], target: 0.2, rows: queryRows, directory: directory)
    try report("fetched results controller: one saved change delivered (the save's own writing not counted)", baseline: ("refetch everything + difference(from:)", "frc-change-diff"),
               contenders: [("OpenCoreData controller callbacks", "frc-change-ocd")], target: 1.0, absoluteTarget: 0.001, rows: queryRows, directory: directory)
    try report("fetched results controller: 10,000 changes in one save", baseline: ("refetch everything + difference(from:)", "frc-changes-diff"),
               contenders: [("OpenCoreData controller callbacks", "frc-changes-ocd")], target: 1.0, absoluteTarget: 0.05, rows: queryRows, directory: directory)
    // No index on score: any implementation finds the new window by reading every row.
    try report("fetched results controller with a limit (the best 20 scores): one saved change that enters the window", baseline: ("refetch the 20 IDs + difference(from:)", "frc-limited-change-diff"),
               contenders: [("OpenCoreData controller callbacks", "frc-limited-change-ocd")], target: 1.3, rows: queryRows, directory: directory)
    NSFetchedResultsController<NSManagedObject>.deleteCache(withName: "ocd-bench-\(getpid())")
}
if !skipQueries && runs("controller-matrix") {
    try runControllerMatrix(rows: queryRows, runs: matrixRuns, directory: directory, sections: matrixSections, sorts: MatrixCell.Sort.allCases)
}
if !skipQueries && runs("batch") {
    try report("NSBatchUpdateRequest (half the rows)", baseline: ("raw UPDATE", "update-raw"),
               contenders: [("OpenCoreData batch update", "update-ocd")], target: 1.2, rows: queryRows, directory: directory)
    try report("NSBatchDeleteRequest (half the rows)", baseline: ("raw DELETE", "delete-raw"),
               contenders: [("OpenCoreData batch delete", "delete-ocd")], target: 1.2, rows: queryRows, directory: directory)
}
