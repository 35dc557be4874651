import Foundation
import GRDB

extension SQLiteStore {
    /// Replaces the metadata of a SQLite store file without adding it to a coordinator. The store's
    /// identifier is kept unless the new metadata names one. Other coordinators that have the file
    /// open keep their own copy and write it back at their next save.
    static func writeMetadata(_ newMetadata: [String: Any], at url: URL) throws {
        let current = try readMetadata(at: url)
        var metadata = newMetadata
        metadata[NSStoreUUIDKey] = newMetadata[NSStoreUUIDKey] ?? current[NSStoreUUIDKey]
        metadata[NSStoreTypeKey] = NSSQLiteStoreType
        var stored = metadata
        stored.removeValue(forKey: NSStoreUUIDKey)
        let plist: Data
        do {
            plist = try PropertyListSerialization.data(fromPropertyList: stored, format: .binary, options: 0)
        } catch {
            throw CoreDataError.make(.coreData, "The metadata for \(url.path) can't be stored: every value must be a property-list value (\(error)).", url: url)
        }
        var configuration = Configuration()
        configuration.busyMode = .timeout(StoreOptions.defaultLockTimeout)
        do {
            let database = try DatabaseQueue(path: url.path, configuration: configuration)
            defer { try? database.close() }
            try database.inTransaction(.immediate) { db in
                try db.execute(sql: "INSERT OR REPLACE INTO Z_METADATA (Z_VERSION, Z_UUID, Z_PLIST) VALUES (1, ?, ?)",
                               arguments: [metadata[NSStoreUUIDKey] as? String, plist])
                return .commit
            }
        } catch {
            throw translate(error, url: url, during: .saving)
        }
    }
}
