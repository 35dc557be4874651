import Foundation

/// Core Data's rule for whether a model can open a store, from the store's metadata alone.
///
/// - `NSStoreModelVersionHashesVersion` above 3, or no recorded hashes: incompatible.
/// - A different number of entities: incompatible.
/// - Hashes version 3 (every Core Data since 10.5 writes it): every entity's hash must equal the
///   recorded one.
/// - Below 3: only the entity names are compared, as the old hashes are not reproducible.
///
/// Stores written by OpenCoreData before it recorded Apple's hashes (`OpenCoreDataStoreVersion`
/// 1 in their metadata) are compared with `LegacyVersionHasher`'s hashes; opening such a store
/// records Apple's.
enum StoreModelMatching {
    /// The metadata key with which stores written by OpenCoreData record the version of its format.
    static let markerKey = "OpenCoreDataStoreVersion"
    /// The marker value of stores that record Apple's version hashes.
    static let currentMarker = 2
    /// The version of the hash recipe recorded in new stores.
    static let hashesVersion = 3

    /// Whether the entities (a configuration's) are those the store metadata records.
    static func isCompatible(_ entities: [NSEntityDescription], with metadata: [String: Any]) -> Bool {
        changedEntities(entities, against: metadata).isEmpty
    }

    /// The entity names that differ between the entities and the store metadata (changed, added or
    /// removed); empty when compatible. `["(no version hashes)"]` or a similar note when the
    /// metadata can't be compared at all.
    static func changedEntities(_ entities: [NSEntityDescription], against metadata: [String: Any]) -> [String] {
        let version = integer(NSStoreModelVersionHashesVersionKey, in: metadata) ?? hashesVersion
        if version > hashesVersion { return ["(version hashes of a newer kind, \(version))"] }
        guard let recorded = recordedHashes(metadata) else { return ["(no version hashes)"] }
        var names = Set<String>()
        var changed = Set<String>()
        let legacy = isLegacy(metadata)
        for entity in entities {
            guard let name = entity.name else { continue }
            names.insert(name)
            guard let stored = recorded[name] else { changed.insert(name); continue }
            if version == hashesVersion {
                let hash = legacy ? LegacyVersionHasher.hash(of: entity) : VersionHasher.hash(of: entity)
                if hash != stored { changed.insert(name) }
            }
        }
        changed.formUnion(Set(recorded.keys).subtracting(names))
        return changed.sorted()
    }

    /// The entity hashes a store's metadata records, whether the dictionary came from Swift or
    /// from a property list (whose dictionaries arrive keyed by `AnyHashable` on Linux).
    static func recordedHashes(_ metadata: [String: Any]) -> [String: Data]? {
        let value = metadata[NSStoreModelVersionHashesKey]
        if let hashes = value as? [String: Data] { return hashes }
        guard let untyped = value as? [AnyHashable: Any] else { return nil }
        var hashes: [String: Data] = [:]
        for (key, hash) in untyped {
            guard let name = key.base as? String, let data = hash as? Data else { return nil }
            hashes[name] = data
        }
        return hashes
    }

    /// Metadata read from a file, with the recorded hashes typed as `[String: Data]` as
    /// programs cast them.
    static func typed(_ metadata: [String: Any]) -> [String: Any] {
        guard metadata[NSStoreModelVersionHashesKey] != nil, let hashes = recordedHashes(metadata) else { return metadata }
        var typed = metadata
        typed[NSStoreModelVersionHashesKey] = hashes
        return typed
    }

    /// The metadata as compared: binary stores are OpenCoreData's own format, and those without a
    /// marker predate Apple's hashes.
    static func normalized(_ metadata: [String: Any], storeType: String) -> [String: Any] {
        guard storeType == NSBinaryStoreType, metadata[markerKey] == nil else { return metadata }
        var normalized = metadata
        normalized[markerKey] = 1
        return normalized
    }

    /// Whether the store was written by OpenCoreData before it recorded Apple's hashes.
    static func isLegacy(_ metadata: [String: Any]) -> Bool {
        integer(markerKey, in: metadata) == 1
    }

    /// Whether Core Data would compare only entity names for this store (hashes version below 3).
    static func comparesNamesOnly(_ metadata: [String: Any]) -> Bool {
        (integer(NSStoreModelVersionHashesVersionKey, in: metadata) ?? hashesVersion) < hashesVersion
    }

    /// An integer metadata value, whether a Swift `Int` or a property list's `NSNumber`.
    private static func integer(_ key: String, in metadata: [String: Any]) -> Int? {
        (metadata[key] as? Int) ?? (metadata[key] as? NSNumber)?.intValue
    }

    /// The metadata keys that record a model: its hashes, their digest and checksum, version
    /// identifiers, the hash recipe's version and the framework version whose format is written.
    static func modelKeys(for entities: [NSEntityDescription], versionIdentifiers: Set<AnyHashable>) -> [String: Any] {
        let hashes = Dictionary(entities.compactMap { entity in entity.name.map { ($0, VersionHasher.hash(of: entity)) } },
                                uniquingKeysWith: { first, _ in first })
        return [
            NSStoreModelVersionHashesKey: hashes,
            NSStoreModelVersionHashesVersionKey: hashesVersion,
            NSStoreModelVersionHashesDigestKey: VersionHasher.hashesDigest(hashes),
            NSStoreModelVersionChecksumKey: VersionHasher.checksum(hashes),
            NSStoreModelVersionIdentifiersKey: versionIdentifiers.compactMap { $0.base as? String }.sorted(),
            NSPersistenceFrameworkVersionKey: openCoreDataFrameworkVersion,
            markerKey: currentMarker,
        ]
    }
}
