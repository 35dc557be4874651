// ocd-bench: OpenCoreData against raw sqlite3 (and GRDB) on the same work, in one run.
//
// Usage: swift run -c release ocd-bench [--rows N]
// Each measurement runs in a child process of its own, so its peak resident memory is its own.
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

func openStore(_ url: URL) throws -> NSPersistentStoreCoordinator {
    let coordinator = NSPersistentStoreCoordinator(managedObjectModel: makeModel())
    try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url, options: nil)
    return coordinator
}

/// Creates a store holding `rows` rows, written with raw SQL for speed.
func prepareFetchStore(_ url: URL, rows: Int) throws {
    try? FileManager.default.removeItem(at: url)
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

func fetchRaw(_ url: URL) throws -> Int64 {
    var db: OpaquePointer?
    guard sqlite3_open_v2(url.path, &db, SQLITE_OPEN_READONLY, nil) == SQLITE_OK else { throw NSError(domain: "bench", code: 1) }
    defer { sqlite3_close(db) }
    var statement: OpaquePointer?
    sqlite3_prepare_v2(db, "SELECT Z_PK, \(columns.map { "Z" + $0.uppercased() }.joined(separator: ", ")) FROM ZROW", -1, &statement, nil)
    defer { sqlite3_finalize(statement) }
    var sum: Int64 = 0
    while sqlite3_step(statement) == SQLITE_ROW {
        for index in 1...10 { sum &+= sqlite3_column_int64(statement, Int32(index)) }
    }
    return sum
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

func fetchOpenCoreData(_ url: URL) throws -> Int64 {
    let coordinator = try openStore(url)
    let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
    context.persistentStoreCoordinator = coordinator
    return try context.performAndWait {
        let objects = try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Row"))
        var sum: Int64 = 0
        for object in objects {
            for key in columns { sum &+= object.value(forKey: key) as! Int64 }
        }
        return sum
    }
}

func insertRaw(_ url: URL, rows: Int) throws -> Int64 {
    try? FileManager.default.removeItem(at: url)
    _ = try openStore(url)  // the same empty Core Data schema
    var db: OpaquePointer?
    sqlite3_open_v2(url.path, &db, SQLITE_OPEN_READWRITE, nil)
    defer { sqlite3_close(db) }
    sqlite3_exec(db, "BEGIN IMMEDIATE", nil, nil, nil)
    var statement: OpaquePointer?
    sqlite3_prepare_v2(db, "INSERT INTO ZROW (Z_PK, Z_ENT, Z_OPT, \(columns.map { "Z" + $0.uppercased() }.joined(separator: ", "))) VALUES (?, 1, 1, \(Array(repeating: "?", count: 10).joined(separator: ", ")))", -1, &statement, nil)
    for pk in 1...rows {
        sqlite3_bind_int64(statement, 1, Int64(pk))
        for index in 0..<10 { sqlite3_bind_int64(statement, Int32(index + 2), Int64(pk &* 31 &+ index)) }
        sqlite3_step(statement)
        sqlite3_reset(statement)
    }
    sqlite3_finalize(statement)
    sqlite3_exec(db, "UPDATE Z_PRIMARYKEY SET Z_MAX = \(rows) WHERE Z_NAME = 'Row'", nil, nil, nil)
    sqlite3_exec(db, "COMMIT", nil, nil, nil)
    return Int64(rows)
}

func insertOpenCoreData(_ url: URL, rows: Int) throws -> Int64 {
    try? FileManager.default.removeItem(at: url)
    let coordinator = try openStore(url)
    let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
    context.persistentStoreCoordinator = coordinator
    try context.performAndWait {
        let entity = coordinator.managedObjectModel.entitiesByName["Row"]!
        let start = now()
        for pk in 1...rows {
            let object = NSManagedObject(entity: entity, insertInto: context)
            for (index, key) in columns.enumerated() { object.setValue(Int64(pk &* 31 &+ index), forKey: key) }
        }
        let inserted = now()
        try context.save()
        if ProcessInfo.processInfo.environment["OCD_BENCH_PHASES"] != nil {
            FileHandle.standardError.write("insert \(inserted - start) s, save \(now() - inserted) s\n".data(using: .utf8)!)
        }
    }
    return Int64(rows)
}

// MARK: Child-process runner

struct Measurement {
    let seconds: Double
    let peakKiB: Int
    let checksum: String
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
    wait4(pid, &status, 0, &usage)
    let text = try String(contentsOf: output, encoding: .utf8).split(separator: " ")
    return Measurement(seconds: Double(text[0]) ?? .nan, peakKiB: usage.ru_maxrss, checksum: String(text[1]))
}

func runChild(mode: String, rows: Int, directory: URL, output: String) throws {
    let fetchURL = directory.appendingPathComponent("fetch.sqlite")
    let insertURL = directory.appendingPathComponent("insert-\(mode).sqlite")
    let start = now()
    let checksum: Int64
    switch mode {
    case "prepare": try prepareFetchStore(fetchURL, rows: rows); checksum = 0
    case "fetch-raw": checksum = try fetchRaw(fetchURL)
    case "fetch-grdb": checksum = try fetchGRDB(fetchURL)
    case "fetch-ocd": checksum = try fetchOpenCoreData(fetchURL)
    case "insert-raw": checksum = try insertRaw(insertURL, rows: rows)
    case "insert-ocd": checksum = try insertOpenCoreData(insertURL, rows: rows)
    default: throw NSError(domain: "bench", code: 3)
    }
    let seconds = now() - start
    try "\(seconds) \(checksum)".write(toFile: output, atomically: true, encoding: .utf8)
}

// MARK: Main

var rows = 200_000
var childMode: String?
var directory = FileManager.default.temporaryDirectory.appendingPathComponent("ocd-bench-\(getpid())")
var output = ""
var iterator = CommandLine.arguments.dropFirst().makeIterator()
while let argument = iterator.next() {
    switch argument {
    case "--rows": rows = Int(iterator.next() ?? "") ?? rows
    case "--child": childMode = iterator.next()
    case "--dir": directory = URL(fileURLWithPath: iterator.next() ?? "")
    case "--out": output = iterator.next() ?? ""
    default: print("Usage: ocd-bench [--rows N]"); exit(2)
    }
}

if let childMode {
    try runChild(mode: childMode, rows: rows, directory: directory, output: output)
    exit(0)
}

try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: directory) }
print("ocd-bench: \(rows) objects of one entity with ten Integer 64 attributes (median of 3 runs, each in its own process)\n")
try prepareFetchStore(directory.appendingPathComponent("fetch.sqlite"), rows: rows)

func median(_ mode: String, rows: Int, directory: URL) throws -> Measurement {
    let runs = try (0..<3).map { _ in try measure(mode, rows: rows, directory: directory) }.sorted { $0.seconds < $1.seconds }
    return runs[1]
}

func report(_ title: String, baseline: (String, String), contenders: [(String, String)], target: Double, rows: Int, directory: URL) throws {
    let base = try median(baseline.1, rows: rows, directory: directory)
    print(title)
    print("  \(baseline.0.padding(toLength: 34, withPad: " ", startingAt: 0)) \(String(format: "%8.1f ms", base.seconds * 1000))   1.00x   peak \(base.peakKiB / 1024) MiB")
    for (name, mode) in contenders {
        let result = try median(mode, rows: rows, directory: directory)
        let ratio = result.seconds / base.seconds
        let verdict = mode.hasSuffix("ocd") ? (ratio <= target ? "  (target <= \(target)x: met)" : "  (target <= \(target)x: NOT met)") : ""
        let check = result.checksum == base.checksum ? "" : "  CHECKSUM MISMATCH"
        print("  \(name.padding(toLength: 34, withPad: " ", startingAt: 0)) \(String(format: "%8.1f ms", result.seconds * 1000)) \(String(format: "%6.2fx", ratio))   peak \(result.peakKiB / 1024) MiB\(verdict)\(check)")
    }
    print("")
}

try report("fetch + read every value", baseline: ("raw sqlite3 loop", "fetch-raw"),
           contenders: [("GRDB Row cursor", "fetch-grdb"), ("OpenCoreData fetch + value(forKey:)", "fetch-ocd")], target: 1.5, rows: rows, directory: directory)
try report("insert + save in one transaction", baseline: ("raw prepared INSERT loop", "insert-raw"),
           contenders: [("OpenCoreData insert + save()", "insert-ocd")], target: 2.0, rows: rows, directory: directory)
