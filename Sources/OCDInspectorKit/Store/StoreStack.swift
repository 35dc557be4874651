import Foundation
import OpenCoreData

/// A coordinator with one store and a private-queue context, as the `ocd` commands that need a
/// model use it. Read-only stacks leave the file and its folder exactly as they were.
final class StoreStack {
    /// The store's file.
    let url: URL
    /// The coordinator holding the store.
    let coordinator: NSPersistentStoreCoordinator
    /// The added store.
    let store: NSPersistentStore
    /// A private-queue context on the coordinator.
    let context: NSManagedObjectContext
    private let sideFiles: SideFiles
    private var isClosed = false

    private init(url: URL, coordinator: NSPersistentStoreCoordinator, store: NSPersistentStore, sideFiles: SideFiles) {
        self.url = url
        self.coordinator = coordinator
        self.store = store
        self.sideFiles = sideFiles
        context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        context.persistentStoreCoordinator = coordinator
    }

    deinit { close() }

    /// Opens an existing store read-only: a missing file is error 260, a file that is not a
    /// store 134000, a model that does not fit the store 134100. With `readsHistory`, the store's
    /// persistent history can be fetched (the store must have its tables).
    static func openReadOnly(_ url: URL, model: NSManagedObjectModel, readsHistory: Bool = false) throws -> StoreStack {
        guard FileManager.default.fileExists(atPath: url.path) else { throw InspectorError.noSuchFile(url, what: "store") }
        var options: [AnyHashable: Any] = [NSReadOnlyPersistentStoreOption: true]
        if readsHistory { options[NSPersistentHistoryTrackingKey] = true as NSNumber }
        return try open(url, type: StoreFileType.detect(url), model: model, options: options)
    }

    /// Opens a store for writing, creating a SQLite store when there is no file.
    static func openForWriting(_ url: URL, model: NSManagedObjectModel) throws -> StoreStack {
        let exists = FileManager.default.fileExists(atPath: url.path)
        return try open(url, type: exists ? StoreFileType.detect(url) : NSSQLiteStoreType, model: model, options: [:])
    }

    private static func open(_ url: URL, type: String, model: NSManagedObjectModel, options: [AnyHashable: Any]) throws -> StoreStack {
        let sideFiles = SideFiles(of: url)
        // `ocd` never has the app's classes: plain managed objects, without a warning for each.
        for entity in model.entities where entity.managedObjectClassName != "NSManagedObject" {
            entity.managedObjectClassName = "NSManagedObject"
        }
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        do {
            let store = try coordinator.addPersistentStore(ofType: type, configurationName: nil, at: url, options: options)
            return StoreStack(url: url, coordinator: coordinator, store: store, sideFiles: sideFiles)
        } catch {
            sideFiles.removeCreated()
            throw error
        }
    }

    /// The entity named `name`, or an error listing the model's entities.
    func entity(named name: String) throws -> NSEntityDescription {
        try ModelFile.entity(named: name, in: coordinator.managedObjectModel)
    }

    /// Closes the store and removes side files that opening it created (for read-only stacks;
    /// a writable SQLite store checkpoints and removes its own).
    func close() {
        guard !isClosed else { return }
        isClosed = true
        context.performAndWait { context.reset() }
        try? coordinator.remove(store)
        sideFiles.removeCreated()
    }
}

/// Tells a store file's type from its first bytes.
enum StoreFileType {
    private static let sqliteHeader = Array("SQLite format 3\0".utf8)

    /// `NSSQLiteStoreType` for a SQLite file, `NSBinaryStoreType` for a binary store; otherwise the
    /// SQLite type, so that opening it reports Core Data's "not a store of this type" (134000).
    static func detect(_ url: URL) -> String {
        if isSQLite(url) { return NSSQLiteStoreType }
        if (try? NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: NSBinaryStoreType, at: url)) != nil { return NSBinaryStoreType }
        return NSSQLiteStoreType
    }

    /// Whether the file starts with SQLite's header.
    static func isSQLite(_ url: URL) -> Bool {
        (try? StoreFiles.header(of: url, count: 16)) == sqliteHeader
    }
}
