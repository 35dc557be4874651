import Foundation

/// The on-disk cache of a fetched results controller: the ordered object IDs and their section
/// names, with what they were computed from, so a relaunch on unchanged data skips the fetch.
///
/// A cache is valid when the request's fingerprint matches and the stores have not changed since it
/// was written (for SQLite, a change counter every save and batch request bumps in `Z_METADATA`). A cache written
/// for another request under the same name is an error, as in Core Data. Tracked changes delete it.
struct FetchedResultsCache {
    let name: String

    /// Where caches live: `$XDG_CACHE_HOME/OpenCoreData/FetchedResults` (or `~/.cache/…`).
    static var directory: URL {
        let environment = ProcessInfo.processInfo.environment
        let base = environment["XDG_CACHE_HOME"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0, isDirectory: true) }
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".cache", isDirectory: true)
        return base.appendingPathComponent("OpenCoreData/FetchedResults", isDirectory: true)
    }

    var url: URL { Self.directory.appendingPathComponent(name.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? name).appendingPathExtension("plist") }

    /// What identifies the results: the request and the section key path.
    static func fingerprint(_ request: NSFetchRequest<NSFetchRequestResult>, sectionNameKeyPath: String?) -> String {
        [
            request.entityName ?? "", request.predicate?.predicateFormat ?? "",
            (request.sortDescriptors ?? []).map(\.description).joined(separator: ","),
            sectionNameKeyPath ?? "", "\(request.fetchLimit)", "\(request.fetchOffset)", "\(request.includesSubentities)",
        ].joined(separator: "|")
    }

    /// A token that changes whenever a store's content changes.
    static func storeToken(_ stores: [NSPersistentStore]) -> String {
        stores.map { $0.changeToken() }.joined(separator: "|")
    }

    /// The cached results, or nil when there is none or it is stale; throws when the name was used
    /// for another request.
    func load(fingerprint: String, token: String, model: NSManagedObjectModel, stores: [NSPersistentStore]) throws -> (ids: [NSManagedObjectID], names: [String])? {
        guard let data = FileManager.default.contents(atPath: url.path),
              let plist = try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any] else { return nil }
        guard plist["fingerprint"] as? String == fingerprint else {
            throw CoreDataError.make(.coreData, "The cache '\(name)' was written for another fetch request: a controller's request, predicate or sort descriptors changed under the same cache name. Call NSFetchedResultsController.deleteCache(withName:) first, or use another name.",
                                     userInfo: ["cacheName": name])
        }
        guard plist["token"] as? String == token, let entities = plist["entities"] as? [String], let rows = plist["rows"] as? [[Any]],
              let names = plist["names"] as? [String], names.count == rows.count else { return nil }
        let byName = model.entitiesByName
        var ids: [NSManagedObjectID] = []
        ids.reserveCapacity(rows.count)
        for row in rows {
            guard row.count == 3, let entityIndex = (row[0] as? NSNumber)?.intValue, entities.indices.contains(entityIndex),
                  let entity = byName[entities[entityIndex]], let pk = (row[1] as? NSNumber)?.int64Value,
                  let storeIndex = (row[2] as? NSNumber)?.intValue, stores.indices.contains(storeIndex) else { return nil }
            ids.append(stores[storeIndex].objectID(for: entity, primaryKey: pk))
        }
        return (ids, names)
    }

    /// Writes the results; objects with temporary IDs make the results uncacheable.
    func save(objects: [NSManagedObject], names: [String], fingerprint: String, token: String, stores: [NSPersistentStore]) {
        guard objects.allSatisfy({ !$0.objectID.isTemporaryID }) else { return }
        var entities: [String] = []
        var entityIndex: [String: Int] = [:]
        let storeIndex = Dictionary(stores.enumerated().map { ($0.element.identifier ?? "", $0.offset) }, uniquingKeysWith: { first, _ in first })
        var rows: [[Any]] = []
        rows.reserveCapacity(objects.count)
        for object in objects {
            let entityName = object.entity.name ?? ""
            let index = entityIndex[entityName] ?? {
                entities.append(entityName)
                entityIndex[entityName] = entities.count - 1
                return entities.count - 1
            }()
            rows.append([index, object.objectID.primaryKey, storeIndex[object.objectID.storeIdentifier ?? ""] ?? 0])
        }
        let plist: [String: Any] = ["fingerprint": fingerprint, "token": token, "entities": entities, "rows": rows, "names": names]
        guard let data = try? PropertyListSerialization.data(fromPropertyList: plist, format: .binary, options: 0) else { return }
        try? FileManager.default.createDirectory(at: Self.directory, withIntermediateDirectories: true)
        try? data.write(to: url, options: .atomic)
    }

    /// Removes the cache file.
    func delete() {
        try? FileManager.default.removeItem(at: url)
    }
}
