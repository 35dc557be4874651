import ArgumentParser
import Foundation
import OpenCoreData
import OpenCoreDataPostgreSQL

/// `ocd info <store>`: a store's type, UUID, metadata and entities with their row counts, read
/// without changing the file.
struct InfoCommand: InspectorCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Show a store's type, UUID, metadata, entities and row counts.",
        discussion: """
            Without --model the entities and row counts come from the store's own tables \
            (Z_PRIMARYKEY and Z<ENTITY>), so any Core Data SQLite store can be inspected, \
            including one copied from an Apple device. The store is opened read-only. \
            A PostgreSQL store is named by its URL (postgres://user:password@host/database?schema=name).
            """
    )

    @Argument(help: "The store file, or a PostgreSQL store's postgres:// URL.")
    var store: String

    @Option(help: "A model to count objects with (.xcdatamodeld, .xcdatamodel or contents).")
    var model: String?

    @Flag(help: "Print JSON instead of text.")
    var json = false

    func execute(on console: Console) throws {
        let summary = try summarize()
        console.write(json ? summary.json.prettyPrinted() + "\n" : summary.text)
    }

    private func summarize() throws -> StoreSummary {
        if ServerStoreTables.isServerURL(store) { return try summarizeServerStore() }
        let url = URL(fileURLWithPath: store)
        guard FileManager.default.fileExists(atPath: url.path) else { throw InspectorError.noSuchFile(url, what: "store") }
        let type = StoreFileType.detect(url)
        let metadata = try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: type, at: url)
        let size = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int) ?? 0
        let journal = type == NSSQLiteStoreType ? Self.journalMode(url) : nil
        if let model {
            let modelURL = URL(fileURLWithPath: model)
            let loaded = try ModelFile.load(modelURL)
            let changed = Self.entitiesWithDifferentHashes(loaded, metadata)
            let lines = try countObjects(url, model: loaded)
            return StoreSummary(path: url.path, type: type, fileSize: size, journal: journal, metadata: metadata,
                                modelPath: modelURL.path, changedEntities: changed, entities: lines)
        }
        guard type == NSSQLiteStoreType else {
            throw InspectorError("a \(type) store records no entity list of its own: give --model to count its objects")
        }
        let lines = try StoreTables.read(url).map { entity in
            StoreSummary.EntityLine(name: entity.name, parent: entity.parent, number: entity.number, table: entity.table,
                                    rows: entity.rows, maxPrimaryKey: entity.maxPrimaryKey)
        }
        var summary = StoreSummary(path: url.path, type: type, fileSize: size, journal: journal, metadata: metadata,
                                   modelPath: nil, changedEntities: [], entities: lines)
        summary.modelCache = Self.describeModelCache(url, metadata: metadata)
        return summary
    }

    /// A PostgreSQL store: its tables as they are, or with `--model`, whether the model's version
    /// hashes match (objects are counted through a stack only when they do).
    private func summarizeServerStore() throws -> StoreSummary {
        let reading = try ServerStoreTables.read(store)
        guard let model else {
            let lines = reading.entities.map { entity in
                StoreSummary.EntityLine(name: entity.name, parent: entity.parent, number: entity.number, table: entity.table,
                                        rows: entity.rows, maxPrimaryKey: entity.maxPrimaryKey)
            }
            return StoreSummary(path: reading.location, type: NSPostgreSQLStoreType, fileSize: reading.size, journal: nil,
                                metadata: reading.metadata, modelPath: nil, changedEntities: [], entities: lines)
        }
        let modelURL = URL(fileURLWithPath: model)
        let loaded = try ModelFile.load(modelURL)
        let changed = Self.entitiesWithDifferentHashes(loaded, reading.metadata)
        var counts: [String: Int] = [:]
        if changed.isEmpty, let url = URL(string: store) {
            let coordinator = NSPersistentStoreCoordinator(managedObjectModel: loaded)
            try coordinator.addPersistentStore(ofType: NSPostgreSQLStoreType, configurationName: nil, at: url, options: nil)
            let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
            context.persistentStoreCoordinator = coordinator
            for entity in loaded.entities {
                let name = entity.name ?? ""
                counts[name] = try context.performAndWait { try context.count(for: NSFetchRequest<NSFetchRequestResult>(entityName: name)) }
            }
        }
        let lines = loaded.entities.sorted { ($0.name ?? "") < ($1.name ?? "") }.map { entity in
            StoreSummary.EntityLine(name: entity.name ?? "?", parent: entity.superentity?.name, number: nil, table: nil,
                                    rows: counts[entity.name ?? ""], maxPrimaryKey: nil)
        }
        return StoreSummary(path: reading.location, type: NSPostgreSQLStoreType, fileSize: reading.size, journal: nil, metadata: reading.metadata,
                            modelPath: modelURL.path, changedEntities: changed, entities: lines)
    }

    /// The entities whose version hash in the model differs from the store's metadata, then those
    /// the store records and the model lacks.
    static func entitiesWithDifferentHashes(_ model: NSManagedObjectModel, _ metadata: [String: Any]) -> [String] {
        let storeHashes = metadata[NSStoreModelVersionHashesKey] as? [String: Data] ?? [:]
        return model.entities.filter { storeHashes[$0.name ?? ""] != $0.versionHash }.compactMap(\.name).sorted()
            + Set(storeHashes.keys).subtracting(model.entities.compactMap(\.name)).sorted()
    }

    /// The model the store keeps of itself, in a few words: its entities and whether it is the
    /// model the metadata records; "none" without one, or why it can't be read.
    static func describeModelCache(_ url: URL, metadata: [String: Any]) -> String {
        do {
            let cached = try NSManagedObjectModel.cachedModel(ofStoreAt: url)
            let matches = cached.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata)
            return "\(cached.entities.count) entities, \(matches ? "the model the store was written with" : "a model other than the one the hashes record")"
        } catch let error as NSError where error.code == NSMigrationMissingSourceModelError {
            return "none (give --model to fetch or export)"
        } catch {
            return "unreadable: \(error.localizedDescription)"
        }
    }

    /// Counts each entity's objects (subentities included) through a read-only stack.
    private func countObjects(_ url: URL, model: NSManagedObjectModel) throws -> [StoreSummary.EntityLine] {
        let stack = try StoreStack.openReadOnly(url, model: model)
        defer { stack.close() }
        return try stack.context.performAndWait {
            try model.entities.sorted { ($0.name ?? "") < ($1.name ?? "") }.map { entity in
                let request = NSFetchRequest<NSFetchRequestResult>(entityName: entity.name ?? "")
                return StoreSummary.EntityLine(name: entity.name ?? "?", parent: entity.superentity?.name, number: nil, table: nil,
                                               rows: try stack.context.count(for: request), maxPrimaryKey: nil)
            }
        }
    }

    /// The journal mode recorded in the SQLite header (bytes 18 and 19 are 2 in WAL mode).
    private static func journalMode(_ url: URL) -> String? {
        guard let header = try? StoreFiles.header(of: url, count: 20), header.count == 20 else { return nil }
        return header[18] == 2 ? "wal" : "rollback"
    }
}
