import Foundation
import GRDB

extension SQLiteStore {
    /// Migrates the store file in place with an inferred mapping, in one transaction (see
    /// `InPlaceMigration`). Returns false, having changed nothing, when the mapping can't run
    /// in place.
    static func migrateInPlace(at url: URL, from sourceModel: NSManagedObjectModel, to destinationModel: NSManagedObjectModel,
                               configuration: String?, mapping: NSMappingModel, metadata: [String: Any]) throws -> Bool {
        sourceModel.freeze()
        destinationModel.freeze()
        let database = try openForMaintenance(url)
        defer { try? database.close() } // Ignored: the migration has committed or thrown; only closing is left.
        let progress = Progress(totalUnitCount: 1)
        do {
            return try database.writeWithoutTransaction { db in
                var planned: InPlaceMigration?
                try db.inTransaction(.immediate) {
                    var numbers: [String: Int] = [:]
                    var maximums: [Int: Int64] = [:]
                    for row in try Row.fetchAll(db, sql: "SELECT Z_ENT, Z_NAME, Z_MAX FROM Z_PRIMARYKEY") {
                        guard let name: String = row["Z_NAME"], let number: Int = row["Z_ENT"] else { continue }
                        numbers[name] = number
                        maximums[number] = row["Z_MAX"] ?? 0
                    }
                    planned = InPlaceMigration(
                        sourceEntities: sourceModel.entities(forConfigurationName: configuration) ?? sourceModel.entities,
                        destinationEntities: destinationModel.entities(forConfigurationName: configuration) ?? destinationModel.entities,
                        mapping: mapping, storedNumbers: numbers, storedMaximums: maximums)
                    guard let planned else { return .rollback }
                    try planned.run(SQLiteMigrationDatabase(db: db), metadata: metadata, destinationModel: destinationModel, progress: progress)
                    return .commit
                }
                return planned != nil
            }
        } catch let error as NSError where error.domain == NSCocoaErrorDomain {
            throw error
        } catch {
            throw translate(error, url: url, during: .migrating)
        }
    }

    /// Moves everything in the WAL into the database file, leaving the WAL empty, so the file can
    /// be replaced as a whole.
    static func checkpoint(at url: URL) throws {
        let database = try openForMaintenance(url)
        defer { try? database.close() } // Ignored: the checkpoint has run or thrown; only closing is left.
        do {
            try database.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        } catch {
            throw translate(error, url: url, during: .migrating)
        }
    }

    /// A plain connection to a store file. The journal mode is left as the file has it (WAL for a
    /// store), since asking GRDB for WAL mode makes it write a table to the file.
    private static func openForMaintenance(_ url: URL) throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.busyMode = .timeout(StoreOptions.defaultLockTimeout)
        configuration.label = "OpenCoreData.Migration"
        // A migration recomputes derived attributes with the functions their triggers call.
        configuration.prepareDatabase { db in SQLiteDerivedAttributes.registerFunctions(db) }
        do {
            return try DatabaseQueue(path: url.path, configuration: configuration)
        } catch {
            throw translate(error, url: url, during: .opening)
        }
    }
}

extension SQLiteStore {
    /// Gives a migrated store file the identifier (`NSStoreUUID`) of the store it replaces, so that
    /// object ID URIs stay valid.
    static func adoptIdentifier(_ identifier: String, at url: URL) throws {
        let database = try openForMaintenance(url)
        defer { try? database.close() } // Ignored: the write has committed or thrown; only closing is left.
        do {
            try database.write { db in
                var metadata = try readMetadata(db, url: url)
                metadata[NSStoreUUIDKey] = identifier
                let plist = try metadataPropertyList(metadata)
                try db.execute(sql: "UPDATE Z_METADATA SET Z_UUID = ?, Z_PLIST = ?", arguments: [identifier, plist])
            }
        } catch {
            throw translate(error, url: url, during: .migrating)
        }
    }
}

/// A SQLite file as the database of an in-place migration: derived-attribute triggers name the
/// source model's tables and columns, so they go before the tables are rebuilt and the
/// destination's are made (and what they derive recomputed) after; the metadata's generation
/// moves on and the model cache is rewritten.
struct SQLiteMigrationDatabase: InPlaceMigrationDatabase {
    let db: Database
    var dialect: SQLDialect { .sqlite }

    func execute(_ sql: String, _ arguments: [MigrationArgument]) throws {
        let values = arguments.map { argument -> DatabaseValue in
            switch argument {
            case .integer(let number): number.databaseValue
            case .text(let text): text.databaseValue
            case .value(let value, let attribute): SQLiteValueCoding.databaseValue(value, for: attribute, primaryKeyOf: { _ in nil })
            }
        }
        try db.execute(sql: sql, arguments: StatementArguments(values))
    }

    func firstInteger(_ sql: String) throws -> Int64? { try Int64.fetchOne(db, sql: sql) }

    func willRebuildTables() throws { try SQLiteDerivedAttributes.dropAll(db) }

    func didRebuildTables(_ destination: SQLiteSchema, maximumKeys: [String: Int64]) throws {
        try SQLiteDerivedAttributes(schema: destination).install(db)
    }

    func writeMetadata(_ metadata: [String: Any], model: NSManagedObjectModel) throws {
        var updated = metadata
        updated[SQLiteStore.generationKey] = ((metadata[SQLiteStore.generationKey] as? Int) ?? 0) + 1
        try db.execute(sql: "UPDATE Z_METADATA SET Z_PLIST = ?", arguments: [try SQLiteStore.metadataPropertyList(updated)])
        try SQLiteModelCache.write(model, db)
    }
}
