// The fetched results controller over a matrix of shapes: section keys × sort descriptors × with
// and without a predicate, each cell measured in child processes against the raw query of the
// same IDs and section column in the same order.
import Foundation
import GRDB
import GRDBSQLite
import OpenCoreData

/// The matrix model: Employee (name, team, level, salary, department) → Department (name).
///
/// `name` is unique and longer than Swift's 15-byte small strings, as people's names often are;
/// `team` takes 50 values, `level` 1,000, `department.name` 100.
func makeMatrixModel() -> NSManagedObjectModel {
    let employee = NSEntityDescription(name: "Employee")
    let department = NSEntityDescription(name: "Department")
    let (employeeDepartment, departmentEmployees) = inversePair(from: employee, "department", to: department, "employees")
    employee.properties = [
        NSAttributeDescription(name: "name", type: .stringAttributeType),
        NSAttributeDescription(name: "team", type: .stringAttributeType),
        NSAttributeDescription(name: "level", type: .integer64AttributeType),
        NSAttributeDescription(name: "salary", type: .integer64AttributeType),
        employeeDepartment,
    ]
    department.properties = [NSAttributeDescription(name: "name", type: .stringAttributeType), departmentEmployees]
    let model = NSManagedObjectModel()
    model.entities = [employee, department]
    return model
}

func openMatrixStore(_ url: URL) throws -> NSPersistentStoreCoordinator {
    try openStore(url, model: makeMatrixModel())
}

let matrixWords = ["Adèle", "bruno", "Chloé", "david", "Émile", "Fanny", "gaspard", "Hélène", "Inès", "jules"]

/// An employee's unique name: a word, a family name and a number, spread over the rows.
func matrixName(_ number: Int) -> String {
    "\(matrixWords[number % 10]) \(matrixWords[(number / 10) % 10])son \(number)"
}

func prepareMatrixStore(_ url: URL, rows: Int) throws {
    removeStore(url)
    _ = try openMatrixStore(url)
    let queue = try DatabaseQueue(path: url.path)
    try queue.write { db in
        for index in 1...100 {
            try db.execute(sql: "INSERT INTO ZDEPARTMENT (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (?, 1, 1, ?)",
                           arguments: [index, "\(matrixWords[index % 10]) department \(index)"])
        }
        let statement = try db.makeStatement(sql: "INSERT INTO ZEMPLOYEE (Z_PK, Z_ENT, Z_OPT, ZNAME, ZTEAM, ZLEVEL, ZSALARY, ZDEPARTMENT) VALUES (?, 2, 1, ?, ?, ?, ?, ?)")
        for pk in 1...rows {
            let spread = (pk &* 7919) % rows
            let team = (pk &* 31) % 50
            try statement.execute(arguments: [pk, matrixName(spread), "\(matrixWords[team % 10]) team \(team / 10)",
                                              (pk &* 37) % 1000, 20_000 + (pk &* 7) % 100_000, (pk &* 13) % 100 + 1])
        }
        try db.execute(sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_NAME = 'Employee'", arguments: [rows])
        try db.execute(sql: "UPDATE Z_PRIMARYKEY SET Z_MAX = 100 WHERE Z_NAME = 'Department'")
    }
}

/// One cell of the matrix.
struct MatrixCell {
    enum Section: String, CaseIterable {
        case none, team, level, department
        var keyPath: String? {
            switch self {
            case .none: nil
            case .team: "team"
            case .level: "level"
            case .department: "department.name"
            }
        }
        var label: String {
            switch self {
            case .none: "no sections"
            case .team: "team (50, string)"
            case .level: "level (1,000, Int64)"
            case .department: "department.name"
            }
        }
    }

    enum Sort: String, CaseIterable {
        case int64, string, standard, mixed
        var label: String {
            switch self {
            case .int64: "salary (Int64)"
            case .string: "name compare:"
            case .standard: "name localizedStandard"
            case .mixed: "string, Int64, string"
            }
        }
    }

    let section: Section
    let sort: Sort
    let filtered: Bool

    /// The mode name of an operation on this cell, for a child process.
    func mode(_ operation: String) -> String { "matrix-\(operation)-\(section.rawValue)-\(sort.rawValue)-\(filtered ? "p" : "all")" }

    init(section: Section, sort: Sort, filtered: Bool) {
        (self.section, self.sort, self.filtered) = (section, sort, filtered)
    }

    /// The cell a child's mode names, with the operation.
    init?(mode: String) {
        let parts = mode.split(separator: "-").map(String.init)
        guard parts.count == 5, parts[0] == "matrix", let section = Section(rawValue: parts[2]), let sort = Sort(rawValue: parts[3]) else { return nil }
        self.init(section: section, sort: sort, filtered: parts[4] == "p")
    }

    static let minimumSalary = 70_000

    /// The sort descriptors: the section key first (sections must follow the sort), then the shape.
    var descriptors: [NSSortDescriptor] {
        let sectionSort = section.keyPath.map { NSSortDescriptor(key: $0, ascending: true) }
        switch sort {
        case .int64: return [sectionSort, NSSortDescriptor(key: "salary", ascending: false)].compactMap { $0 }
        case .string: return [sectionSort, NSSortDescriptor(key: "name", ascending: true)].compactMap { $0 }
        case .standard:
            return [sectionSort, NSSortDescriptor(key: "name", ascending: true, selector: Selector("localizedStandardCompare:"))].compactMap { $0 }
        case .mixed:
            return [sectionSort ?? NSSortDescriptor(key: "team", ascending: true), NSSortDescriptor(key: "salary", ascending: false),
                    NSSortDescriptor(key: "name", ascending: true)]
        }
    }

    func request() -> NSFetchRequest<NSManagedObject> {
        let request = NSFetchRequest<NSManagedObject>(entityName: "Employee")
        request.sortDescriptors = descriptors
        if filtered { request.predicate = NSPredicate(format: "salary >= %d", Self.minimumSalary) }
        request.fetchBatchSize = 20
        return request
    }

    /// The raw query: IDs and the section column in the controller's order (ties by primary key,
    /// which only the Int64 shape has).
    var rawSQL: String {
        func column(_ key: String) -> String { key == "department.name" ? "d.ZNAME" : "t0.Z\(key.uppercased())" }
        var columns = ["t0.Z_PK"]
        if let key = section.keyPath { columns.append(column(key)) }
        let orderings = descriptors.map { descriptor in
            column(descriptor.key!) + (descriptor.selector?.description == "localizedStandardCompare:" ? " COLLATE OCD_STANDARD" : "")
                + (descriptor.ascending ? " ASC" : " DESC")
        } + (sort == .int64 ? ["t0.Z_PK"] : [])
        let join = section == .department ? " LEFT JOIN ZDEPARTMENT d ON d.Z_PK = t0.ZDEPARTMENT" : ""
        let filter = filtered ? " WHERE t0.ZSALARY >= \(Self.minimumSalary)" : ""
        return "SELECT \(columns.joined(separator: ", ")) FROM ZEMPLOYEE t0\(join)\(filter) ORDER BY \(orderings.joined(separator: ", "))"
    }
}

/// The comparison a raw program would register for `localizedStandardCompare:`: the same order
/// the store's collation uses, so both sort alike.
private func standardCollation(_: UnsafeMutableRawPointer?, _ count: Int32, _ bytes: UnsafeRawPointer?, _ otherCount: Int32, _ otherBytes: UnsafeRawPointer?) -> Int32 {
    let result = StringComparison.compareUTF8(UnsafeRawBufferPointer(start: bytes, count: Int(count)),
                                              UnsafeRawBufferPointer(start: otherBytes, count: Int(otherCount)), by: .localizedStandard)
    return result == .orderedAscending ? -1 : (result == .orderedSame ? 0 : 1)
}

/// The baseline: the raw query of the cell, its IDs kept in an array and its sections counted
/// from the section column's bytes.
func matrixRaw(_ url: URL, _ cell: MatrixCell) throws -> Int64 {
    var db: OpaquePointer?
    sqlite3_open_v2(url.path, &db, SQLITE_OPEN_READONLY, nil)
    defer { sqlite3_close(db) }
    sqlite3_create_collation_v2(db, "OCD_STANDARD", SQLITE_UTF8, nil, standardCollation, nil)
    var statement: OpaquePointer?
    guard sqlite3_prepare_v2(db, cell.rawSQL, -1, &statement, nil) == SQLITE_OK else {
        throw NSError(domain: "bench", code: 4, userInfo: [NSLocalizedDescriptionKey: String(cString: sqlite3_errmsg(db))])
    }
    defer { sqlite3_finalize(statement) }
    var ids: [Int64] = []
    var sections = 0
    var previous: [UInt8] = []
    var previousInteger: Int64 = .min
    let hasSection = cell.section != .none
    while sqlite3_step(statement) == SQLITE_ROW {
        ids.append(sqlite3_column_int64(statement, 0))
        guard hasSection else { continue }
        if sqlite3_column_type(statement, 1) == SQLITE_INTEGER {
            let value = sqlite3_column_int64(statement, 1)
            if value != previousInteger || sections == 0 { sections += 1; previousInteger = value }
        } else {
            let bytes = UnsafeRawBufferPointer(start: sqlite3_column_blob(statement, 1), count: Int(sqlite3_column_bytes(statement, 1)))
            if sections == 0 || !previous.elementsEqual(bytes) { sections += 1; previous = Array(bytes) }
        }
    }
    if !hasSection && !ids.isEmpty { sections = 1 }
    return Int64(ids.count &+ sections)
}

/// `performFetch`, then what a table asks first: the section counts and the first screen's rows.
func matrixPerformFetch(_ url: URL, _ cell: MatrixCell, cacheName: String?) throws -> Int64 {
    let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
    context.persistentStoreCoordinator = try openMatrixStore(url)
    return try context.performAndWait {
        let controller = NSFetchedResultsController(fetchRequest: cell.request(), managedObjectContext: context,
                                                    sectionNameKeyPath: cell.section.keyPath, cacheName: cacheName)
        try controller.performFetch()
        let sections = controller.sections ?? []
        let rows = sections.reduce(0) { $0 + $1.numberOfObjects }
        for row in 0..<min(20, sections.first?.numberOfObjects ?? 0) {
            _ = controller.object(at: IndexPath(row: row, section: 0)).value(forKey: "name")
        }
        return Int64(rows &+ sections.count)
    }
}

/// Times the delivery of `changes` saved changes (each object's salary and name, both sort keys
/// in some shapes) to a controller with a table-view delegate: from the call to `save()` to
/// `controllerDidChangeContent` (the save's writing comes after and is not counted).
func matrixChanges(_ url: URL, _ cell: MatrixCell, changes: Int, rows: Int) throws -> (Double, Int64) {
    let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
    context.persistentStoreCoordinator = try openMatrixStore(url)
    return try context.performAndWait {
        let controller = NSFetchedResultsController(fetchRequest: cell.request(), managedObjectContext: context,
                                                    sectionNameKeyPath: cell.section.keyPath, cacheName: nil)
        let delegate = CountingDelegate()
        controller.delegate = delegate
        try controller.performFetch()
        // Objects spread over the results, reached the way a table reaches them.
        let sections = controller.sections ?? []
        let starts = sections.reduce(into: [0]) { $0.append($0.last! + $1.numberOfObjects) }
        let total = starts.last!
        // A predicate can leave no rows on a small store: nothing to change.
        guard total > 0 else { return (0, 0) }
        for index in 0..<changes {
            let position = (index &* 7919) % total
            let section = starts.lastIndex { $0 <= position }!
            let object = controller.object(at: IndexPath(row: position - starts[section], section: section))
            object.setValue(Int64(20_000 + (index &* 104_729) % 100_000), forKey: "salary")
            object.setValue(matrixName(rows + index), forKey: "name")
        }
        let began = now()
        try context.save()
        return (delegate.finished - began, Int64(delegate.changes))
    }
}

/// Runs one matrix operation in this (child) process and writes "seconds checksum" to `output`.
func runMatrixChild(mode: String, rows: Int, directory: URL, output: String) throws {
    guard let cell = MatrixCell(mode: mode) else { throw NSError(domain: "bench", code: 3) }
    let store = directory.appendingPathComponent("matrix.sqlite")
    let operation = mode.split(separator: "-")[1]
    let cacheName = "ocd-matrix-\(getppid())-\(cell.mode("cache"))"
    let start = now()
    let checksum: Int64
    switch operation {
    // Makes the store alone (`--child matrix-prepare-none-int64-all --dir D`), for profiling one operation by hand.
    case "prepare": try prepareMatrixStore(store, rows: rows); checksum = 0
    case "raw": checksum = try matrixRaw(store, cell)
    case "fetch": checksum = try matrixPerformFetch(store, cell, cacheName: nil)
    case "warm", "cached": checksum = try matrixPerformFetch(store, cell, cacheName: cacheName)
    case "change", "changes":
        let copy = directory.appendingPathComponent("\(mode).sqlite")
        removeStore(copy)
        try FileManager.default.copyItem(at: store, to: copy)
        defer { removeStore(copy) }
        let (seconds, delivered) = try matrixChanges(copy, cell, changes: operation == "change" ? 1 : 10_000, rows: rows)
        try "\(seconds) \(delivered)".write(toFile: output, atomically: true, encoding: .utf8)
        return
    default: throw NSError(domain: "bench", code: 3)
    }
    try "\(now() - start) \(checksum)".write(toFile: output, atomically: true, encoding: .utf8)
}

/// Runs every cell (one run of each operation, each in its own process) and prints the table.
@MainActor func runControllerMatrix(rows: Int, directory: URL, sections: [MatrixCell.Section], sorts: [MatrixCell.Sort]) throws {
    say("fetched results controller matrix: \(rows) employees; batch size 20; each operation in its own process, the median of 3 runs for the raw query and performFetch, one run of the others")
    say("targets: performFetch <= 1.3x the raw query of IDs + section column in the same order; peak <= 64 MiB;")
    say("one saved change < 1 ms; 10,000 changes < 50 ms (from save() to controllerDidChangeContent); cached relaunch >= 5x faster\n")
    try prepareMatrixStore(directory.appendingPathComponent("matrix.sqlite"), rows: rows)
    let header = ["sections", "sort", "pred", "raw ms", "fetch ms", "ratio", "peak MiB", "1 change ms", "10k changes ms", "cache x", "misses"]
    let widths = [20, 24, 5, 8, 9, 6, 9, 12, 15, 8, 0]
    func line(_ fields: [String]) -> String {
        zip(fields, widths).map { $1 == 0 ? $0 : $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined(separator: " ")
    }
    say(line(header))
    var missed = 0
    for section in sections {
        for sort in sorts {
            for filtered in [false, true] {
                let cell = MatrixCell(section: section, sort: sort, filtered: filtered)
                let raw = try median(cell.mode("raw"), rows: rows, directory: directory)
                let fetch = try median(cell.mode("fetch"), rows: rows, directory: directory)
                _ = try measure(cell.mode("warm"), rows: rows, directory: directory)
                let cached = try measure(cell.mode("cached"), rows: rows, directory: directory)
                NSFetchedResultsController<NSManagedObject>.deleteCache(withName: "ocd-matrix-\(getpid())-\(cell.mode("cache"))")
                let change = try measure(cell.mode("change"), rows: rows, directory: directory)
                let changes = try measure(cell.mode("changes"), rows: rows, directory: directory)
                let ratio = fetch.seconds / raw.seconds
                let speedup = fetch.seconds / cached.seconds
                var misses: [String] = []
                if ratio > 1.3 { misses.append("fetch") }
                if fetch.peakKiB > 64 * 1024 { misses.append("memory") }
                if !(change.seconds < 0.001) { misses.append("1 change") }
                if !(changes.seconds < 0.05) { misses.append("10k changes") }
                if speedup < 5 { misses.append("cache") }
                if fetch.checksum != raw.checksum || cached.checksum != raw.checksum { misses.append("CHECKSUM MISMATCH") }
                if !misses.isEmpty { missed += 1 }
                say(line([section.label, sort.label, filtered ? "yes" : "no", String(format: "%.1f", raw.seconds * 1000),
                          String(format: "%.1f", fetch.seconds * 1000), String(format: "%.2fx", ratio), "\(fetch.peakKiB / 1024)",
                          String(format: "%.2f", change.seconds * 1000), String(format: "%.1f", changes.seconds * 1000),
                          String(format: "%.1fx", speedup), misses.isEmpty ? "-" : misses.joined(separator: ", ")]))
            }
        }
    }
    say("\n\(missed) of \(sections.count * sorts.count * 2) cells miss a target\n")
}
