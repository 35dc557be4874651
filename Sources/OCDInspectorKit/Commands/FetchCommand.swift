import ArgumentParser
import Foundation
import OpenCoreData

/// `ocd fetch <store> --model M --entity E`: runs an `NSFetchRequest` with a predicate, sort
/// descriptors and a limit against a store opened read-only, and prints the rows.
struct FetchCommand: InspectorCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "Fetch objects with a predicate, sort descriptors and a limit; print them as a table, JSON or CSV.",
        discussion: """
            Example: ocd fetch WorldCup.sqlite --model WorldCup.xcdatamodeld --entity Team \
            --predicate 'wins > 3' --sort wins:desc --sort teamName --limit 10
            The predicate uses NSPredicate's format syntax; sort keys and --properties may go \
            through to-one relationships (department.name). The store is opened read-only.
            """
    )

    @OptionGroup var options: StoreAndModelOptions

    @Option(help: "The entity to fetch.")
    var entity: String

    @Option(help: "An NSPredicate format string, e.g. \"wins > 3 AND qualifyingZone BEGINSWITH 'Eu'\".")
    var predicate: String?

    @Option(help: "A sort key, key[:asc|desc]; repeat for several.")
    var sort: [String] = []

    // `.unconditional`: a negative value (`--limit -1`) is taken as the value, so that
    // `validate()` can say what is wrong with it, not "missing value".
    @Option(parsing: .unconditional, help: "At most this many objects.")
    var limit: Int?

    @Option(parsing: .unconditional, help: "Skip this many objects first.")
    var offset: Int?

    @Option(help: "Comma-separated key paths to print (default: the entity's attributes).")
    var properties: String?

    @Flag(help: "Print a JSON array of objects.")
    var json = false

    @Flag(help: "Print CSV with a header row.")
    var csv = false

    func validate() throws {
        if json && csv { throw ValidationError("--json and --csv can't be used together") }
        if let limit, limit < 0 { throw ValidationError("--limit must be 0 or more") }
        if let offset, offset < 0 { throw ValidationError("--offset must be 0 or more") }
    }

    func execute(on console: Console) throws {
        let loaded = try options.loadModel()
        let target = try ModelFile.entity(named: entity, in: loaded)
        let request = try makeRequest(for: target)
        let columns = try columnKeyPaths(for: target)
        let stack = try StoreStack.openReadOnly(options.storeURL, model: loaded)
        defer { stack.close() }
        let rows: [[Any?]] = try stack.context.performAndWait {
            try stack.context.fetch(request).map { object in columns.map { object.value(forKeyPath: $0) } }
        }
        console.write(render(rows, columns: columns))
    }

    /// The fetch request the options describe; a malformed predicate is error 2048.
    func makeRequest(for target: NSEntityDescription) throws -> NSFetchRequest<NSManagedObject> {
        let request = NSFetchRequest<NSManagedObject>(entityName: target.name ?? entity)
        if let predicate {
            let parsed = NSPredicate(format: predicate)
            if let error = parsed.formatError { throw error }
            request.predicate = parsed
        }
        request.sortDescriptors = try sort.map { try Self.sortDescriptor($0, entity: target) }
        if let limit { request.fetchLimit = limit }
        if let offset { request.fetchOffset = offset }
        return request
    }

    /// Parses `key`, `key:asc` or `key:desc`.
    static func sortDescriptor(_ text: String, entity: NSEntityDescription) throws -> NSSortDescriptor {
        let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
        guard let key = parts.first, !key.isEmpty else { throw InspectorError("--sort needs a key, as in --sort wins:desc") }
        let direction = parts.count > 1 ? parts[1].lowercased() : "asc"
        guard ["asc", "desc", "ascending", "descending"].contains(direction) else {
            throw InspectorError("--sort '\(text)': the direction must be asc or desc")
        }
        try KeyPathCheck.validate(key, in: entity, use: "--sort")
        return NSSortDescriptor(key: key, ascending: direction.hasPrefix("asc"))
    }

    private func columnKeyPaths(for target: NSEntityDescription) throws -> [String] {
        guard let properties else {
            return target.properties.compactMap { property in
                (property as? NSAttributeDescription).flatMap { $0.isTransient ? nil : $0.name }
            }
        }
        let keyPaths = properties.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard !keyPaths.isEmpty else { throw InspectorError("--properties needs at least one key path") }
        for keyPath in keyPaths { try KeyPathCheck.validate(keyPath, in: target, use: "--properties") }
        return keyPaths
    }

    private func render(_ rows: [[Any?]], columns: [String]) -> String {
        if json {
            return JSONValue.array(rows.map { row in .object(zip(columns, row).map { ($0, ValueText.json($1)) }) }).prettyPrinted() + "\n"
        }
        if csv {
            return CSVText.line(columns) + rows.map { CSVText.line($0.map { ValueText.plain($0) }) }.joined()
        }
        let table = TextTable(header: columns, rows: rows.map { $0.map { $0.map { ValueText.plain($0) } ?? "nil" } })
        return table.render() + "(\(rows.count) object\(rows.count == 1 ? "" : "s"))\n"
    }
}
