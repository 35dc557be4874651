// The object graph and fetched results controllers over the PostgreSQL store (`--store
// postgres://…`), beside raw postgres-nio statements of the same rows on the same server, and the
// time a save on one coordinator takes to reach a fetched results controller on another.
import Foundation
import OpenCoreData
import OpenCoreDataPostgreSQL
import PostgresNIO

/// A URL in a schema of the benchmark's own (dropped at the end).
private func url(_ base: URL, schema: String) -> URL {
    var components = URLComponents(url: base, resolvingAgainstBaseURL: false)!
    components.query = "schema=\(schema)"
    return components.url!
}

/// Seconds `body` takes.
private func timed(_ body: () throws -> Void) rethrows -> Double {
    let start = now()
    try body()
    return now() - start
}

/// A raw connection working in `schema`.
private func rawConnection(_ base: URL, schema: String) throws -> PostgreSQLConnection {
    let connection = try PostgreSQLConnection.open(PostgreSQLLocation(url: base))
    try connection.query("CREATE SCHEMA IF NOT EXISTS \(schema)")
    try connection.query("SET search_path TO \(schema)")
    return connection
}

/// Counts a controller's change batches.
private final class BatchCounter: NSFetchedResultsControllerDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var batches = 0
    var count: Int { lock.withLock { batches } }
    func controllerDidChangeContent(_ controller: NSFetchedResultsController<NSFetchRequestResult>) { lock.withLock { batches += 1 } }
}

func runPostgreSQLBenchmark(_ base: URL, rows: Int, saves: Int) throws {
    let schema = "ocd_bench_\(getpid())"
    let admin = try PostgreSQLConnection.open(PostgreSQLLocation(url: base))
    defer {
        _ = try? admin.query("DROP SCHEMA IF EXISTS \(schema) CASCADE")
        _ = try? admin.query("DROP SCHEMA IF EXISTS \(schema)_raw CASCADE")
        admin.close()
    }
    say("ocd-bench --store: \(rows) objects of one entity with ten Integer 64 attributes on PostgreSQL at \(PostgreSQLLocation.redacted(base))\n")

    // Raw: one transaction of single-row INSERTs with bound values, then one SELECT decoded.
    let raw = try rawConnection(base, schema: schema + "_raw")
    defer { raw.close() }
    try raw.query("CREATE TABLE zrow (z_pk bigint PRIMARY KEY, z_ent bigint, z_opt bigint, \(columns.map { "z\($0) bigint" }.joined(separator: ", ")))")
    let insertSQL = "INSERT INTO zrow VALUES (\((1...13).map { "$\($0)" }.joined(separator: ", ")))"
    let rawInsert = try timed {
        try raw.query("BEGIN")
        for index in 0..<rows {
            var binds = PostgresBindings(capacity: 13)
            binds.append(Int64(index + 1)); binds.append(Int64(1)); binds.append(Int64(1))
            for column in 0..<10 { binds.append(Int64(index * 10 + column)) }
            try raw.query(insertSQL, binds)
        }
        try raw.query("COMMIT")
    }
    var rawSum: Int64 = 0
    let rawFetch = try timed {
        for row in try raw.query("SELECT z_pk, z_ent, z_opt, \(columns.map { "z\($0)" }.joined(separator: ", ")) FROM zrow ORDER BY z_pk") {
            var cells = row.makeIterator()
            for _ in 0..<3 { _ = cells.next() }
            while let cell = cells.next() { rawSum &+= try cell.decode(Int64.self) }
        }
    }

    // OpenCoreData: inserts saved in one save, then a fetch in a fresh coordinator reading every value.
    let storeURL = url(base, schema: schema)
    let model = makeModel()
    let writer = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
    writer.persistentStoreCoordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
    try writer.persistentStoreCoordinator!.addPersistentStore(ofType: NSPostgreSQLStoreType, configurationName: nil, at: storeURL)
    let ocdInsert = try timed {
        try writer.performAndWait {
            for index in 0..<rows {
                let object = NSEntityDescription.insertNewObject(forEntityName: "Row", into: writer)
                for (column, name) in columns.enumerated() { object.setValue(Int64(index * 10 + column), forKey: name) }
            }
            try writer.save()
            writer.reset()
        }
    }
    let reader = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
    reader.persistentStoreCoordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
    try reader.persistentStoreCoordinator!.addPersistentStore(ofType: NSPostgreSQLStoreType, configurationName: nil, at: storeURL)
    var ocdSum: Int64 = 0
    let ocdFetch = try timed {
        try reader.performAndWait {
            for object in try reader.fetch(NSFetchRequest<NSManagedObject>(entityName: "Row")) {
                for name in columns { ocdSum &+= object.value(forKey: name) as! Int64 }
            }
            reader.reset()
        }
    }
    // A predicate that keeps 1% of the rows, sorted descending: SQL's WHERE and ORDER BY against
    // the store's reading of the entity's rows with the predicate evaluated in Swift.
    let cutoff = Int64(rows / 100 * 10)
    var rawSelected = 0
    let rawQuery = try timed {
        var binds = PostgresBindings()
        binds.append(cutoff)
        rawSelected = try raw.query("SELECT z_pk, za0 FROM zrow WHERE za0 < $1 ORDER BY za0 DESC", binds).count
    }
    var ocdSelected = 0
    let ocdQuery = try timed {
        try reader.performAndWait {
            let request = NSFetchRequest<NSManagedObject>(entityName: "Row")
            request.predicate = NSPredicate(format: "a0 < %lld", cutoff)
            request.sortDescriptors = [NSSortDescriptor(key: "a0", ascending: false)]
            ocdSelected = try reader.fetch(request).count
            reader.reset()
        }
    }
    func line(_ name: String, _ seconds: Double, _ base: Double) -> String {
        "  \(name.padding(toLength: 44, withPad: " ", startingAt: 0)) \(String(format: "%9.1f ms  %5.2fx", seconds * 1000, seconds / base))"
    }
    say("Insert \(rows) objects (one save / one transaction)")
    say(line("raw postgres-nio INSERTs", rawInsert, rawInsert))
    say(line("OpenCoreData save", ocdInsert, rawInsert) + "   (target <= 2x)")
    say("Fetch \(rows) objects and read their ten values")
    say(line("raw postgres-nio SELECT", rawFetch, rawFetch))
    say(line("OpenCoreData fetch + value(forKey:)", ocdFetch, rawFetch) + "   (target <= 2x)" + (ocdSum == rawSum ? "" : "   CHECKSUM MISMATCH"))

    say("Fetch 1% of them by a predicate, sorted (\(rawSelected) rows)")
    say(line("raw postgres-nio SELECT … WHERE … ORDER BY", rawQuery, rawQuery))
    say(line("OpenCoreData fetch (WHERE narrowed, then Swift)", ocdQuery, rawQuery) + (ocdSelected == rawSelected ? "" : "   COUNT MISMATCH"))

    // Fetched results controllers on the reader: performFetch over every row, and over 10% of
    // them by a predicate, sorted with batches of 20, against raw queries of the same keys in the
    // same order; then one change saved through the controller's own coordinator.
    let tenth = Int64(rows / 10 * 10)
    var rawKeys = 0
    let rawSorted = try timed { rawKeys = try raw.query("SELECT z_pk FROM zrow ORDER BY za1 DESC").count }
    // The floor of a controller: the keys and the sort values it keeps to place later changes.
    var rawSum1: Int64 = 0
    let rawSortedWithValues = try timed {
        for row in try raw.query("SELECT z_pk, za1 FROM zrow ORDER BY za1 DESC") { rawSum1 &+= try row.decode((Int64, Int64).self).1 }
    }
    var rawTenth = 0
    let rawFiltered = try timed {
        var binds = PostgresBindings()
        binds.append(tenth)
        rawTenth = try raw.query("SELECT z_pk FROM zrow WHERE za0 < $1 ORDER BY za1 DESC", binds).count
    }
    func controller(_ predicate: NSPredicate?) -> NSFetchedResultsController<NSManagedObject> {
        let request = NSFetchRequest<NSManagedObject>(entityName: "Row")
        request.predicate = predicate
        request.sortDescriptors = [NSSortDescriptor(key: "a1", ascending: false)]
        request.fetchBatchSize = 20
        return NSFetchedResultsController(fetchRequest: request, managedObjectContext: reader, sectionNameKeyPath: nil, cacheName: nil)
    }
    var shownAll = 0
    var shownTenth = 0
    let everyRow = controller(nil)
    let filtered = controller(NSPredicate(format: "a0 < %lld", tenth))
    let ocdSorted = try timed { try reader.performAndWait { try everyRow.performFetch(); shownAll = everyRow.fetchedObjects?.count ?? 0 } }
    let ocdFiltered = try timed { try reader.performAndWait { try filtered.performFetch(); shownTenth = filtered.fetchedObjects?.count ?? 0 } }
    let ownCounter = BatchCounter()
    let changed = reader.performAndWait {
        filtered.delegate = ownCounter
        return filtered.fetchedObjects![shownTenth / 2]
    }
    var ownLatencies: [Double] = []
    for save in 0..<100 {
        let before = ownCounter.count
        let start = now()
        try reader.performAndWait {
            changed.setValue(Int64(-save), forKey: "a1")
            try reader.save()
        }
        guard ownCounter.count > before else { throw NSError(domain: "bench", code: 6, userInfo: [NSLocalizedDescriptionKey: "the controller missed its own context's save"]) }
        ownLatencies.append(now() - start)
    }
    ownLatencies.sort()
    say("A fetched results controller, sorted by a1 descending, batch size 20")
    say(line("raw postgres-nio SELECT of \(rawKeys) keys in order", rawSorted, rawSorted))
    say(line("raw postgres-nio SELECT of the keys and a1 (floor)", rawSortedWithValues, rawSorted))
    say(line("performFetch, every row", ocdSorted, rawSorted) + "   (target <= 2x)" + (shownAll == rawKeys ? "" : "   COUNT MISMATCH")
        + String(format: "   %.2fx the floor", ocdSorted / rawSortedWithValues))
    say(line("raw postgres-nio SELECT of \(rawTenth) keys, WHERE a0 < n", rawFiltered, rawFiltered))
    say(line("performFetch, a0 < n (WHERE narrowed)", ocdFiltered, rawFiltered) + "   (target <= 2x)" + (shownTenth == rawTenth ? "" : "   COUNT MISMATCH"))
    say(String(format: "  one change saved through the controller's context, to didChangeContent: median %.2f ms, 99th percentile %.2f ms",
               ownLatencies[ownLatencies.count / 2] * 1000, ownLatencies[ownLatencies.count * 99 / 100] * 1000))

    // Latency: a change saved through one coordinator until a controller on another has it.
    let watching = NSPersistentStoreCoordinator(managedObjectModel: model)
    try watching.addPersistentStore(ofType: NSPostgreSQLStoreType, configurationName: nil, at: storeURL,
                                    options: [NSPersistentStoreRemoteChangeNotificationPostOptionKey: true])
    let viewer = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
    viewer.persistentStoreCoordinator = watching
    let request = NSFetchRequest<NSManagedObject>(entityName: "Row")
    request.predicate = NSPredicate(format: "a0 < 100")
    request.sortDescriptors = [NSSortDescriptor(key: "a0", ascending: true)]
    let controller = NSFetchedResultsController(fetchRequest: request, managedObjectContext: viewer, sectionNameKeyPath: nil, cacheName: nil)
    let counter = BatchCounter()
    try viewer.performAndWait {
        controller.delegate = counter
        try controller.performFetch()
    }
    let observer = NotificationCenter.default.addObserver(forName: .NSPersistentStoreRemoteChange, object: watching, queue: nil) { note in
        NSManagedObjectContext.mergeChanges(fromRemoteContextSave: note.userInfo ?? [:], into: [viewer])
    }
    defer { NotificationCenter.default.removeObserver(observer) }
    let target = try writer.performAndWait {
        let fetch = NSFetchRequest<NSManagedObject>(entityName: "Row")
        fetch.predicate = NSPredicate(format: "a0 == 0")
        return try writer.fetch(fetch)[0]
    }
    var latencies: [Double] = []
    for save in 0..<saves {
        let before = counter.count
        let start = now()
        try writer.performAndWait {
            target.setValue(Int64(save), forKey: "a1")
            try writer.save()
        }
        while counter.count == before {
            if now() - start > 5 { throw NSError(domain: "bench", code: 5, userInfo: [NSLocalizedDescriptionKey: "a save did not reach the controller within 5 s"]) }
            usleep(50)
        }
        latencies.append(now() - start)
    }
    latencies.sort()
    let median = latencies[latencies.count / 2]
    let p99 = latencies[min(latencies.count - 1, latencies.count * 99 / 100)]
    say("A saved change reaching a controller on another coordinator (\(saves) saves, from save() to the controller's didChangeContent)")
    say(String(format: "  median %.2f ms   99th percentile %.2f ms   (target < 50 ms)", median * 1000, p99 * 1000))
}
