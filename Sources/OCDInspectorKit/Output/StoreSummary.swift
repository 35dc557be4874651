import Foundation
import OpenCoreData

/// What `ocd info` reports about a store file.
struct StoreSummary {
    /// One entity's line: from `Z_PRIMARYKEY` when no model is given, from the model otherwise.
    struct EntityLine {
        let name: String
        let parent: String?
        /// `Z_ENT`, when read from the store's tables.
        let number: Int?
        let table: String?
        /// Objects of the entity: direct instances from the tables, instances including subentities from a model.
        let rows: Int?
        let maxPrimaryKey: Int64?
    }

    let path: String
    let type: String
    let fileSize: Int
    /// "wal" or "rollback" for SQLite files.
    let journal: String?
    let metadata: [String: Any]
    /// The model given with `--model`, if any.
    let modelPath: String?
    /// Entities whose version hash in the model differs from the store's (with a model only).
    let changedEntities: [String]
    let entities: [EntityLine]
    /// The model the store keeps of itself (`Z_MODELCACHE`), described in a few words, if read.
    var modelCache: String?

    var uuid: String? { metadata[NSStoreUUIDKey] as? String }

    // MARK: JSON

    var json: JSONValue {
        var members: [(String, JSONValue)] = [
            ("path", .string(path)),
            ("type", .string(type)),
            ("uuid", JSONValue(uuid)),
            ("fileSize", .int(Int64(fileSize))),
        ]
        if let journal { members.append(("journal", .string(journal))) }
        if let modelCache { members.append(("modelCache", .string(modelCache))) }
        members.append(("metadata", Self.metadataJSON(metadata)))
        if let modelPath {
            members.append(("model", .string(modelPath)))
            members.append(("versionHashesMatch", .bool(changedEntities.isEmpty)))
            members.append(("entitiesWithDifferentVersionHash", .array(changedEntities.map(JSONValue.string))))
        }
        members.append(("entities", .array(entities.map { line in
            var entity: [(String, JSONValue)] = [("name", .string(line.name)), ("parent", JSONValue(line.parent))]
            if let number = line.number { entity.append(("number", .int(Int64(number)))) }
            if modelPath == nil { entity.append(("table", JSONValue(line.table))) }
            entity.append(("rows", line.rows.map { .int(Int64($0)) } ?? .null))
            if let max = line.maxPrimaryKey { entity.append(("maxPrimaryKey", .int(max))) }
            return .object(entity)
        })))
        return .object(members)
    }

    /// Metadata as JSON: version hashes (data) in base64, as Core Data's metadata dumps print them.
    static func metadataJSON(_ metadata: [String: Any]) -> JSONValue {
        JSONValue(metadata.mapValues { value -> Any in
            if let hashes = value as? [String: Data] { return hashes.mapValues { $0.base64EncodedString() } }
            return value
        })
    }

    // MARK: Text

    var text: String {
        var header = [["Store", path], ["Type", type + (journal.map { " (\($0) journal)" } ?? "")],
                      ["UUID", uuid ?? "none"], ["Size", "\(fileSize) bytes"]]
        if let modelCache { header.append(["Model cache", modelCache]) }
        if let modelPath {
            header.append(["Model", modelPath])
            header.append(["Version hashes", changedEntities.isEmpty ? "match the model" : "differ for \(changedEntities.joined(separator: ", "))"])
        }
        var out = TextTable(header: [], rows: header).render()
        out += "\nMetadata:\n" + Self.metadataText(metadata, indent: "  ")
        let source = modelPath == nil ? "from Z_PRIMARYKEY" : "from the model"
        out += "\nEntities (\(source)):\n"
        if modelPath == nil {
            out += TextTable(header: ["Z_ENT", "entity", "parent", "table", "rows", "Z_MAX"], rows: entities.map { line in
                ["\(line.number ?? 0)", line.name, line.parent ?? "-", line.table ?? "(none)", line.rows.map(String.init) ?? "-", line.maxPrimaryKey.map(String.init) ?? "-"]
            }).render(indent: "  ")
        } else {
            out += TextTable(header: ["entity", "parent", "objects"], rows: entities.map { line in
                [line.name, line.parent ?? "-", line.rows.map(String.init) ?? "-"]
            }).render(indent: "  ")
        }
        return out
    }

    /// Metadata as indented `key  value` lines; dictionaries nest, data prints in base64.
    private static func metadataText(_ dictionary: [String: Any], indent: String) -> String {
        var out = ""
        var simple: [[String]] = []
        func flush() {
            out += TextTable(header: [], rows: simple).render(indent: indent)
            simple = []
        }
        for key in dictionary.keys.sorted() {
            let value = dictionary[key]!
            if let nested = value as? [String: Any] {
                flush()
                out += "\(indent)\(key):\n" + metadataText(nested, indent: indent + "  ")
            } else if let data = value as? Data {
                simple.append([key, data.base64EncodedString()])
            } else {
                simple.append([key, ValueText.plain(value)])
            }
        }
        flush()
        return out
    }
}
