// Floor baselines: the raw sqlite3 loops plus the least work Core Data's API itself requires of any
// implementation, done as cheaply as we know how. They answer "how close to the raw loop can an
// object graph get at all?", so a ratio target below a floor's ratio cannot be met by tuning.
//
// What the floors keep (each is required by the API or by the workload as the issue defines it):
// - one object per row, an instance of an `NSObject` subclass, holding its ten values inline;
// - `setValue(_:forKey:)` / `value(forKey:)` with a `String` key and an `Any?` value, the key
//   mapped to a slot by its last character (cheaper than any general lookup);
// - fetch: a uniquing table from primary key to object (one object per row per context), and the
//   benchmark's own `as! Int64` on every value read;
// - insert: the set of inserted objects that `NSManagedObjectContextObjectsDidChange` and
//   `NSManagedObjectContextDidSave` carry, one `NSObject` ID per saved object and the set of them
//   that `NSManagedObjectContextDidSaveObjectIDs` carries, the three notifications posted;
// - everything freed before the clock stops, as in the OpenCoreData workloads.
// What they leave out: validation, change tracking beyond the one array of new objects, faulting,
// copy-on-write values, relationships, temporary IDs, undo, every check a real framework makes.
import Foundation
import GRDBSQLite
import OpenCoreData

/// The least an object of the benchmark's entity can be: ten values inline, a context, an ID.
final class FloorObject: NSObject {
    unowned(unsafe) let context: AnyObject
    var objectID: FloorObjectID?
    private var slots: (Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64) = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0)

    init(context: AnyObject) { self.context = context }

    /// The slot of keys "a0" … "a9": their last character.
    @inline(__always)
    private static func slotIndex(forKey key: String) -> Int { Int(key.utf8.last! &- UInt8(ascii: "0")) }

    /// Stores an `Int64` held in an `Any?` without the runtime's dynamic cast.
    @inline(never)
    func setValue(_ value: Any?, forKey key: String) {
        let word = withUnsafeBytes(of: value) { $0.load(as: Int64.self) }
        setSlot(Self.slotIndex(forKey: key), to: word)
    }

    /// The value of a key, boxed in an `Any?` as Core Data's accessor returns it.
    @inline(never)
    func value(forKey key: String) -> Any? {
        slot(Self.slotIndex(forKey: key))
    }

    /// A slot's value, unboxed (how a store reads it to bind).
    @inline(__always)
    func slot(_ slot: Int) -> Int64 {
        withUnsafeBytes(of: slots) { $0.load(fromByteOffset: slot &* 8, as: Int64.self) }
    }

    /// Sets a slot's value, unboxed (how a store fills a fetched row).
    @inline(__always)
    func setSlot(_ slot: Int, to word: Int64) {
        withUnsafeMutableBytes(of: &slots) { $0.storeBytes(of: word, toByteOffset: slot &* 8, as: Int64.self) }
    }
}

/// The least an object ID can be: an `NSObject` holding a primary key.
final class FloorObjectID: NSObject {
    let primaryKey: Int64
    init(primaryKey: Int64) { self.primaryKey = primaryKey }
}

/// The raw fetch loop, making an object per row as it goes, then reading every value through
/// `value(forKey:) as! Int64` as `fetchOpenCoreData` does.
func fetchFloor(_ url: URL) throws -> Int64 {
    let (registry, objects) = try fetchFloorObjects(url)
    defer { withExtendedLifetime(registry) {} }
    return readFloorObjects(objects)
}

/// The fetch floor's reading alone: every value of objects fetched before the clock starts, read
/// through `value(forKey:) as! Int64`. What reading costs by itself, even through the cheapest
/// `value(forKey:)`: added to the raw loop's own time, it bounds what any fetch can reach.
func fetchFloorReadingOnly(_ url: URL) throws -> (seconds: Double, checksum: Int64) {
    let (registry, objects) = try fetchFloorObjects(url)
    defer { withExtendedLifetime(registry) {} }
    let start = now()
    let sum = readFloorObjects(objects)
    return (now() - start, sum)
}

/// The typed-property fetch floor: the raw loop making an object per row, each registered by
/// primary key, then every value read as a typed property reads it: a stored word, no key, no cast.
func fetchFloorTyped(_ url: URL) throws -> Int64 {
    PhaseClock.current.start()
    var fetched: (registry: [FloorObject?], objects: [FloorObject])? = try fetchFloorObjects(url)
    PhaseClock.current.mark()
    var sum: Int64 = 0
    for object in fetched!.objects {
        for index in 0..<10 { sum &+= object.slot(index) }
    }
    PhaseClock.current.mark()
    fetched = nil
    PhaseClock.current.mark()
    return sum
}

/// Reads every value of the objects through `value(forKey:) as! Int64`.
func readFloorObjects(_ objects: [FloorObject]) -> Int64 {
    var sum: Int64 = 0
    for object in objects {
        for key in columns { sum &+= object.value(forKey: key) as! Int64 }
    }
    return sum
}

/// The raw fetch loop making an object per row, each registered by primary key.
func fetchFloorObjects(_ url: URL) throws -> (registry: [FloorObject?], objects: [FloorObject]) {
    let context = NSObject()
    var registry: [FloorObject?] = []
    var objects: [FloorObject] = []
    try withRawFetchStatement(url) { statement in
        while sqlite3_step(statement) == SQLITE_ROW {
            let primaryKey = Int(sqlite3_column_int64(statement, 0))
            let object = FloorObject(context: context)
            for index in 0..<10 { object.setSlot(index, to: sqlite3_column_int64(statement, Int32(index + 1))) }
            if primaryKey >= registry.count { registry.append(contentsOf: repeatElement(nil, count: primaryKey + 1 - registry.count)) }
            registry[primaryKey] = object
            objects.append(object)
        }
    }
    return (registry, objects)
}

/// The raw insert loop, each row first made as an object whose values are set by key (`typed`:
/// as typed properties set them, a stored word each), then the sets and notifications a save posts.
func insertFloor(_ url: URL, rows: Int, typed: Bool = false) throws -> Int64 {
    PhaseClock.current.start()
    let rows = try insertFloorObjects(url, rows: rows, typed: typed)
    PhaseClock.current.mark()
    return rows
}

/// `insertFloor` but for freeing its objects, sets and IDs (which its caller times).
private func insertFloorObjects(_ url: URL, rows: Int, typed: Bool) throws -> Int64 {
    let context = NSObject()
    var inserted: [FloorObject] = []
    for pk in 1...rows {
        let object = FloorObject(context: context)
        if typed {
            for index in 0..<10 { object.setSlot(index, to: Int64(pk &* 31 &+ index)) }
        } else {
            for (index, key) in columns.enumerated() { object.setValue(Int64(pk &* 31 &+ index), forKey: key) }
        }
        inserted.append(object)
    }
    PhaseClock.current.mark()
    let insertedSet = Set(inserted)
    NotificationCenter.default.post(name: floorDidChange, object: context, userInfo: [NSInsertedObjectsKey: insertedSet])
    PhaseClock.current.mark()
    try withRawInsertStatement(url, rows: rows) { statement in
        for (offset, object) in inserted.enumerated() {
            sqlite3_bind_int64(statement, 1, Int64(offset + 1))
            for index in 0..<10 { sqlite3_bind_int64(statement, Int32(index + 2), object.slot(index)) }
            sqlite3_step(statement)
            sqlite3_reset(statement)
        }
    }
    var insertedIDs = Set<FloorObjectID>(minimumCapacity: inserted.count)
    for (offset, object) in inserted.enumerated() {
        let id = FloorObjectID(primaryKey: Int64(offset + 1))
        object.objectID = id
        insertedIDs.insert(id)
    }
    NotificationCenter.default.post(name: floorDidSave, object: context, userInfo: [NSInsertedObjectsKey: insertedSet])
    NotificationCenter.default.post(name: floorDidSaveIDs, object: context, userInfo: [NSInsertedObjectIDsKey: insertedIDs])
    PhaseClock.current.mark()
    return Int64(rows)
}

let floorDidChange = Notification.Name("OCDBenchFloorObjectsDidChange")
let floorDidSave = Notification.Name("OCDBenchFloorDidSave")
let floorDidSaveIDs = Notification.Name("OCDBenchFloorDidSaveObjectIDs")

/// The insert floor's two notification sets alone: the set of the new objects and the set of
/// their IDs, built and freed for objects and IDs made before the clock starts. Each insert into
/// a set of many objects retains the object right after writing a bucket the caches do not hold,
/// and the retain's atomic increment waits for that write: this part of any save of many new
/// objects costs about as much per object as SQLite's insert of its row.
func insertFloorSetsOnly(rows: Int) -> (seconds: Double, checksum: Int64) {
    let context = NSObject()
    var inserted: [FloorObject] = []
    var ids: [FloorObjectID] = []
    for pk in 1...rows {
        let object = FloorObject(context: context)
        for index in 0..<10 { object.setSlot(index, to: Int64(pk &* 31 &+ index)) }
        let id = FloorObjectID(primaryKey: Int64(pk))
        object.objectID = id
        inserted.append(object)
        ids.append(id)
    }
    let start = now()
    var insertedSet: Set<FloorObject>? = Set(inserted)
    var idSet: Set<FloorObjectID>? = Set<FloorObjectID>(minimumCapacity: ids.count)
    for id in ids { idSet!.insert(id) }
    let count = (insertedSet?.count ?? 0) + (idSet?.count ?? 0)
    insertedSet = nil
    idSet = nil
    let seconds = now() - start
    withExtendedLifetime((inserted, ids)) {}
    return (seconds, Int64(count / 2))
}
