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
    private static let magic = Array("OCDFRC2\n".utf8)

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
        guard let data = FileManager.default.contents(atPath: url.path) else { return nil }
        var reader = ByteReader(data: data)
        guard reader.bytes(Self.magic.count) == Self.magic, let headerLength = reader.integer(UInt32.self),
              let headerData = reader.data(Int(headerLength)),
              let header = try? PropertyListSerialization.propertyList(from: headerData, format: nil) as? [String: Any] else { return nil }
        guard header["fingerprint"] as? String == fingerprint else {
            throw CoreDataError.make(.coreData, "The cache '\(name)' was written for another fetch request: a controller's request, predicate or sort descriptors changed under the same cache name. Call NSFetchedResultsController.deleteCache(withName:) first, or use another name.",
                                     userInfo: ["cacheName": name])
        }
        guard header["token"] as? String == token, let originList = header["origins"] as? [[Any]], let names = header["sections"] as? [String],
              let counts = header["counts"] as? [Int], counts.count == names.count, let kindCodes = header["kinds"] as? [Int],
              let total = header["rows"] as? Int else { return nil }
        var rows = SortedRows()
        for origin in originList {
            guard origin.count == 2, let entityName = origin[0] as? String, let entity = model.entitiesByName[entityName],
                  let storeIndex = origin[1] as? Int, stores.indices.contains(storeIndex) else { return nil }
            rows.origins.append(SortedRows.Origin(entity: entity, store: stores[storeIndex]))
        }
        let kinds = kindCodes.compactMap { SortValue.Kind(rawValue: UInt8(clamping: $0)) }
        guard kinds.count == kindCodes.count, !kinds.contains(.other) else { return nil }
        rows.sections = Array(zip(names, counts)).map { (name: $0.0, count: $0.1) }
        guard let keys = reader.array(Int64.self, count: total) else { return nil }
        var columns: [SortValueColumn] = []
        for kind in kinds {
            var column = SortValueColumn(kind: kind)
            column.reserveCapacity(total)
            switch kind {
            case .integer:
                guard let values = reader.array(Int64.self, count: total), let nulls = reader.array(UInt8.self, count: total) else { return nil }
                for row in 0..<total { column.appendInteger(values[row], isNull: nulls[row] != 0) }
            case .double:
                guard let values = reader.array(Double.self, count: total) else { return nil }
                for value in values { column.appendDouble(value) }
            case .string:
                for _ in 0..<total {
                    guard let length = reader.integer(Int32.self) else { return nil }
                    if length < 0 { column.append(.null); continue }
                    guard let bytes = reader.data(Int(length)) else { return nil }
                    column.append(.string(String(decoding: bytes, as: UTF8.self)))
                }
            case .other:
                return nil
            }
            columns.append(column)
        }
        // Chunks of the index's size.
        var start = 0
        repeat {
            let end = min(start + FetchedResultsIndex.chunkSize, total)
            var chunk = SortedRowsChunk(kinds: kinds, capacity: end - start)
            chunk.keys.append(contentsOf: keys[start..<end])
            for (position, column) in columns.enumerated() {
                for row in start..<end { chunk.columns[position].append(column[row]) }
            }
            rows.chunks.append(chunk)
            start = end
        } while start < total
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
                    for string in chunk.columns[position].strings {
                        guard let string else {
                            withUnsafeBytes(of: Int32(-1).littleEndian) { data.append(contentsOf: $0) }
                            continue
                        }
                        let utf8 = Array(string.utf8)
                        withUnsafeBytes(of: Int32(utf8.count).littleEndian) { data.append(contentsOf: $0) }
                        data.append(contentsOf: utf8)
                    }
                }
            case .other:
                return
            }
        }
        try? FileManager.default.createDirectory(at: Self.directory, withIntermediateDirectories: true)
        try? data.write(to: url, options: .atomic)
    }

    /// Removes the cache file.
    func delete() {
        try? FileManager.default.removeItem(at: url)
    }
}

/// Reads a cache file front to back; every read returns nil past the end.
private struct ByteReader {
    let data: Data
    var offset = 0

    mutating func bytes(_ count: Int) -> [UInt8]? {
        data(count).map(Array.init)
    }

    mutating func data(_ count: Int) -> Data? {
        guard count >= 0, offset + count <= data.count else { return nil }
        defer { offset += count }
        return data.subdata(in: (data.startIndex + offset)..<(data.startIndex + offset + count))
    }

    mutating func integer<T: FixedWidthInteger>(_: T.Type) -> T? {
        array(T.self, count: 1)?.first.map { T(littleEndian: $0) }
    }

    /// `count` values stored raw (little-endian, as this platform is).
    mutating func array<T>(_: T.Type, count: Int) -> [T]? {
        let length = count * MemoryLayout<T>.stride
        guard count >= 0, offset + length <= data.count else { return nil }
        defer { offset += length }
        return [T](unsafeUninitializedCapacity: count) { buffer, initialized in
            data.withUnsafeBytes { raw in
                let source = UnsafeRawBufferPointer(rebasing: raw[offset..<(offset + length)])
                UnsafeMutableRawBufferPointer(buffer).copyMemory(from: source)
            }
            initialized = count
        }
    }
}
