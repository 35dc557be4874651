import Foundation

/// One record to import: its position in the file for error messages, and its values by column.
struct ImportRecord {
    /// 1-based record number (the CSV header is not a record).
    let number: Int
    /// The line the record starts on (CSV only).
    let line: Int?
    /// Values by column name: `String` from CSV; `String`, `Bool`, `Int64`, `Double` or nil (null)
    /// from JSON. Empty CSV fields are left out.
    let values: [(column: String, value: Any?)]

    /// "record 3 (line 4)", as errors name the record.
    var place: String {
        line.map { "record \(number) (line \($0))" } ?? "record \(number)"
    }
}

/// Reads the records of a JSON or CSV file.
enum ImportRecords {
    /// The file formats `ocd import` reads.
    enum Format: String, CaseIterable {
        case json, csv
    }

    /// Reads the file; the format comes from its extension unless given.
    static func read(_ url: URL, format: Format?) throws -> [ImportRecord] {
        guard FileManager.default.fileExists(atPath: url.path) else { throw InspectorError.noSuchFile(url, what: "file to import") }
        let resolved = format ?? Format(rawValue: url.pathExtension.lowercased())
        guard let resolved else {
            throw InspectorError("can't tell the format of \(url.lastPathComponent) from its extension: use --format json or --format csv")
        }
        let data = try Data(contentsOf: url)
        switch resolved {
        case .json: return try json(data)
        case .csv:
            guard let text = String(data: data, encoding: .utf8) else { throw InspectorError("\(url.path) is not UTF-8 text") }
            return try csv(text)
        }
    }

    /// A JSON array of objects whose members are scalars or null.
    static func json(_ data: Data) throws -> [ImportRecord] {
        let decoded: JSONInput
        do {
            decoded = try JSONDecoder().decode(JSONInput.self, from: data)
        } catch {
            throw InspectorError("the file is not valid JSON: \(Self.reason(error))")
        }
        guard case .array(let elements) = decoded else { throw InspectorError("the JSON must be an array of objects, one per object to insert") }
        return try elements.enumerated().map { index, element in
            guard case .object(let members) = element else {
                throw InspectorError("record \(index + 1): expected a JSON object, found \(element.kind)")
            }
            let values = try members.sorted { $0.key < $1.key }.map { key, value -> (String, Any?) in
                switch value {
                case .null: return (key, nil)
                case .bool(let flag): return (key, flag)
                case .integer(let number): return (key, number)
                case .double(let number): return (key, number)
                case .string(let text): return (key, text)
                case .array, .object: throw InspectorError("record \(index + 1), '\(key)': nested \(value.kind)s can't be imported (only attribute values)")
                }
            }
            return ImportRecord(number: index + 1, line: nil, values: values)
        }
    }

    /// CSV with a header row naming the columns.
    static func csv(_ text: String) throws -> [ImportRecord] {
        let rows = try CSVReader.records(in: text)
        guard let header = rows.first else { return [] }
        let columns = header.fields.map { ($0 ?? "").trimmingCharacters(in: .whitespaces) }
        if let duplicate = Dictionary(grouping: columns, by: { $0 }).first(where: { $0.value.count > 1 })?.key {
            throw InspectorError("line \(header.line): the column '\(duplicate)' appears twice in the header")
        }
        return try rows.dropFirst().enumerated().map { index, row in
            guard row.fields.count == columns.count else {
                throw InspectorError("record \(index + 1) (line \(row.line)): \(row.fields.count) fields, but the header has \(columns.count)")
            }
            // An empty field sets nothing, so the attribute keeps its default value.
            let values = zip(columns, row.fields).compactMap { column, field in field.map { (column, $0 as Any?) } }
            return ImportRecord(number: index + 1, line: row.line, values: values)
        }
    }

    private static func reason(_ error: Error) -> String {
        if case DecodingError.dataCorrupted(let context) = error {
            return (context.underlyingError as NSError?)?.userInfo[NSDebugDescriptionErrorKey] as? String ?? context.debugDescription
        }
        return "\(error)"
    }
}

/// JSON as written, with integers kept apart from other numbers.
private indirect enum JSONInput: Decodable {
    case null
    case bool(Bool)
    case integer(Int64)
    case double(Double)
    case string(String)
    case array([JSONInput])
    case object([String: JSONInput])

    var kind: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .integer, .double: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .null }
        else if let flag = try? container.decode(Bool.self) { self = .bool(flag) }
        else if let number = try? container.decode(Int64.self) { self = .integer(number) }
        else if let number = try? container.decode(Double.self) { self = .double(number) }
        else if let text = try? container.decode(String.self) { self = .string(text) }
        else if let elements = try? container.decode([JSONInput].self) { self = .array(elements) }
        else { self = .object(try container.decode([String: JSONInput].self)) }
    }
}
