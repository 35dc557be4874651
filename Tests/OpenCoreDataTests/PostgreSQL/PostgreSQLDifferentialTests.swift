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
        let count = Int(ProcessInfo.processInfo.environment["OPENCOREDATA_DIFFERENTIAL_COUNT"] ?? "") ?? 300
        let (mismatches, nonEmpty) = try DifferentialTests.compare(count: count, ("memory", memoryContext), ("SQLite", sqliteContext), ("PostgreSQL", server))
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
        for format in ["name < 'b'", "NOT (name == 'a')", "name == 'é'", "ALL tags.label == 'x'", "name == 'a' OR name < 'b'"] {
            var prefilter = SQLServerPrefilter(entity: item, schema: store.schema)
            let made = prefilter.condition(for: NSPredicate(format: format))
            #expect(made == nil, "\(format)")
        }
    }
}
