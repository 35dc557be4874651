import Foundation

/// Lightweight migration of a server store, in place, inside the transaction that opens it.
///
/// When the tables were made with another version of the model and the store is added with
/// `NSMigratePersistentStoresAutomaticallyOption`, the source version is found as for a SQLite
/// store (among `OCDMigrationSourceModelsOptionKey`'s models, then beside the model's file and in
/// the bundles), the mapping is inferred (with `NSInferMappingModelAutomaticallyOption`), and
/// `InPlaceMigration` rebuilds the tables with the rows, as for SQLite. PostgreSQL's DDL is
/// transactional, so a failure leaves every table as it was. Mapping models with custom policies
/// need objects and are refused (134110). Other servers must be stopped or on the new version: a
/// server still on the old one gets errors, not wrong rows (its tables are gone).
extension SQLServerStore {
    /// Migrates the tables; returns the metadata recording the store's model.
    func migrate(_ connection: any SQLServerConnection, metadata: [String: Any]) throws -> [String: Any] {
        let isSource: (NSManagedObjectModel) -> Bool = { [configurationName] candidate in
            candidate.freeze()
            return StoreModelMatching.isCompatible(candidate.entities(forConfigurationName: configurationName) ?? candidate.entities, with: metadata)
        }
        let given = options?[OCDMigrationSourceModelsOptionKey] as? [NSManagedObjectModel] ?? []
        guard let sourceModel = given.first(where: isSource) ?? ModelFileSearch.sourceModel(near: model, where: isSource) else {
            throw CoreDataError.make(.migrationMissingSourceModel,
                "The store \(locationDescription) was made with a model version whose version hashes match none of the versions found, so it can't be migrated. Keep every version in the .xcdatamodeld beside the current one, or pass it with OCDMigrationSourceModelsOptionKey.",
                userInfo: [NSStoreModelVersionHashesKey: metadata[NSStoreModelVersionHashesKey] as Any])
        }
        let mapping = try StoreMigrator.mappingModel(from: sourceModel, to: model, options: options, store: locationDescription)
        var numbers: [String: Int] = [:]
        var maximums: [Int: Int64] = [:]
        for row in try connection.run("SELECT Z_ENT, Z_NAME, Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT < 16000", []) {
            guard row.count == 3, let number = SQLServerValueCoding.integer(row[0]), case .text(let name) = row[1] else { continue }
            numbers[name] = Int(number)
            maximums[Int(number)] = SQLServerValueCoding.integer(row[2]) ?? 0
        }
        guard mapping.isInferred, let planned = InPlaceMigration(
            sourceEntities: sourceModel.entities(forConfigurationName: configurationName) ?? sourceModel.entities,
            destinationEntities: entities, mapping: mapping, storedNumbers: numbers, storedMaximums: maximums) else {
            throw CoreDataError.make(.migration,
                "The store \(locationDescription) can't be migrated in place: a \(type) store runs inferred mappings that keep each entity hierarchy in its own table; this one \(mapping.isInferred ? "merges hierarchies" : "has custom entity migration policies").")
        }
        var updated = metadata
        updated.merge(StoreModelMatching.modelKeys(for: entities, versionIdentifiers: model.versionIdentifiers)) { _, new in new }
        try planned.run(SQLServerMigrationDatabase(connection: connection), metadata: updated, destinationModel: model, progress: Progress(totalUnitCount: 1))
        return updated
    }
}

/// A server's connection as the database of an in-place migration: `?` placeholders become `$n`,
/// each entity hierarchy gets its key sequence (past its highest key), and the metadata is written
/// to `Z_METADATA`.
struct SQLServerMigrationDatabase: InPlaceMigrationDatabase {
    let connection: any SQLServerConnection
    var dialect: SQLDialect { connection.dialect }

    func execute(_ sql: String, _ arguments: [MigrationArgument]) throws {
        var numbered = ""
        var next = 0
        for character in sql {
            if character == "?" {
                next += 1
                numbered += "$\(next)"
            } else {
                numbered.append(character)
            }
        }
        try connection.run(numbered, arguments.map { argument in
            switch argument {
            case .integer(let number): .integer(number)
            case .text(let text): .text(text)
            case .value(let value, let attribute): SQLServerValueCoding.encode(value, for: attribute)
            }
        })
    }

    func firstInteger(_ sql: String) throws -> Int64? {
        try connection.run(sql, []).first?.first.flatMap(SQLServerValueCoding.integer)
    }

    func willRebuildTables() throws {}

    func didRebuildTables(_ destination: SQLiteSchema, maximumKeys: [String: Int64]) throws {
        for entity in destination.entities where entity.superentity == nil {
            guard let table = destination.mapping(for: entity)?.tableName else { continue }
            let sequence = SQLServerStore.sequenceName(for: entity, destination)
            try connection.run(connection.dialect.createSequenceStatement(sequence), [])
            let highest = maximumKeys[table] ?? 0
            if highest > 0 {
                try connection.run("SELECT setval('\(sequence.lowercased())', GREATEST($1, (SELECT last_value FROM \(sequence))))", [.integer(highest)])
            }
        }
    }

    func writeMetadata(_ metadata: [String: Any], model: NSManagedObjectModel) throws {
        try connection.run("UPDATE Z_METADATA SET Z_PLIST = $1", [.bytes(try SQLiteStore.metadataPropertyList(metadata))])
    }
}
