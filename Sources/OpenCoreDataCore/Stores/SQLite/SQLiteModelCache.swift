import Foundation
import GRDB

/// The model a SQLite store keeps of itself in `Z_MODELCACHE`, as Core Data does since framework
/// version 637: one row whose `Z_CONTENT` is the compiled model (a keyed archive, the format of a
/// `.mom`) compressed as raw DEFLATE.
///
/// Core Data reads it to infer a lightweight migration when the app no longer ships the model
/// version that wrote the store; OpenCoreData does the same, and also opens stores without any
/// model file (`NSManagedObjectModel.cachedModel(ofStoreAt:)`, `ocd` without `--model`).
enum SQLiteModelCache {
    /// The model cached in an open database; nil when there is no cache.
    static func read(_ db: Database, url: URL) throws -> NSManagedObjectModel? {
        guard try db.tableExists("Z_MODELCACHE"), let blob = try Data.fetchOne(db, sql: "SELECT Z_CONTENT FROM Z_MODELCACHE LIMIT 1") else {
            return nil
        }
        return try CompiledModelLoader.decode(Array(blob), compressed: true, file: url)
    }

    /// Replaces the cached model with `model` (the table is made if missing). A model holding an
    /// expression a model file can't hold (a subquery or block in a fetch request template) is
    /// left uncached, with a warning: the cache only serves migrations without the model.
    static func write(_ model: NSManagedObjectModel, _ db: Database) throws {
        let archive: [UInt8]
        do {
            archive = try CompiledModelEncoder.archive(model, as: .storeCache)
        } catch {
            CoreDataLog.logger.warning("The store keeps no copy of its model: \(error)")
            return
        }
        try db.execute(sql: "CREATE TABLE IF NOT EXISTS Z_MODELCACHE (Z_CONTENT BLOB)")
        try db.execute(sql: "DELETE FROM Z_MODELCACHE")
        try db.execute(sql: "INSERT INTO Z_MODELCACHE (Z_CONTENT) VALUES (?)", arguments: [Data(RawDeflate.deflateStored(archive))])
    }

    /// The model cached in the store file at `url` (read-only; the file is left as it was).
    static func read(at url: URL) throws -> NSManagedObjectModel? {
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw CoreDataError.make(.fileReadNoSuchFile, "No store at \(url.path).", url: url)
        }
        return try SQLiteStore.inspect(url) { db in try read(db, url: url) }
    }
}

extension NSManagedObjectModel {
    /// OpenCoreData: the model a Core Data SQLite store keeps of itself (its `Z_MODELCACHE`,
    /// written by Core Data since framework version 637, iOS 11 and macOS 10.13), so that a store
    /// copied off a device opens without the app's model. The file is only read.
    ///
    /// Throws 134130 (`NSMigrationMissingSourceModelError`) when the store keeps no model, 259 when
    /// the cache is damaged, and the usual store errors when the file is not a SQLite store.
    public static func cachedModel(ofStoreAt url: URL) throws -> NSManagedObjectModel {
        guard let model = try SQLiteModelCache.read(at: url) else {
            throw CoreDataError.make(.migrationMissingSourceModel,
                "The store at \(url.path) keeps no model of its own (Core Data writes one since framework version 637); open it with its model.", url: url)
        }
        return model
    }
}

extension NSPersistentStoreCoordinator {
    /// The model a Core Data SQLite store keeps of itself: `NSManagedObjectModel.cachedModel(ofStoreAt:)`
    /// under Apple's name. The options are not needed to read it and are ignored.
    public class func cachedModelForPersistentStore(at url: URL, options: [AnyHashable: Any]? = nil) throws -> NSManagedObjectModel {
        try NSManagedObjectModel.cachedModel(ofStoreAt: url)
    }
}
