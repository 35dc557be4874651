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
        } + (sort == .int64 ? ["+t0.Z_PK"] : [])  // The plus keeps SQLite off the department index (see SQLFetchBuilder).
        let join = section == .department ? " LEFT JOIN ZDEPARTMENT d ON d.Z_PK = t0.ZDEPARTMENT" : ""
        let filter = filtered ? " WHERE t0.ZSALARY >= \(Self.minimumSalary)" : ""
        let kept = keepsSortValues ? descriptors.map { column($0.key!) } : []
        return "SELECT \((columns + kept).joined(separator: ", ")) FROM ZEMPLOYEE t0\(join)\(filter) ORDER BY \(orderings.joined(separator: ", "))"
    }

    /// Whether the query also reads every sort descriptor's value (the floor), after the ID and
    /// the section column.
    var keepsSortValues = false

    /// The floor: the raw query reading the sort values too, as any controller that places a
    /// change among the rows without querying again must hold them.
    var floor: MatrixCell {
        var cell = self
        cell.keepsSortValues = true
        return cell
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
    // IDs in blocks of 65,536, so that no array carries the doubling of its growth.
    let block = 65_536
    var ids: [Int64] = []
    var idBlocks: [[Int64]] = []
    var rowCount = 0
    var sections = 0
    var previous: [UInt8] = []
    var previousInteger: Int64 = .min
    let hasSection = cell.section != .none
    // The floor's sort values, as compact as they come: in blocks of 65,536 rows, each block's
    // arrays sized to its values (8 bytes an integer, a string's bytes and a 4-byte end, or for a
    // block of few runs of equal strings, each run's bytes and two 4-byte ends), so no array
    // carries the doubling of its growth.
    let firstKept = Int32(hasSection ? 2 : 1)
    let keptCount = cell.keepsSortValues ? cell.descriptors.count : 0
    var kept: [(integers: [Int64], bytes: [UInt8], ends: [UInt32])] = []
    var current = [(integers: [Int64], bytes: [UInt8], ends: [UInt32])](repeating: ([], [], []), count: keptCount)
    /// A copy with no room to spare.
    func exact<Element>(_ array: [Element]) -> [Element] {
        [Element](unsafeUninitializedCapacity: array.count) { buffer, count in
            _ = array.withUnsafeBufferPointer { buffer.initialize(fromContentsOf: $0) }
            count = array.count
        }
    }
    /// A block's strings with each run of equal rows kept once, when there are few runs (at most
    /// one for 16 rows, the pass stops past that) and that takes less room: the runs' bytes, and
    /// two ends a run (its bytes' and its rows').
    func runs(_ bytes: [UInt8], _ ends: [UInt32]) -> (bytes: [UInt8], ends: [UInt32])? {
        var (runBytes, runEnds) = ([UInt8](), [UInt32]())
        let limit = ends.count / 16 + 1
        return bytes.withUnsafeBufferPointer { bytes in
            var (start, previousStart) = (0, 0)
            for row in ends.indices {
                let end = Int(ends[row])
                if row > 0 && end - start == start - previousStart && memcmp(bytes.baseAddress! + start, bytes.baseAddress! + previousStart, end - start) == 0 {
                    runEnds[runEnds.count - 1] = UInt32(row + 1)
                } else {
                    guard runEnds.count / 2 < limit else { return nil }
                    runBytes.append(contentsOf: bytes[start..<end])
                    runEnds += [UInt32(runBytes.count), UInt32(row + 1)]
                }
                (previousStart, start) = (start, end)
            }
            guard runBytes.count + 4 * runEnds.count < bytes.count + 4 * ends.count else { return nil }
            return (exact(runBytes), exact(runEnds))
        }
    }
    func keepBlock() {
        for index in current.indices {
            let (bytes, ends) = runs(current[index].bytes, current[index].ends) ?? (exact(current[index].bytes), exact(current[index].ends))
            kept.append((exact(current[index].integers), bytes, ends))
            current[index] = ([], [], [])
            current[index].integers.reserveCapacity(block)
            current[index].ends.reserveCapacity(block)
        }
    }
    while sqlite3_step(statement) == SQLITE_ROW {
        if ids.count == block { idBlocks.append(ids); ids = []; ids.reserveCapacity(block) }
        ids.append(sqlite3_column_int64(statement, 0))
        rowCount += 1
        for index in 0..<keptCount {
            let column = firstKept + Int32(index)
            if sqlite3_column_type(statement, column) == SQLITE_INTEGER {
                current[index].integers.append(sqlite3_column_int64(statement, column))
            } else {
                current[index].bytes.append(contentsOf: UnsafeRawBufferPointer(start: sqlite3_column_blob(statement, column), count: Int(sqlite3_column_bytes(statement, column))))
                current[index].ends.append(UInt32(current[index].bytes.count))
            }
        }
        if keptCount > 0 && rowCount % block == 0 { keepBlock() }
        guard hasSection else { continue }
        if sqlite3_column_type(statement, 1) == SQLITE_INTEGER {
            let value = sqlite3_column_int64(statement, 1)
            if value != previousInteger || sections == 0 { sections += 1; previousInteger = value }
        } else {
            let bytes = UnsafeRawBufferPointer(start: sqlite3_column_blob(statement, 1), count: Int(sqlite3_column_bytes(statement, 1)))
            if sections == 0 || !previous.elementsEqual(bytes) { sections += 1; previous = Array(bytes) }
        }
    }
    if !hasSection && rowCount > 0 { sections = 1 }
    keepBlock()
    idBlocks.append(ids)
    return withExtendedLifetime((kept, idBlocks)) { Int64(rowCount &+ sections) }
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

/// What one save of changes cost: the controller's share (the time it adds to the save) and the
/// whole save, its writing included.
struct SavedChanges {
    let added: Double
    let total: Double
    let delivered: Int
}

/// Times the delivery of saved changes to a controller with a table-view delegate: one saved
/// change (the median of `singleSaves` saves of one change each, so that one preemption of the
/// process does not decide the figure; and the first of them, which pays what the controller does
/// once after `performFetch`), then `changes` changes in one save (each object's salary
/// and name, both sort keys in some shapes).
///
/// The controller's share is timed from `processPendingChanges()`, which the app calls before
/// `save()` (a save calls it first too): the context posts its change notification, and the
/// controller places the changes and calls the delegate, inside that call. Only the
/// notification's sets of changed objects are the context's own work there. The whole save is
/// timed from the same start to the end of `save()`.
///
/// `concurrencyType` `.mainQueueConcurrencyType` is an app's view context used on the main thread,
/// which also posts the main-actor notification messages (`ObjectsDidChangeMessage`, …).
func matrixChanges(_ url: URL, _ cell: MatrixCell, changes: Int, rows: Int, singleSaves: Int = 5,
                   concurrencyType: NSManagedObjectContextConcurrencyType = .privateQueueConcurrencyType) throws -> (one: SavedChanges, first: SavedChanges, many: SavedChanges) {
    let context = NSManagedObjectContext(concurrencyType: concurrencyType)
    context.persistentStoreCoordinator = try openMatrixStore(url)
    return try context.performAndWait {
        let controller = NSFetchedResultsController(fetchRequest: cell.request(), managedObjectContext: context,
                                                    sectionNameKeyPath: cell.section.keyPath, cacheName: nil)
        let delegate = CountingDelegate()
        controller.delegate = delegate
        try controller.performFetch()
        func save(_ count: Int, from first: Int) throws -> SavedChanges {
            // Objects spread over the results, reached the way a table reaches them.
            let sections = controller.sections ?? []
            let starts = sections.reduce(into: [0]) { $0.append($0.last! + $1.numberOfObjects) }
            let total = starts.last!
            // A predicate can leave no rows on a small store: nothing to change.
            guard total > 0 else { return SavedChanges(added: 0, total: 0, delivered: 0) }
            for index in first..<(first + count) {
                let position = (index &* 7919) % total
                let section = starts.lastIndex { $0 <= position }!
                let object = controller.object(at: IndexPath(row: position - starts[section], section: section))
                object.setValue(Int64(20_000 + (index &* 104_729) % 100_000), forKey: "salary")
                object.setValue(matrixName(rows + index), forKey: "name")
            }
            delegate.changes = 0
            let began = now()
            context.processPendingChanges()
            try context.save()
            let saved = now()
            return SavedChanges(added: delegate.finished - began, total: saved - began, delivered: delegate.changes)
        }
        let first = try save(1, from: changes)
        let singles = try ([first] + (1..<singleSaves).map { try save(1, from: changes + $0) }).sorted { $0.added < $1.added }
        let many = try save(changes, from: 0)
        return (singles[singles.count / 2], first, many)
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
    case "floor": checksum = try matrixRaw(store, cell.floor)
    case "fetch": checksum = try matrixPerformFetch(store, cell, cacheName: nil)
    case "warm", "cached": checksum = try matrixPerformFetch(store, cell, cacheName: cacheName)
    // One saved change, then 10,000 in one save: "share delivered whole-save one-change-median one-change-first";
    // "viewchanges" through a main-queue context on the main thread.
    case "changes", "viewchanges":
        let copy = directory.appendingPathComponent("\(mode).sqlite")
        removeStore(copy)
        try FileManager.default.copyItem(at: store, to: copy)
        defer { removeStore(copy) }
        let (one, first, many) = try matrixChanges(copy, cell, changes: 10_000, rows: rows,
                                                   concurrencyType: operation == "viewchanges" ? .mainQueueConcurrencyType : .privateQueueConcurrencyType)
        try "\(many.added) \(many.delivered) \(many.total) \(one.added) \(first.added)".write(toFile: output, atomically: true, encoding: .utf8)
        return
    default: throw NSError(domain: "bench", code: 3)
    }
    try "\(now() - start) \(checksum)".write(toFile: output, atomically: true, encoding: .utf8)
}

/// How a cell stands against one target: met, above it where the floor is too (any
/// implementation that keeps the sort values would be), or missed.
enum MatrixVerdict {
    case met, floorBound, missed
}

/// Runs every cell (each operation in its own process; the raw query, the floor and
/// `performFetch` in `runs` rounds, see `Rounds`) and prints the table.
@MainActor func runControllerMatrix(rows: Int, runs: Int, directory: URL, sections: [MatrixCell.Section], sorts: [MatrixCell.Sort]) throws {
    let began = now()
    say("fetched results controller matrix: \(rows) employees; batch size 20; each operation in its own process; raw query, floor and performFetch in \(runs) round\(runs == 1 ? "" : "s") (--runs N; times the medians, ratios the median of the rounds' ratios), the others one run")
    say("targets: performFetch <= 1.3x the raw query of IDs + section column in the same order; peak <= 64 MiB;")
    say("one saved change (the median of 5 saves of one; in brackets the first, after performFetch) < 1 ms and 10,000 in one save < 50 ms added to the save by the controller (from processPendingChanges() to controllerDidChangeContent); cached relaunch >= 5x faster")
    say("floor: the raw query also reading every sort value and keeping them in compact arrays (what any controller that places changes without querying again holds)")
    say("(save): the whole save from the same start, its checks and writing included\n")
    try prepareMatrixStore(directory.appendingPathComponent("matrix.sqlite"), rows: rows)
    let header = ["sections", "sort", "pred", "raw ms", "floor ms", "fetch ms", "x raw", "x floor", "MiB", "floor MiB",
                  "1 change ms (first)", "10k changes ms (save)", "cache x", "targets missed"]
    let widths = [20, 24, 5, 8, 9, 9, 6, 8, 5, 10, 19, 22, 8, 0]
    func line(_ fields: [String]) -> String { matrixLine(fields, widths: widths) }
    say(line(header))
    var (missed, floorBound) = (0, 0)
    // The private-queue saves of the cells without a predicate, for the view-context comparison.
    var privateChanges: [String: Measurement] = [:]
    for section in sections {
        for sort in sorts {
            for filtered in [false, true] {
                let cell = MatrixCell(section: section, sort: sort, filtered: filtered)
                let rounds = try Rounds(baseline: cell.mode("raw"), others: [cell.mode("floor"), cell.mode("fetch")], runs: runs, rows: rows, directory: directory)
                let (raw, floor, fetch) = (rounds.median(cell.mode("raw")), rounds.median(cell.mode("floor")), rounds.median(cell.mode("fetch")))
                _ = try measure(cell.mode("warm"), rows: rows, directory: directory)
                let cached = try measure(cell.mode("cached"), rows: rows, directory: directory)
                NSFetchedResultsController<NSManagedObject>.deleteCache(withName: "ocd-matrix-\(getpid())-\(cell.mode("cache"))")
                let changes = try measure(cell.mode("changes"), rows: rows, directory: directory)
                if !filtered { privateChanges[cell.mode("changes")] = changes }
                let (oneChange, firstChange) = (changes.oneChange, changes.firstChange)
                let (ratio, floorOfRaw) = (rounds.ratio(cell.mode("fetch")), rounds.ratio(cell.mode("floor")))
                let floorRatio = ratio / floorOfRaw
                let speedup = fetch.seconds / cached.seconds
                let mebibyte = 1024
                // Above a target where the floor is above it too, and within 1.3x of the floor's time
                // or a tenth above its memory (the controller also keeps a 4-byte place per row to
                // find a changed object's row): bound by the floor, not missed.
                let verdicts: [(String, MatrixVerdict)] = [
                    ("fetch", ratio <= 1.3 ? .met : (floorOfRaw > 1.3 && floorRatio <= 1.3 ? .floorBound : .missed)),
                    ("memory", fetch.peakKiB <= 64 * mebibyte ? .met
                        : (floor.peakKiB > 64 * mebibyte && fetch.peakKiB <= floor.peakKiB + floor.peakKiB / 10 ? .floorBound : .missed)),
                    ("1 change", oneChange < 0.001 ? .met : .missed),
                    ("10k changes", changes.seconds < 0.05 ? .met : .missed),
                    ("cache", speedup >= 5 ? .met : .missed),
                ]
                var notes = verdicts.compactMap { name, verdict -> String? in
                    switch verdict {
                    case .met: nil
                    case .floorBound: "\(name) (floor too)"
                    case .missed: name
                    }
                }
                if fetch.checksum != raw.checksum || cached.checksum != raw.checksum || floor.checksum != raw.checksum { notes.append("CHECKSUM MISMATCH") }
                if verdicts.contains(where: { $0.1 == .missed }) { missed += 1 } else if verdicts.contains(where: { $0.1 == .floorBound }) { floorBound += 1 }
                say(line([section.label, sort.label, filtered ? "yes" : "no", String(format: "%.1f", raw.seconds * 1000),
                          String(format: "%.1f", floor.seconds * 1000), String(format: "%.1f", fetch.seconds * 1000),
                          String(format: "%.2fx", ratio), String(format: "%.2fx", floorRatio), "\(fetch.peakKiB / mebibyte)",
                          "\(floor.peakKiB / mebibyte)", String(format: "%.2f (%.2f)", oneChange * 1000, firstChange * 1000),
                          String(format: "%.1f (%.1f)", changes.seconds * 1000, changes.wholeSave * 1000),
                          String(format: "%.1fx", speedup), notes.isEmpty ? "-" : notes.joined(separator: ", ")]))
            }
        }
    }
    try compareViewContextChanges(rows: rows, directory: directory, sections: sections, sorts: sorts, privateChanges: privateChanges)
    let cells = sections.count * sorts.count * 2
    say("\n\(cells - missed - floorBound) of \(cells) cells meet every target, \(floorBound) more are above a target only where the floor is too, \(missed) miss one (\(String(format: "%.1f", (now() - began) / 60)) minutes)\n")
}

/// Saved changes through an app's view context (main queue, used on the main thread) beside the
/// same changes through a private-queue context (`privateChanges`, the matrix's own measurements by
/// child mode), for the first and last shapes of the matrix run: what the main-actor notification
/// messages and the main-queue checks add.
@MainActor func compareViewContextChanges(rows: Int, directory: URL, sections: [MatrixCell.Section], sorts: [MatrixCell.Sort],
                                          privateChanges: [String: Measurement]) throws {
    guard let firstSection = sections.first, let lastSection = sections.last, let firstSort = sorts.first, let lastSort = sorts.last else { return }
    say("\nsaved changes through a main-queue (view) context against a private-queue one, no predicate:")
    let widths = [20, 24, 8, 20, 0]
    say("  " + matrixLine(["sections", "sort", "context", "1 change ms (first)", "10k changes ms (save)"], widths: widths))
    var shapes = [(firstSection, firstSort)]
    if lastSection != firstSection || lastSort != firstSort { shapes.append((lastSection, lastSort)) }
    for (section, sort) in shapes {
        let cell = MatrixCell(section: section, sort: sort, filtered: false)
        for (label, operation) in [("private", "changes"), ("main", "viewchanges")] {
            let mode = cell.mode(operation)
            let changes = try privateChanges[mode] ?? measure(mode, rows: rows, directory: directory)
            say("  " + matrixLine([section.label, sort.label, label, String(format: "%.2f (%.2f)", changes.oneChange * 1000, changes.firstChange * 1000),
                                   String(format: "%.1f (%.1f)", changes.seconds * 1000, changes.wholeSave * 1000)], widths: widths))
        }
    }
}

/// Fields padded to their column widths (0: the last column, as long as it is), one space apart.
func matrixLine(_ fields: [String], widths: [Int]) -> String {
    zip(fields, widths).map { $1 == 0 ? $0 : $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined(separator: " ")
}

extension Measurement {
    /// A "changes" child's figures beside its 10,000 changes' share (`seconds`), nan when absent:
    /// the whole save of the 10,000 changes, one change's share (the median) and the first one's.
    var wholeSave: Double { extras.first ?? .nan }
    var oneChange: Double { extras.count > 1 ? extras[1] : .nan }
    var firstChange: Double { extras.count > 2 ? extras[2] : .nan }
}
