import Foundation

/// Reading and writing a store file's metadata without adding the store.
extension NSPersistentStoreCoordinator {
    /// The metadata of a store file, without adding it (Apple's newer store-type spelling).
    public class func metadataForPersistentStore(type: NSPersistentStore.StoreType, at url: URL, options: [AnyHashable: Any]? = nil) throws -> [String: Any] {
        try metadataForPersistentStore(ofType: type.rawValue, at: url, options: options)
    }

    /// Replaces the metadata of a store file without adding it. Keys the framework maintains
    /// (`NSStoreUUID`, `NSStoreType`) are kept; every value must be a property-list value.
    public class func setMetadata(_ metadata: [String: Any]?, forPersistentStoreOfType storeType: String, at url: URL, options: [AnyHashable: Any]? = nil) throws {
        switch storeType {
        case NSSQLiteStoreType: try SQLiteStore.writeMetadata(metadata ?? [:], at: url)
        case NSBinaryStoreType: try AtomicStore.writeMetadata(metadata ?? [:], at: url)
        default:
            guard let storeClass = registeredStoreClass(forType: storeType), storeClass.readsOwnMetadata else {
                throw CoreDataError.make(.invalidType, "Unknown store type '\(storeType)'.")
            }
            try storeClass.setMetadata(metadata, forPersistentStoreAt: url)
        }
    }

    /// Replaces the metadata of a store file without adding it (Apple's newer store-type spelling).
    public class func setMetadata(_ metadata: [String: Any]?, type: NSPersistentStore.StoreType, at url: URL, options: [AnyHashable: Any]? = nil) throws {
        try setMetadata(metadata, forPersistentStoreOfType: type.rawValue, at: url, options: options)
    }

    /// The metadata of a store file of either file type, found from the file's content (Apple's
    /// oldest spelling).
    public class func metadataForPersistentStore(with url: URL) throws -> [AnyHashable: Any] {
        try metadataForPersistentStore(ofType: try storeType(ofFileAt: url), at: url)
    }

    /// The type of the store file at a URL: SQLite when it starts with SQLite's header, binary otherwise.
    static func storeType(ofFileAt url: URL) throws -> String {
        try StoreFiles.header(of: url, count: 16) == SQLiteStore.sqliteHeader ? NSSQLiteStoreType : NSBinaryStoreType
    }
}

extension NSPersistentStore {
    /// Whether the class reads and writes its files' metadata itself (an `NSAtomicStore`
    /// subclass, through `metadataForPersistentStore(with:)` and `setMetadata(_:forPersistentStoreAt:)`).
    static var readsOwnMetadata: Bool { self is NSAtomicStore.Type }
}
