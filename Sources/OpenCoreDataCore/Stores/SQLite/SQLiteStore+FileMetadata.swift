import Foundation
import GRDB

extension SQLiteStore {
    /// `Z_METADATA.Z_PLIST` for a store's metadata: a binary property list of everything but the
    /// UUID, which Apple's stores keep in `Z_UUID` only.
    static func metadataPropertyList(_ metadata: [String: Any]) throws -> Data {
        var stored = metadata
        stored.removeValue(forKey: NSStoreUUIDKey)
        return try PropertyListSerialization.data(fromPropertyList: stored, format: .binary, options: 0)
    }

    /// Replaces the metadata of a SQLite store file without adding it to a coordinator. The store's
    /// identifier is kept unless the new metadata names one. Other coordinators that have the file
    /// open keep their own copy and write it back at their next save.
    static func writeMetadata(_ newMetadata: [String: Any], at url: URL) throws {
        let current = try readMetadata(at: url)
        var metadata = newMetadata
        metadata[NSStoreUUIDKey] = newMetadata[NSStoreUUIDKey] ?? current[NSStoreUUIDKey]
        metadata[NSStoreTypeKey] = NSSQLiteStoreType
        let plist: Data
        do {
            plist = try metadataPropertyList(metadata)
        } catch {
            throw CoreDataError.make(.coreData, "The metadata for \(url.path) can't be stored: every value must be a property-list value (\(error)).", url: url)
        }
        var configuration = Configuration()
        configuration.busyMode = .timeout(StoreOptions.defaultLockTimeout)
        do {
            let database = try DatabaseQueue(path: url.path, configuration: configuration)
            defer { try? database.close() } // Ignored: the transaction has committed or thrown; only closing is left.
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
