import Foundation

/// The on-disk cache of a fetched results controller: the ordered row keys, their sort values and
/// the sections, with what they were computed from, so a relaunch on unchanged data skips the fetch.
///
/// A cache is valid when the request's fingerprint matches and the stores have not changed since it
/// was written (for SQLite, a change counter every save and batch request bumps in `Z_METADATA`).
/// A cache written for another request under the same name is an error, as in Core Data. Tracked
/// changes delete it. The file is a small property list header followed by the columns as raw
/// little-endian arrays, read back with one copy each.
struct FetchedResultsCache {
    let name: String
    private static let magic = Array("OCDFRC3\n".utf8)

    /// Where caches live: `$XDG_CACHE_HOME/OpenCoreData/FetchedResults` (or `~/.cache/…`).
    static var directory: URL {
        let environment = ProcessInfo.processInfo.environment
        let base = environment["XDG_CACHE_HOME"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0, isDirectory: true) }
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".cache", isDirectory: true)
        return base.appendingPathComponent("OpenCoreData/FetchedResults", isDirectory: true)
    }

    var url: URL { Self.directory.appendingPathComponent(name.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? name).appendingPathExtension("frc") }

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
    func load(fingerprint: String, token: String, model: NSManagedObjectModel, stores: [NSPersistentStore]) throws -> SortedRows? {
        // Read front to back in small pieces, straight into the chunks: the whole file is never
        // in memory at once.
        guard let handle = FileHandle(forReadingAtPath: url.path) else { return nil }
        defer { try? handle.close() } // Ignored: closing a read-only handle; the data was already read.
        var reader = ByteReader(handle: handle)
        guard reader.bytes(Self.magic.count) == Self.magic, let headerLength = reader.integer(UInt32.self),
              let headerBytes = reader.bytes(Int(headerLength)),
              // Ignored: a damaged header makes the cache unusable; the fetch runs instead.
              let header = try? PropertyListSerialization.propertyList(from: Data(headerBytes), format: nil) as? [String: Any] else { return nil }
        guard header["fingerprint"] as? String == fingerprint else {
            throw CoreDataError.make(.coreData, "The cache '\(name)' was written for another fetch request: a controller's request, predicate or sort descriptors changed under the same cache name. Call NSFetchedResultsController.deleteCache(withName:) first, or use another name.",
                                     userInfo: ["cacheName": name])
        }
        guard header["token"] as? String == token, let originList = header["origins"] as? [[Any]], let names = header["sections"] as? [String],
              let counts = header["counts"] as? [Int], counts.count == names.count, let kindCodes = header["kinds"] as? [Int],
              let total = header["rows"] as? Int, total >= 0 else { return nil }
        var rows = SortedRows()
        for origin in originList {
            guard origin.count == 2, let entityName = origin[0] as? String, let entity = model.entitiesByName[entityName],
                  let storeIndex = origin[1] as? Int, stores.indices.contains(storeIndex) else { return nil }
            rows.origins.append(SortedRows.Origin(entity: entity, store: stores[storeIndex]))
        }
        let kinds = kindCodes.compactMap { SortValue.Kind(rawValue: UInt8(clamping: $0)) }
        guard kinds.count == kindCodes.count, !kinds.contains(.other) else { return nil }
        rows.sections = Array(zip(names, counts)).map { (name: $0.0, count: $0.1) }
        // Chunks of the index's size: keys first, then each column in turn.
        let size = FetchedResultsIndex.chunkSize
        let ranges = stride(from: 0, to: max(total, 1), by: size).map { $0..<min($0 + size, total) }
        for range in ranges {
            guard let keys = reader.array(Int64.self, count: range.count) else { return nil }
            var chunk = SortedRowsChunk(kinds: kinds, capacity: range.count)
            chunk.keys.append(contentsOf: keys)
            rows.chunks.append(chunk)
        }
        for (position, kind) in kinds.enumerated() {
            switch kind {
            case .integer:
                for (index, range) in ranges.enumerated() {
                    guard let values = reader.array(Int64.self, count: range.count) else { return nil }
                    for value in values { rows.chunks[index].columns[position].appendInteger(value, isNull: false) }
                }
                for (index, range) in ranges.enumerated() {
                    guard let nulls = reader.array(UInt8.self, count: range.count) else { return nil }
                    if nulls.contains(where: { $0 != 0 }) {
                        var column = SortValueColumn(kind: .integer)
                        let values = rows.chunks[index].columns[position]
                        for (row, null) in nulls.enumerated() { column.appendInteger(values.integers[row], isNull: null != 0) }
                        rows.chunks[index].columns[position] = column
                    }
                }
            case .double:
                for (index, range) in ranges.enumerated() {
                    guard let values = reader.array(Double.self, count: range.count) else { return nil }
                    for value in values { rows.chunks[index].columns[position].appendDouble(value) }
                }
            case .string:
                // Per chunk: the byte count, each row's end offset, the bytes (see UTF8Column).
                for (index, range) in ranges.enumerated() {
                    guard let byteCount = reader.integer(UInt32.self), let ends = reader.array(UInt32.self, count: range.count),
                          let bytes = reader.array(UInt8.self, count: Int(byteCount)),
                          let column = UTF8Column(bytes: ContiguousArray(bytes), ends: ContiguousArray(ends)) else { return nil }
                    rows.chunks[index].columns[position].setStrings(column)
                }
            case .other:
                return nil
            }
        }
        return rows
    }

    /// Writes the results; rows of unsaved objects, or sort values that are not numbers or
    /// strings, make the results uncacheable.
    func save(_ rows: SortedRows, fingerprint: String, token: String, stores: [NSPersistentStore]) {
        let kinds = rows.chunks.first?.columns.map(\.kind) ?? []
        guard !kinds.contains(.other), rows.chunks.allSatisfy({ $0.keys.allSatisfy { $0 >= 0 } }) else { return }
        var originList: [[Any]] = []
        for origin in rows.origins {
            guard let storeIndex = stores.firstIndex(where: { $0 === origin.store }), let entityName = origin.entity.name else { return }
            originList.append([entityName, storeIndex])
        }
        let header: [String: Any] = [
            "fingerprint": fingerprint, "token": token, "origins": originList, "rows": rows.count,
            "sections": rows.sections.map(\.name), "counts": rows.sections.map(\.count), "kinds": kinds.map { Int($0.rawValue) },
        ]
        // Ignored: results that can't be encoded are just not cached.
        guard let headerData = try? PropertyListSerialization.data(fromPropertyList: header, format: .binary, options: 0) else { return }
        var data = Data(Self.magic)
        withUnsafeBytes(of: UInt32(headerData.count).littleEndian) { data.append(contentsOf: $0) }
        data.append(headerData)
        for chunk in rows.chunks { chunk.keys.withUnsafeBytes { data.append(contentsOf: $0) } }
        for (position, kind) in kinds.enumerated() {
            switch kind {
            case .integer:
                for chunk in rows.chunks { chunk.columns[position].integers.withUnsafeBytes { data.append(contentsOf: $0) } }
                for chunk in rows.chunks { data.append(contentsOf: chunk.columns[position].integerNulls.map { $0 ? UInt8(1) : 0 }) }
            case .double:
                for chunk in rows.chunks { chunk.columns[position].doubles.withUnsafeBytes { data.append(contentsOf: $0) } }
            case .string:
                for chunk in rows.chunks {
                    // One value a row, as the format has it (a column may share values).
                    let strings = chunk.columns[position].strings.withOneValuePerRow()
                    withUnsafeBytes(of: UInt32(strings.bytes.count).littleEndian) { data.append(contentsOf: $0) }
                    strings.ends.withUnsafeBytes { data.append(contentsOf: $0) }
                    strings.bytes.withUnsafeBytes { data.append(contentsOf: $0) }
                }
            case .other:
                return
            }
        }
        // Ignored: the cache is only an optimisation; without its folder the write below just fails.
        try? FileManager.default.createDirectory(at: Self.directory, withIntermediateDirectories: true)
        // Ignored: the cache is only an optimisation; without the file the next launch fetches.
        try? data.write(to: url, options: .atomic)
    }

    /// Removes the cache file.
    func delete() {
        // Ignored: no file is the usual case; a cache left behind is still checked before use.
        try? FileManager.default.removeItem(at: url)
    }
}

/// Reads a cache file front to back through a small buffer; every read returns nil past the end.
private struct ByteReader {
    let handle: FileHandle
    private var buffer: [UInt8] = []
    private var position = 0

    init(handle: FileHandle) {
        self.handle = handle
    }

    /// Makes `count` bytes available from `position`; false at the end of the file.
    private mutating func fill(_ count: Int) -> Bool {
        guard count >= 0 else { return false }
        while buffer.count - position < count {
            if position > 0 {
                buffer.removeFirst(position)
                position = 0
            }
            // Ignored: a read error ends the cache like a short file; the fetch runs instead.
            guard let more = try? handle.read(upToCount: max(65_536, count - buffer.count)), !more.isEmpty else { return false }
            buffer.append(contentsOf: more)
        }
        return true
    }

    mutating func bytes(_ count: Int) -> [UInt8]? {
        guard fill(count) else { return nil }
        defer { position += count }
        return Array(buffer[position..<(position + count)])
    }

    mutating func integer<T: FixedWidthInteger>(_: T.Type) -> T? {
        array(T.self, count: 1)?.first.map { T(littleEndian: $0) }
    }

    /// `count` values stored raw (little-endian, as this platform is).
    mutating func array<T>(_: T.Type, count: Int) -> [T]? {
        let length = count * MemoryLayout<T>.stride
        guard fill(length) else { return nil }
        defer { position += length }
        return [T](unsafeUninitializedCapacity: count) { target, initialized in
            buffer.withUnsafeBytes { raw in
                UnsafeMutableRawBufferPointer(target).copyMemory(from: UnsafeRawBufferPointer(rebasing: raw[position..<(position + length)]))
            }
            initialized = count
        }
    }
}
