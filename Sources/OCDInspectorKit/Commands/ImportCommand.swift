import ArgumentParser
import Foundation
import OpenCoreData

/// `ocd import <store> --model M --entity E <file>`: inserts one object per JSON object or CSV
/// record and saves them all in one transaction, or none of them.
struct ImportCommand: InspectorCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Insert objects from a JSON array or a CSV file with a header row, all in one save.",
        discussion: """
            Keys (JSON) or header columns (CSV) name attributes; --map renames a column. Values \
            are converted to each attribute's type; a value that doesn't convert stops the \
            import with its record and line number, before anything is written. The store is \
            created when it doesn't exist.
            """
    )

    @OptionGroup var options: StoreAndModelOptions

    @Option(help: "The entity to insert.")
    var entity: String

    @Argument(help: "A .json file (an array of objects) or a .csv file (with a header row).")
    var file: String

    @Option(help: "The file's format when its extension doesn't tell: json or csv.")
    var format: String?

    @Option(help: "Rename a column: 'Column Name=attribute'; repeat for several.")
    var map: [String] = []

    @Flag(help: "Skip columns that name no attribute instead of failing.")
    var ignoreUnknownColumns = false

    @Option(help: "A date pattern such as d-MMM-yy (default ISO 8601).")
    var dateFormat: String?

    func execute(on console: Console) throws {
        let loaded = try options.loadModel()
        let target = try ModelFile.entity(named: entity, in: loaded)
        if target.isAbstract { throw InspectorError("\(entity) is abstract: import into one of its subentities") }
        let records = try ImportRecords.read(URL(fileURLWithPath: file), format: try resolvedFormat())
        let rows = try convert(records, for: target)

        let storeURL = options.storeURL
        let existed = FileManager.default.fileExists(atPath: storeURL.path)
        let stack = try StoreStack.openForWriting(storeURL, model: loaded)
        do {
            try insertAndSave(rows, entity: target, stack: stack, console: console)
            stack.close()
        } catch {
            stack.close()
            if !existed { try? stack.coordinator.destroyPersistentStore(at: storeURL, ofType: NSSQLiteStoreType) }
            throw error
        }
        console.line("Imported \(rows.count) \(entity) object\(rows.count == 1 ? "" : "s") into \(storeURL.path)")
    }

    private func resolvedFormat() throws -> ImportRecords.Format? {
        guard let format else { return nil }
        guard let known = ImportRecords.Format(rawValue: format.lowercased()) else {
            throw InspectorError("--format must be json or csv, not '\(format)'")
        }
        return known
    }

    /// Column renames from `--map`.
    private func renames() throws -> [String: String] {
        var renames: [String: String] = [:]
        for pair in map {
            let parts = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                throw InspectorError("--map '\(pair)': write it as 'Column=attribute'")
            }
            renames[parts[0]] = parts[1]
        }
        return renames
    }

    /// Converts every record to attribute values, checking names and required values first.
    private func convert(_ records: [ImportRecord], for target: NSEntityDescription) throws -> [(record: ImportRecord, values: [String: Any?])] {
        let renames = try renames()
        let attributes = target.attributesByName
        let parser = AttributeValueParser(dateFormat: dateFormat)
        let required = attributes.values.filter { !$0.isOptional && !$0.isTransient && $0.defaultValue == nil }.map(\.name)
        return try records.map { record in
            var values: [String: Any?] = [:]
            for (column, raw) in record.values {
                let name = renames[column] ?? column
                guard let attribute = attributes[name] else {
                    if ignoreUnknownColumns { continue }
                    let kind = target.relationshipsByName[name] == nil ? "has no attribute" : "has a relationship, not an attribute,"
                    throw InspectorError("\(record.place): \(entity) \(kind) named '\(name)' (use --map 'Column=attribute' or --ignore-unknown-columns)")
                }
                do {
                    values[name] = .some(try parser.value(raw, for: attribute))
                } catch let error as InspectorError {
                    throw InspectorError("\(record.place), \(name) (\(attribute.attributeType.xcodeName)): \(error.description)")
                }
            }
            for name in required where (values[name] ?? nil) == nil {
                throw InspectorError("\(record.place): \(name) is required but has no value", code: NSValidationMissingMandatoryPropertyError)
            }
            return (record, values)
        }
    }

    /// Inserts the objects with progress on standard error and saves once; a validation error
    /// names the record of the object that failed.
    private func insertAndSave(_ rows: [(record: ImportRecord, values: [String: Any?])], entity target: NSEntityDescription,
                               stack: StoreStack, console: Console) throws {
        let context = stack.context
        try context.performAndWait {
            var recordOfObject: [ObjectIdentifier: ImportRecord] = [:]
            let progress = ProgressReporter(console: console, label: "importing", total: rows.count)
            for (index, row) in rows.enumerated() {
                let object = NSManagedObject(entity: target, insertInto: context)
                for (name, value) in row.values { object.setValue(value, forKey: name) }
                recordOfObject[ObjectIdentifier(object)] = row.record
                progress.update(index + 1)
            }
            progress.finish()
            do {
                try context.save()
            } catch let error as NSError {
                throw Self.naming(error, records: recordOfObject)
            }
        }
    }

    /// Adds the record number of the failing object to a validation error's description.
    private static func naming(_ error: NSError, records: [ObjectIdentifier: ImportRecord]) -> Error {
        let detail = (error.userInfo[NSDetailedErrorsKey] as? [NSError])?.first ?? error
        guard let object = detail.userInfo[NSValidationObjectErrorKey] as? NSManagedObject,
              let record = records[ObjectIdentifier(object)] else { return error }
        let reason = detail.localizedDescription.trimmingCharacters(in: CharacterSet(charactersIn: ". "))
        return InspectorError("\(record.place): \(reason); nothing was imported", code: detail.code)
    }
}
