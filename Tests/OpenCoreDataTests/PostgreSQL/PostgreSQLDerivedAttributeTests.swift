import Foundation
import OpenCoreData
import Testing
@testable import OpenCoreDataPostgreSQL

/// Derived attributes on the PostgreSQL store: the SQLite store's scenarios (values derived in the
/// save and read back, kept current by changes in other tables and by batch requests, a migration
/// that adds one), plus what only a shared server has: another server's saves and another
/// program's `UPDATE`s keep them current too, and string functions give Foundation's answers.
@Suite(.enabled(if: PostgreSQLTestServer.isAvailable, PostgreSQLTestServer.skipReason))
struct PostgreSQLDerivedAttributeTests {
    private typealias Scenarios = DerivedAttributeTests

    @Test func valuesAreDerivedInTheSaveAndReadBackIntoTheObjects() throws {
        let database = PostgreSQLStoreTests.Database()
        try Scenarios.valuesAreDerivedInTheSaveAndReadBack { try database.coordinator($0) }
    }

    @Test func changesElsewhereRecomputeTheValuesThatDependOnThem() throws {
        let database = PostgreSQLStoreTests.Database()
        try Scenarios.changesElsewhereRecompute { try database.coordinator($0) }
    }

    @Test func theTimeIsTakenAgainWhenTheObjectIsSavedAgain() throws {
        let database = PostgreSQLStoreTests.Database()
        try Scenarios.timeIsTakenAgain { try database.coordinator($0) }
    }

    @Test func aMigrationThatAddsADerivedAttributeDerivesItForExistingRows() throws {
        let database = PostgreSQLStoreTests.Database()
        try Scenarios.migrationDerivesForExistingRows(type: NSPostgreSQLStoreType, url: database.url)
    }

    /// The string functions are Foundation's, not the database's: `ß` upper-cases to `SS`, the
    /// Kelvin sign and ligatures fold, decomposed accents drop, whatever the server's locale.
    @Test func stringFunctionsGiveFoundationsAnswers() throws {
        let database = PostgreSQLStoreTests.Database()
        let model = Scenarios.makeModel()
        let coordinator = try database.coordinator(model)
        let context = TestSupport.context(coordinator)
        let names = ["Straße", "\u{212A}elvin", "ﬁnn", "Ze\u{0301}bulon", "İstanbul", "ΟΔΥΣΣΕΥΣ", "plain"]
        var authors: [NSManagedObject] = []
        for name in names { authors.append(Scenarios.insert("Author", ["name": name], into: context)) }
        try context.save()
        for (name, author) in zip(names, authors) {
            let stored = try Scenarios.stored("Author", "name", name, in: coordinator)
            for object in [author, stored] {
                #expect(object.value(forKey: "shout") as? String == name.uppercased(), "\(name)")
                #expect(object.value(forKey: "searchName") as? String == StringComparison.canonical(name), "\(name)")
            }
        }
        // Fetching by the derived column finds the folded value.
        let search = NSFetchRequest<NSManagedObject>(entityName: "Author")
        search.predicate = NSPredicate(format: "searchName == %@", "zebulon")
        let found = try TestSupport.context(coordinator).fetch(search).map { $0.value(forKey: "name") as? String }
        #expect(found == ["Ze\u{0301}bulon"], "\(found)")
    }

    /// The triggers live in the database: a save on another server, and another program's
    /// `UPDATE`, recompute the values that depend on what they changed.
    @Test func otherServersAndProgramsKeepTheValuesCurrent() throws {
        let database = PostgreSQLStoreTests.Database()
        let model = Scenarios.makeModel()
        let first = try database.coordinator(model)
        let context = TestSupport.context(first)
        let author = Scenarios.insert("Author", ["name": "Zola"], into: context)
        _ = Scenarios.insert("Book", ["title": "Germinal", "pages": Int64(250), "author": author], into: context)
        try context.save()

        let second = try database.coordinator(model)
        let elsewhere = TestSupport.context(second)
        let zola = try elsewhere.existingObject(with: author.objectID)
        _ = Scenarios.insert("Book", ["title": "Nana", "pages": Int64(100), "author": zola], into: elsewhere)
        try elsewhere.save()
        #expect(try Scenarios.stored("Author", "name", "Zola", in: first).value(forKey: "bookCount") as? Int64 == 2)
        #expect(try Scenarios.stored("Author", "name", "Zola", in: first).value(forKey: "pageTotal") as? Int64 == 350)

        try database.sql("UPDATE ZAUTHOR SET ZNAME = 'Émile Zola'")
        try database.sql("UPDATE ZBOOK SET ZPAGES = 10")
        let book = try Scenarios.stored("Book", "title", "Nana", in: first)
        #expect(book.value(forKey: "authorName") as? String == "Émile Zola")
        #expect(try Scenarios.stored("Author", "name", "Émile Zola", in: first).value(forKey: "pageTotal") as? Int64 == 20)
        // The next save of any server gives the string functions their exact values.
        _ = Scenarios.insert("Tag", ["label": "classic"], into: elsewhere)
        try elsewhere.save()
        #expect(try Scenarios.stored("Author", "name", "Émile Zola", in: first).value(forKey: "searchName") as? String == "emile zola")
    }

    /// Opening again with the same model changes no trigger and recomputes nothing; a refused
    /// derivation leaves no table behind.
    @Test func openingAgainKeepsTheTriggersAndARefusedModelMakesNothing() throws {
        let database = PostgreSQLStoreTests.Database()
        let model = Scenarios.makeModel()
        let context = TestSupport.context(try database.coordinator(model))
        _ = Scenarios.insert("Author", ["name": "Zola"], into: context)
        try context.save()
        let touched = try #require(try Scenarios.stored("Author", "name", "Zola", in: context.persistentStoreCoordinator!).value(forKey: "touched") as? Date)
        Thread.sleep(forTimeInterval: 0.01)
        let again = try database.coordinator(model)
        #expect(try Scenarios.stored("Author", "name", "Zola", in: again).value(forKey: "touched") as? Date == touched,
                "no recomputation (now() would have moved)")

        let refused = PostgreSQLStoreTests.Database()
        let odd = Scenarios.makeModel(extra: Scenarios.derived("odd", .integer64AttributeType, "books.@avg.pages"))
        let error = try #require(throws: NSError.self) { _ = try refused.coordinator(odd) }
        #expect(error.code == NSPersistentStoreIncompatibleSchemaError)
        #expect(error.localizedDescription.contains("Author.odd"), "\(error.localizedDescription)")
        let fresh = try refused.coordinator(Scenarios.makeModel())
        #expect(try TestSupport.context(fresh).count(for: NSFetchRequest<NSManagedObject>(entityName: "Author")) == 0,
                "the refused attempt left no tables: the store was made afresh")
    }
}
