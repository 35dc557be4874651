import ArgumentParser
import Foundation
import OpenCoreData

/// `ocd export <store> [--json|--csv] [--out DIR]`: writes every object of a store (or of some
/// entities) as JSON or CSV, reading the store read-only, a page at a time, with the store's own
/// model when no `--model` is given.
struct ExportCommand: InspectorCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export a store's objects as JSON or CSV, one file per entity.",
        discussion: """
            Without --model the store's own model is used (Core Data SQLite stores keep one since \
            iOS 11 and macOS 10.13), so a store copied off a device exports on its own. Each object \
            has an "id" (Entity/p<primary key>); to-one relationships give the related object's id, \
            to-many ones a list of ids (in CSV, separated by spaces). With --out DIR each entity goes \
            to DIR/<Entity>.json or .csv; without it JSON is printed as one object keyed by entity, \
            and CSV needs exactly one --entity. The store is opened read-only.
            """
    )

    @OptionGroup var options: StoreAndModelOptions

    @Option(help: "An entity to export; repeat for several (default: every entity).")
    var entity: [String] = []

    @Flag(help: "Write JSON (the default).")
    var json = false

    @Flag(help: "Write CSV with a header row.")
    var csv = false

    @Option(help: "A folder to write one file per entity into (created if missing).")
    var out: String?

    @Option(help: "Objects read per page.")
    var pageSize = 5_000

    func validate() throws {
        if json && csv { throw ValidationError("--json and --csv can't be used together") }
        if csv && out == nil && entity.count != 1 { throw ValidationError("CSV without --out needs exactly one --entity") }
        if pageSize < 1 { throw ValidationError("--page-size must be at least 1") }
    }

    func execute(on console: Console) throws {
        let model = try options.loadModel()
        let entities = try entity.isEmpty
            ? model.entities.sorted { ($0.name ?? "") < ($1.name ?? "") }
            : entity.map { try ModelFile.entity(named: $0, in: model) }
        let stack = try StoreStack.openReadOnly(options.storeURL, model: model)
        defer { stack.close() }
        let folder = out.map { URL(fileURLWithPath: $0) }
        if let folder { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) }
        var total = 0
        if folder == nil && !csv { console.write("{") }
        for (index, exported) in entities.enumerated() {
            let name = exported.name ?? "?"
            let sink: ExportSink
            if let folder {
                sink = try .file(folder.appendingPathComponent("\(name).\(csv ? "csv" : "json")"))
            } else {
                sink = .console(console)
                if !csv { try sink.write((index == 0 ? "\n" : ",\n") + JSONValue.string(name).compact() + ": ") }
            }
            total += try export(exported, stack: stack, into: sink, console: console)
            try sink.close()
        }
        if folder == nil && !csv { console.write("\n}\n") }
        if let folder {
            console.line("Exported \(total) object\(total == 1 ? "" : "s") of \(entities.count) entit\(entities.count == 1 ? "y" : "ies") to \(folder.path)")
        }
    }

    /// Writes one entity's objects (not its subentities'), a page at a time in primary key order;
    /// returns how many were written.
    private func export(_ entity: NSEntityDescription, stack: StoreStack, into sink: ExportSink, console: Console) throws -> Int {
        let name = entity.name ?? "?"
        let attributes = entity.properties.compactMap { $0 as? NSAttributeDescription }.filter { !$0.isTransient }.map(\.name)
        let relationships = entity.properties.compactMap { $0 as? NSRelationshipDescription }.filter { !$0.isTransient }
        let toMany = relationships.filter(\.isToMany).map(\.name)
        let context = stack.context
        let count = try context.performAndWait {
            let request = NSFetchRequest<NSManagedObject>(entityName: name)
            request.includesSubentities = false
            return try context.count(for: request)
        }
        let progress = ProgressReporter(console: console, label: "Exporting \(name)", total: count)
        defer { progress.finish() }
        if csv {
            try sink.write(CSVText.line(["id"] + attributes + relationships.map(\.name)))
        } else {
            try sink.write("[")
        }
        var written = 0
        var after: NSManagedObjectID?
        while true {
            let lines: [String] = try context.performAndWait {
                let request = NSFetchRequest<NSManagedObject>(entityName: name)
                request.includesSubentities = false
                request.returnsObjectsAsFaults = false
                request.fetchLimit = pageSize
                request.sortDescriptors = [NSSortDescriptor(key: "self", ascending: true)]
                if let after { request.predicate = NSPredicate(format: "self > %@", after) }
                if !toMany.isEmpty { request.relationshipKeyPathsForPrefetching = toMany }
                let page = try context.fetch(request)
                after = page.last?.objectID
                defer { context.reset() }
                return page.map { object in line(for: object, attributes: attributes, relationships: relationships) }
            }
            for line in lines {
                try sink.write(csv ? line : (written == 0 ? "\n  " : ",\n  ") + line)
                written += 1
            }
            progress.update(written)
            if lines.count < pageSize { break }
        }
        if !csv { try sink.write(written == 0 ? "]" : "\n]") }
        if sink.isFile && !csv { try sink.write("\n") }
        return written
    }

    /// One object as a JSON object or a CSV line.
    private func line(for object: NSManagedObject, attributes: [String], relationships: [NSRelationshipDescription]) -> String {
        let id = Self.reference(object.objectID)
        let related = relationships.map { relationship in object.objectIDs(forRelationshipNamed: relationship.name).map(Self.reference) }
        if csv {
            let values = attributes.map { ValueText.plain(object.value(forKey: $0)) }
            return CSVText.line([id] + values + related.map { $0.joined(separator: " ") })
        }
        var fields: [(String, JSONValue)] = [("id", .string(id))]
        for name in attributes { fields.append((name, ValueText.json(object.value(forKey: name)))) }
        for (relationship, ids) in zip(relationships, related) {
            fields.append((relationship.name, relationship.isToMany ? .array(ids.map(JSONValue.string)) : ids.first.map(JSONValue.string) ?? .null))
        }
        return JSONValue.object(fields).compact()
    }

    /// `Entity/p<key>`, the last two parts of the object's URI (built without making the URL).
    static func reference(_ id: NSManagedObjectID) -> String {
        "\(id.entity.name ?? "")/p\(id.primaryKey)"
    }
}

/// Where an export's text goes: a file, written through a buffer, or the console.
enum ExportSink {
    case file(ExportFile)
    case console(Console)

    static func file(_ url: URL) throws -> ExportSink {
        .file(try ExportFile(url))
    }

    var isFile: Bool {
        if case .file = self { return true }
        return false
    }

    func write(_ text: String) throws {
        switch self {
        case .file(let file): try file.write(text)
        case .console(let console): console.write(text)
        }
    }

    func close() throws {
        if case .file(let file) = self { try file.close() }
    }
}

/// A file written in large chunks.
final class ExportFile {
    private let handle: FileHandle
    private let url: URL
    private var buffer = ""

    init(_ url: URL) throws {
        guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
            throw InspectorError("can't create \(url.path)")
        }
        self.url = url
        handle = try FileHandle(forWritingTo: url)
    }

    func write(_ text: String) throws {
        buffer += text
        if buffer.utf8.count >= 1 << 20 { try flush() }
    }

    private func flush() throws {
        do {
            try handle.write(contentsOf: Data(buffer.utf8))
        } catch {
            throw InspectorError("can't write \(url.path): \(error.localizedDescription)")
        }
        buffer = ""
    }

    func close() throws {
        try flush()
        try handle.close()
    }
}
