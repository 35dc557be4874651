import Foundation
import OpenCoreData
import OpenCoreDataTestKit

/// The worker's cases for the hostile-environment tests: each opens a store the test prepared and
/// reports, one `say` line per step, what succeeded and which Core Data error codes came back.
///
/// - `read-only-directory <store> <type>`: the store and its directory can't be written (as root,
///   the process first becomes `nobody`, since root ignores permission bits). Opens the store
///   for writing ("open …"), then with `NSReadOnlyPersistentStoreOption` ("read-only-open ok
///   <batches>"), and tries to save a batch ("read-only-save …", "pending <objects>").
/// - `full-disk <store> <type> once|retry [small-disk]`: saves a batch of about 2 MB with the file
///   size limit (`RLIMIT_FSIZE`) just above what the store's files hold, so that the write fails
///   part-way as on a full disk ("save …", "pending <objects> temporary <yes|no>"); with `retry`,
///   lifts the limit and saves the same context again ("retry …"). With `small-disk` there is no
///   limit: the store is on a file system too small for the batch.
enum HostileEnvironment {
    case readOnlyDirectory(URL, String)
    case fullDisk(URL, String, retry: Bool, limited: Bool)

    init?(arguments: [String]) {
        let store = URL(fileURLWithPath: arguments[1])
        let type = arguments[2] == "binary" ? NSBinaryStoreType : NSSQLiteStoreType
        switch arguments[0] {
        case "read-only-directory": self = .readOnlyDirectory(store, type)
        case "full-disk" where arguments.count >= 4:
            self = .fullDisk(store, type, retry: arguments[3] == "retry", limited: arguments.count < 5 || arguments[4] != "small-disk")
        default: return nil
        }
    }

    func run() {
        switch self {
        case .readOnlyDirectory(let store, let type): Self.openInReadOnlyDirectory(store, type)
        case .fullDisk(let store, let type, let retry, let limited): Self.saveOnFullDisk(store, type, retry: retry, limited: limited)
        }
    }

    /// "ok", or "error <code>" with the SQLite code when there is one.
    static func outcome(_ body: () throws -> Void) -> String {
        do {
            try body()
            return "ok"
        } catch {
            let error = error as NSError
            let sqlite = (error.userInfo[NSSQLiteErrorDomain] as? Int).map { " sqlite \($0)" } ?? ""
            let domain = error.domain == NSCocoaErrorDomain ? "" : " domain \(error.domain)"
            return "error \(error.code)\(sqlite)\(domain)"
        }
    }

    static func makeContext(_ coordinator: NSPersistentStoreCoordinator) -> NSManagedObjectContext {
        let context = NSManagedObjectContext(concurrencyType: .mainQueueConcurrencyType)
        context.persistentStoreCoordinator = coordinator
        return context
    }

    static func openInReadOnlyDirectory(_ store: URL, _ type: String) {
        if geteuid() == 0 {
            // nobody and nogroup: root would write anyway.
            guard setgroups(0, nil) == 0, setgid(65534) == 0, setuid(65534) == 0 else { fail("can't stop being root") }
        }
        say("user \(geteuid())")
        let writable = NSPersistentStoreCoordinator(managedObjectModel: BatchModel.make())
        say("open " + outcome {
            _ = try writable.addPersistentStore(ofType: type, configurationName: nil, at: store, options: nil)
        })
        let readOnly = NSPersistentStoreCoordinator(managedObjectModel: BatchModel.make())
        var batches = 0
        let opened = outcome {
            _ = try readOnly.addPersistentStore(ofType: type, configurationName: nil, at: store, options: [NSReadOnlyPersistentStoreOption: true])
            batches = try makeContext(readOnly).count(for: NSFetchRequest<NSManagedObject>(entityName: "Batch"))
        }
        say("read-only-open \(opened) \(batches)")
        guard opened == "ok" else { return }
        let context = makeContext(readOnly)
        BatchModel.insertBatch(99, tag: "read-only", into: context)
        say("read-only-save " + outcome { try context.save() })
        say("pending \(context.insertedObjects.count)")
        for store in readOnly.persistentStores { try? readOnly.remove(store) }
    }

    static func saveOnFullDisk(_ store: URL, _ type: String, retry: Bool, limited: Bool) {
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: BatchModel.make())
        do {
            _ = try coordinator.addPersistentStore(ofType: type, configurationName: nil, at: store, options: nil)
        } catch {
            fail("opening: \(error)")
        }
        let context = makeContext(coordinator)
        BatchModel.insertBatch(1000, tag: String(repeating: "full disk ", count: 200_000), into: context)
        signal(SIGXFSZ, SIG_IGN)
        let unlimited = FileSizeLimit.current
        // Strictly inside a page of the write-ahead log (32-byte header, 24 + 4096 bytes a frame), or
        // just past the old binary file: the write stops part-way, as it does on a full disk.
        let limit = type == NSSQLiteStoreType ? FileSizeLimit.size(of: store.path + "-wal") + 32 + 4 * 4120 + 24 + 2048
                                              : FileSizeLimit.size(of: store.path) + 1000
        if limited { FileSizeLimit.set(limit) }
        say("save " + outcome { try context.save() })
        if limited { FileSizeLimit.set(unlimited) }
        let temporary = context.insertedObjects.allSatisfy(\.objectID.isTemporaryID)
        say("pending \(context.insertedObjects.count) temporary \(temporary ? "yes" : "no")")
        if retry { say("retry " + outcome { try context.save() }) }
        for store in coordinator.persistentStores { try? coordinator.remove(store) }
    }
}

/// The soft limit on the size of files this process writes (`RLIMIT_FSIZE`).
enum FileSizeLimit {
    #if os(Linux)
    static let resource = __rlimit_resource_t(RLIMIT_FSIZE.rawValue)
    #else
    static let resource = RLIMIT_FSIZE
    #endif

    static var current: UInt64 {
        var limit = rlimit()
        getrlimit(resource, &limit)
        return UInt64(limit.rlim_cur)
    }

    static func set(_ bytes: UInt64) {
        var limit = rlimit()
        getrlimit(resource, &limit)
        limit.rlim_cur = rlim_t(bytes)
        guard setrlimit(resource, &limit) == 0 else { fail("setrlimit: \(errno)") }
    }

    static func size(of path: String) -> UInt64 {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.uint64Value ?? 0
    }
}
