import Foundation

extension AtomicStore {
    /// Replaces the metadata of a binary store file without adding it to a coordinator; the file
    /// is rewritten atomically and its objects are kept. The store's identifier is kept unless the
    /// new metadata names one.
    static func writeMetadata(_ newMetadata: [String: Any], at url: URL) throws {
        let current = try readMetadata(at: url)
        guard let data = FileManager.default.contents(atPath: url.path),
              // Ignored: a file that isn't a property list is reported as not a binary store below.
              var root = try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any] else {
            throw CoreDataError.make(.invalidType, "The file at \(url.path) is not a binary Core Data store.", url: url)
        }
        var metadata = newMetadata
        metadata[NSStoreUUIDKey] = newMetadata[NSStoreUUIDKey] ?? current[NSStoreUUIDKey]
        metadata[NSStoreTypeKey] = NSBinaryStoreType
        root["metadata"] = metadata
        do {
            let encoded = try PropertyListSerialization.data(fromPropertyList: root, format: .binary, options: 0)
            try encoded.write(to: url, options: .atomic)
        } catch {
            throw CoreDataError.storeFailure(StoreFileFailure(fileError: error), during: .saving, url: url, detail: "\(error)", underlying: error)
        }
    }
}
