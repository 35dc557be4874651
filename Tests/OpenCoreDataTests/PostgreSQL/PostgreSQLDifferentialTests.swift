import Foundation
import OpenCoreData
import Testing
@testable import OpenCoreDataCore
@testable import OpenCoreDataPostgreSQL

/// The generated predicates and sort descriptors of `DifferentialTests`, run through the
/// in-memory, SQLite and PostgreSQL stores: the same objects in the same order, or a failure.
///
/// `OPENCOREDATA_DIFFERENTIAL_COUNT` raises the number of predicates (default 300 here).
@Suite(.enabled(if: PostgreSQLTestServer.isAvailable, PostgreSQLTestServer.skipReason))
struct PostgreSQLDifferentialTests {
    @Test func memorySQLiteAndPostgreSQLAgree() throws {
        let database = PostgreSQLStoreTests.Database()
        let model = DifferentialTests.model()
        let server = try database.context(model)
        let (memory, _) = try TestSupport.coordinator(model, type: NSInMemoryStoreType)
        let (sqlite, _) = try TestSupport.coordinator(model, type: NSSQLiteStoreType)
        let memoryContext = TestSupport.context(memory)
        let sqliteContext = TestSupport.context(sqlite)
        try server.performAndWait { try DifferentialTests.populate(server) }
        try DifferentialTests.populate(memoryContext)
        try DifferentialTests.populate(sqliteContext)
        let count = DifferentialTests.requestCount(default: 300)
        let (mismatches, nonEmpty) = try DifferentialTests.compare(count: count, ("memory", memoryContext), ("SQLite", sqliteContext), ("PostgreSQL", server))
        #expect(mismatches.isEmpty, "\(mismatches.joined(separator: "\n"))")
        #expect(nonEmpty > count / 4, "the generated predicates select something")
    }

    /// The generated dictionary requests of `DictionaryDifferentialTests` (grouping, aggregates,
    /// having, distinct): the same rows from the SQLite and PostgreSQL stores.
    @Test func sqliteAndPostgreSQLAgreeOnDictionaries() throws {
        let database = PostgreSQLStoreTests.Database()
        let model = DifferentialTests.model()
        let server = try database.context(model)
        let (sqlite, _) = try TestSupport.coordinator(model, type: NSSQLiteStoreType)
        let sqliteContext = TestSupport.context(sqlite)
        try server.performAndWait { try DifferentialTests.populate(server) }
        try DifferentialTests.populate(sqliteContext)
        let count = DifferentialTests.requestCount(default: 300) / 2
        let (mismatches, answered) = DictionaryDifferentialTests.compare(count: count, [("SQLite", sqliteContext), ("PostgreSQL", server)])
        #expect(mismatches.isEmpty, "\(mismatches.joined(separator: "\n"))")
        #expect(answered > count / 2, "most generated requests are answered")
    }

    /// `FetchedResultsContextChainTests`' random changes (unsaved, through a child, merged from
    /// another context by hand or automatically, and saved) for controllers over the server's store.
    @Test(arguments: FetchedResultsContextChainTests.Configuration.some(sections: [nil, "department.name"], batchSizes: [20])
            + FetchedResultsContextChainTests.Configuration.some(sections: ["department.name"], batchSizes: [0], limit: 7, offset: 3))
    func controllersFollowChangesOnTheServer(_ configuration: FetchedResultsContextChainTests.Configuration) throws {
        let database = PostgreSQLStoreTests.Database()
        let options = configuration.mode == .history ? [NSPersistentHistoryTrackingKey: true as NSNumber] : nil
        try FetchedResultsContextChainTests.run(configuration, on: database.coordinator(FetchedResultsPropertyTests.model(), options: options))
    }

    /// `PendingChangesDifferentialTests`' generated requests while a context holds generated
    /// unsaved changes (also in a parent context), against the answer worked out in memory.
    @Test(arguments: PendingChangesDifferentialTests.Layout.allCases)
    func fetchesOnTheServerReflectUnsavedChanges(_ layout: PendingChangesDifferentialTests.Layout) throws {
        let database = PostgreSQLStoreTests.Database()
        let mismatches = try PendingChangesDifferentialTests.run(on: database.coordinator(DifferentialTests.model()), layout: layout,
                                                                 seed: 101, sharing: PendingChangesDifferentialTests.Layout.allCases.count)
        #expect(mismatches.isEmpty, "\(mismatches.prefix(10).joined(separator: "\n"))")
    }

    /// The generated predicates as batch updates on the server: the objects a fetch finds.
    @Test func batchUpdatesSelectWhatFetchesSelect() throws {
        let database = PostgreSQLStoreTests.Database()
        let server = try database.context(DifferentialTests.model())
        let variables = try server.performAndWait {
            try DifferentialTests.populate(server)
            return try DifferentialTests.groupVariables(server)
        }
        let count = DifferentialTests.requestCount(default: 300) / 2
        let (mismatches, nonEmpty) = try BatchRequestDifferentialTests.compareUpdates(count: count, server, variables)
        #expect(mismatches.isEmpty, "\(mismatches.joined(separator: "\n"))")
        #expect(nonEmpty > count / 4, "the generated predicates select something")
    }

    /// Names whose matches a database would get wrong if the string conditions it runs were
    /// taken as the answer: a Kelvin sign (canonically `K`), a ligature (`ﬁ` folds to `fi`), a
    /// decomposed `é`, `ß` (folds to `ss`), LIKE's own wildcards; ASCII constants narrow the rows
    /// read, and the evaluator decides.
    @Test func stringConditionsReadEveryRowThatCouldMatch() throws {
        let names = ["Kelvin", "\u{212A}elvin", "kelvin", "ﬁle", "file", "FILE", "e\u{301}clair", "eclair", "éclair", "STRASSE", "straße",
                     "50%", "500", "a_b", "axb", "back\\slash", "", "東京"]
        let model = DifferentialTests.model()
        let database = PostgreSQLStoreTests.Database()
        let server = try database.context(model)
        let (memory, _) = try TestSupport.coordinator(model, type: NSInMemoryStoreType)
        let memoryContext = TestSupport.context(memory)
        for context in [server, memoryContext] {
            try context.performAndWait {
                let group = NSEntityDescription.insertNewObject(forEntityName: "Group", into: context)
                group.setValue("Kelvin", forKey: "title")
                for (index, name) in names.enumerated() {
                    let item = NSEntityDescription.insertNewObject(forEntityName: "Item", into: context)
                    item.setValue(Int64(index), forKey: "id")
                    item.setValue(name, forKey: "name")
                    if index % 2 == 0 { item.setValue(group, forKey: "group") }
                    let tag = NSEntityDescription.insertNewObject(forEntityName: "Tag", into: context)
                    tag.setValue(name, forKey: "label")
                    tag.setValue(item, forKey: "item")
                }
                try context.save()
            }
        }
        let formats = ["name == %@", "name ==[c] %@", "name ==[cd] %@", "name BEGINSWITH[c] %@", "name ENDSWITH %@", "name CONTAINS[cd] %@",
                       "name LIKE[c] %@", "name IN[c] %@", "group.title ==[c] %@", "ANY tags.label BEGINSWITH[cd] %@", "group.title != %@"]
        let constants: [Any] = ["kelvin", "Kelvin", "file", "fi", "eclair", "strasse", "50%", "a_b", "a?b", "*e*", "back\\slash", ["file", "KELVIN"]]
        var compared = 0
        var beyondASCII = 0
        let nonASCII = Set(names.indices.filter { names[$0].utf8.contains { $0 >= 0x80 } }.map(Int64.init))
        for format in formats {
            for constant in constants where (constant is [String]) == format.contains("IN") {
                let request = NSFetchRequest<NSDictionary>(entityName: "Item")
                request.resultType = .dictionaryResultType
                request.propertiesToFetch = ["id"]
                request.predicate = NSPredicate(format: format, argumentArray: [constant])
                request.sortDescriptors = [NSSortDescriptor(key: "id", ascending: true)]
                let fromServer = try server.performAndWait { try server.fetch(request).compactMap { $0["id"] as? Int64 } }
                let fromMemory = try memoryContext.performAndWait { try memoryContext.fetch(request).compactMap { $0["id"] as? Int64 } }
                #expect(fromServer == fromMemory, "\(request.predicate!)")
                compared += 1
                if fromMemory.contains(where: nonASCII.contains) && (constant as? String)?.utf8.allSatisfy({ $0 < 0x80 }) == true { beyondASCII += 1 }
            }
        }
        #expect(compared > 75)
        #expect(beyondASCII > 5, "ASCII constants that match non-ASCII names: the rows the database must not leave out")
    }

    @Test func theConditionsNarrowTheRowsRead() throws {
        let model = DifferentialTests.model()
        let database = PostgreSQLStoreTests.Database()
        let context = try database.context(model)
        let store = try #require(context.persistentStoreCoordinator?.persistentStores.first as? SQLServerStore)
        let item = try #require(model.entitiesByName["Item"])
        for (format, expected) in [
            ("name BEGINSWITH[c] 'ab'", "zname ILIKE $1 OR zname ~ $2"),
            ("group.title == 'x' AND count > 3", "zgroup IN (SELECT Z_PK FROM ZGROUP WHERE Z_ENT IN"),
            ("group.title == nil", "zgroup IS NULL OR"),
            ("ANY tags.label == 'x'", "Z_PK IN (SELECT zitem FROM ZTAG"),
        ] {
            var prefilter = SQLServerPrefilter(entity: item, schema: store.schema)
            let made = prefilter.condition(for: NSPredicate(format: format))
            let condition = try #require(made, "\(format)")
            #expect(condition.lowercased().contains(expected.lowercased()), "\(format): \(condition)")
        }
        // Exact conditions need no evaluation in Swift; widened string ones and partial ANDs do.
        for (format, exact) in [("count > 3 AND group.rank == nil", true), ("count > 3 AND name < 'b'", false), ("name == 'a'", false),
                                ("ANY tags.label == nil OR score BETWEEN {1, 2}", true)] {
            var prefilter = SQLServerPrefilter(entity: item, schema: store.schema)
            _ = prefilter.condition(for: NSPredicate(format: format))
            #expect(prefilter.isExact == exact, "\(format)")
        }
        let columns = store.schema.mapping(for: item)?.columnsBySlot ?? [:]
        let numeric = SQLServerOrdering.clause(for: [NSSortDescriptor(key: "count", ascending: false), NSSortDescriptor(key: "when", ascending: true)],
                                               entity: item, columns: columns)
        #expect(numeric?.lowercased() == "zcount desc nulls last, zwhen asc nulls first, z_pk")
        for key in ["name", "group.rank"] {
            #expect(SQLServerOrdering.clause(for: [NSSortDescriptor(key: key, ascending: true)], entity: item, columns: columns) == nil, "\(key) sorts in Swift")
        }
        for format in ["name < 'b'", "NOT (name == 'a')", "name == 'é'", "ALL tags.label == 'x'", "name == 'a' OR name < 'b'"] {
            var prefilter = SQLServerPrefilter(entity: item, schema: store.schema)
            let made = prefilter.condition(for: NSPredicate(format: format))
            #expect(made == nil, "\(format)")
        }
    }
}

/// Fetched results controllers whose requests the PostgreSQL store answers in SQL (keys, sort
/// columns and sections in one query) show what the same controllers show over the in-memory
/// store, before and after changes; ones it answers in Swift too.
@Suite(.enabled(if: PostgreSQLTestServer.isAvailable, PostgreSQLTestServer.skipReason))
struct PostgreSQLControllerTests {
    @Test(arguments: [
        ("count", "score > 0", ["count", "id"]),
        ("flag", "count < 10 OR count == nil", ["flag", "score", "id"]),
        (nil, "when != nil", ["when", "id"]),
        ("group.title", "count > 2", ["group.title", "id"]),
        (nil, "name BEGINSWITH[c] 'a'", ["name", "id"]),
    ] as [(String?, String, [String])])
    func controllersShowWhatTheInMemoryStoreShows(_ section: String?, _ predicate: String, _ keys: [String]) throws {
        let model = DifferentialTests.model()
        let database = PostgreSQLStoreTests.Database()
        let server = try database.context(model)
        let (memory, _) = try TestSupport.coordinator(model, type: NSInMemoryStoreType)
        let memoryContext = TestSupport.context(memory, concurrencyType: .privateQueueConcurrencyType)
        var shown: [[String]] = []
        for context in [server, memoryContext] {
            let lines = try context.performAndWait {
                try DifferentialTests.populate(context)
                let request = NSFetchRequest<NSManagedObject>(entityName: "Item")
                request.predicate = NSPredicate(format: predicate)
                request.sortDescriptors = keys.enumerated().map { NSSortDescriptor(key: $1, ascending: $0 % 2 == 0) }
                request.fetchBatchSize = 5
                let controller = NSFetchedResultsController(fetchRequest: request, managedObjectContext: context, sectionNameKeyPath: section, cacheName: nil)
                let table = TestTableView()
                controller.delegate = table
                try controller.performFetch()
                table.reload(from: controller)
                func describe() -> [String] {
                    (controller.sections ?? []).map { info in
                        "\(info.name): " + (info.objects ?? []).compactMap { ($0 as? NSManagedObject)?.value(forKey: "id") as? Int64 }.map(String.init).joined(separator: " ")
                    }
                }
                var lines = describe()
                // Changes the controller must place: a moved sort key, a new object, a deletion.
                let all = try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Item")).sorted { ($0.value(forKey: "id") as! Int64) < ($1.value(forKey: "id") as! Int64) }
                all[3].setValue(Int64(5), forKey: "count")
                all[4].setValue(true, forKey: "flag")
                context.delete(all[5])
                let newcomer = NSEntityDescription.insertNewObject(forEntityName: "Item", into: context)
                newcomer.setValue(Int64(10_000), forKey: "id")
                newcomer.setValue(Int64(3), forKey: "count")
                newcomer.setValue(1.5, forKey: "score")
                newcomer.setValue("apple", forKey: "name")
                newcomer.setValue(Date(timeIntervalSinceReferenceDate: 0), forKey: "when")
                try context.save()
                #expect(table.failures.isEmpty, "\(table.failures)")
                lines += ["after"] + describe()
                return lines
            }
            shown.append(lines)
        }
        #expect(shown[0] == shown[1], "PostgreSQL:\n\(shown[0].joined(separator: "\n"))\nmemory:\n\(shown[1].joined(separator: "\n"))")
        #expect(shown[1].count >= 3 && shown[1].joined().contains(where: \.isNumber))
    }
}
