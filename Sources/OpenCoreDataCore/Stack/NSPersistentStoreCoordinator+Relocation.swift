import Foundation

extension NSPersistentStoreCoordinator {
    /// Moves a store's objects into a new store at `url`, of `storeType` (the same type or
    /// another: a SQLite store saved as a binary one, say), and puts the new store in the old one's
    /// place: the old store is removed from the coordinator, and its file left as it was.
    ///
    /// Every object of the old store is copied with its attributes and relationships. The new
    /// store has its own identifier, so objects get new IDs: objects fetched from the old store
    /// can't be used afterwards; fetch them again. It takes the old store's configuration, and the
    /// old store's metadata keys that its own metadata lacks (your keys; not the identifier, type
    /// or version hashes). A file already at `url` is never overwritten: that is an error, as is a
    /// store that isn't this coordinator's. On any error the coordinator keeps the old store and
    /// nothing is left at `url`.
    @discardableResult
    public func migratePersistentStore(_ store: NSPersistentStore, to url: URL, options: [AnyHashable: Any]? = nil,
                                       withType storeType: String) throws -> NSPersistentStore {
        guard persistentStores.contains(where: { $0 === store }) else {
            throw CoreDataError.make(.operationFailed, "The store to migrate isn't one of this coordinator's stores.")
        }
        guard NSPersistentStoreCoordinator.storeTypes.contains(storeType) else { throw NSPersistentStoreCoordinator.unknownStoreType(storeType) }
        if storeType != NSInMemoryStoreType {
            guard url.isFileURL else { throw CoreDataError.make(.invalidType, "A \(storeType) store needs a file URL.", url: url) }
            guard !FileManager.default.fileExists(atPath: url.path) else {
                throw CoreDataError.make(.operationFailed, "A file is already at \(url.path): migratePersistentStore doesn't overwrite it. Destroy it first (destroyPersistentStore(at:ofType:options:)).", url: url)
            }
        }
        let copier = NSMigrationManager(sourceModel: managedObjectModel, destinationModel: managedObjectModel)
        let copied = try copier.copyStore(store, of: self, to: url, type: storeType, options: options)
        let newStore: NSPersistentStore
        do {
            if let copied {
                try attach(copied)
                postStoresDidChange(added: [copied])
                newStore = copied
            } else {
                newStore = try addPersistentStore(ofType: storeType, configurationName: store.configurationName, at: url, options: options)
            }
        } catch {
            if storeType != NSInMemoryStoreType { StoreFiles.remove(at: url) }
            throw error
        }
        try remove(store)
        return newStore
    }

    /// Moves a store's objects into a new store, with the newer store-type spelling (see
    /// `migratePersistentStore(_:to:options:withType:)`).
    @discardableResult
    public func migratePersistentStore(_ store: NSPersistentStore, to url: URL, options: [AnyHashable: Any]? = nil,
                                       type storeType: NSPersistentStore.StoreType) throws -> NSPersistentStore {
        try migratePersistentStore(store, to: url, options: options, withType: storeType.rawValue)
    }

    /// Changes where one of the coordinator's stores lives; false, with nothing changed, when it
    /// can't.
    ///
    /// A binary or in-memory store writes its next save to `url` (the file at its old place stays
    /// as it was). A SQLite store closes its connection and opens the store that must already be at
    /// `url` (a copy of it, say; none is created): false when there is none, it isn't a store the
    /// model can open, or another store of the coordinator is there. Objects and IDs from before
    /// belong to the old file; fetch again.
    @discardableResult
    public func setURL(_ url: URL, for store: NSPersistentStore) -> Bool {
        withLock {
            guard stores.contains(where: { $0 === store }),
                  !stores.contains(where: { $0 !== store && $0.url?.standardizedFileURL == url.standardizedFileURL }) else { return false }
            guard store.type == NSSQLiteStoreType else {
                store.url = url
                return true
            }
            guard FileManager.default.fileExists(atPath: url.path), let oldURL = store.url else { return false }
            func reopen(at location: URL) throws {
                store.url = location
                try store.load()
                PersistentStoreRegistry.register(store)
                try store.didAttach(to: self)
            }
            store.close()
            do {
                try reopen(at: url)
                return true
            } catch {
                store.close()
                do {
                    try reopen(at: oldURL)
                } catch {
                    CoreDataLog.logger.error("The store could not be opened again at \(oldURL.path) and is left closed: \(error)")
                }
                return false
            }
        }
    }
}
