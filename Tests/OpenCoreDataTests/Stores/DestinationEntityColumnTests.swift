import Foundation
import GRDB
import OpenCoreData
@testable import OpenCoreDataCore
import Testing

/// A to-one relationship whose destination has subentities keeps the destination row's entity
/// number beside its key (`Z<n>_<NAME>`), as in Apple's layout, and rows decode from it.
@Suite struct DestinationEntityColumnTests {
    /// Book (with subentity Novel) ← Page.book, as in the Apple store the layout was learned from.
    static func model() -> NSManagedObjectModel {
        let book = NSEntityDescription(name: "Book")
        let novel = NSEntityDescription(name: "Novel")
        let page = NSEntityDescription(name: "Page")
        let pages = NSRelationshipDescription(name: "pages", destination: page, toMany: true)
        let pageBook = NSRelationshipDescription(name: "book", destination: book)
        TestSupport.pair(pages, pageBook)
        book.properties = [NSAttributeDescription(name: "title", type: .stringAttributeType), pages]
        novel.properties = [NSAttributeDescription(name: "genre", type: .stringAttributeType)]
        book.subentities = [novel]
        page.properties = [NSAttributeDescription(name: "number", type: .integer64AttributeType), pageBook]
        let model = NSManagedObjectModel()
        model.entities = [book, novel, page]
        return model
    }

    private func makeStore() throws -> URL {
        let url = TestSupport.temporaryDirectory().appendingPathComponent("Books.sqlite")
        let (coordinator, _) = try TestSupport.coordinator(Self.model(), url: url)
        let context = TestSupport.context(coordinator)
        let novel = NSEntityDescription.insertNewObject(forEntityName: "Novel", into: context)
        novel.setValue("Dune", forKey: "title")
        let book = NSEntityDescription.insertNewObject(forEntityName: "Book", into: context)
        book.setValue("Atlas", forKey: "title")
        for number in 1...3 {
            let page = NSEntityDescription.insertNewObject(forEntityName: "Page", into: context)
            page.setValue(Int64(number), forKey: "number")
            page.setValue(number == 3 ? book : novel, forKey: "book")
        }
        try context.save()
        // An update moves page 2 to the plain book: the column follows.
        let moved = try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Page")).first { $0.value(forKey: "number") as? Int64 == 2 }
        moved?.setValue(book, forKey: "book")
        try context.save()
        try coordinator.remove(coordinator.persistentStores[0])
        return url
    }

    private func pages(_ url: URL) throws -> [Int64: String] {
        let (coordinator, _) = try TestSupport.coordinator(Self.model(), url: url)
        let context = TestSupport.context(coordinator)
        var result: [Int64: String] = [:]
        for page in try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Page")) {
            let book = page.value(forKey: "book") as? NSManagedObject
            result[page.value(forKey: "number") as! Int64] = book?.objectID.entity.name
        }
        return result
    }

    /// A dictionary fetch of each page's number and book: the book's entity name by number.
    private func pageDictionaries(_ url: URL) throws -> [Int64: String] {
        let (coordinator, _) = try TestSupport.coordinator(Self.model(), url: url)
        let context = TestSupport.context(coordinator)
        let request = NSFetchRequest<NSDictionary>(entityName: "Page")
        request.resultType = .dictionaryResultType
        request.propertiesToFetch = ["number", "book"]
        var result: [Int64: String] = [:]
        for row in try context.fetch(request) {
            result[row["number"] as! Int64] = (row["book"] as? NSManagedObjectID)?.entity.name
        }
        return result
    }

    @Test func theColumnIsWrittenAsApplesLayoutHasIt() throws {
        let url = try makeStore()
        let queue = try DatabaseQueue(path: url.path)
        defer { try? queue.close() }
        try queue.read { db in
            let columns = try db.columns(in: "ZPAGE").map(\.name)
            #expect(columns.contains("ZBOOK") && columns.contains("Z1_BOOK"), "\(columns)")
            let numbers = Dictionary(uniqueKeysWithValues: try Row.fetchAll(db, sql: "SELECT Z_NAME, Z_ENT FROM Z_PRIMARYKEY").map { ($0["Z_NAME"] as String, $0["Z_ENT"] as Int) })
            let rows = try Row.fetchAll(db, sql: "SELECT ZNUMBER, Z1_BOOK FROM ZPAGE ORDER BY ZNUMBER")
            #expect(rows.map { $0["Z1_BOOK"] as Int } == [numbers["Novel"]!, numbers["Book"]!, numbers["Book"]!])
        }
        #expect(try pages(url) == [1: "Novel", 2: "Book", 3: "Book"])
    }

    /// Rows decode from the column (not from the destination's table): a column that says Book
    /// gives a Book even where the destination row is a Novel.
    @Test func rowsDecodeFromTheColumn() throws {
        let url = try makeStore()
        let queue = try DatabaseQueue(path: url.path)
        try queue.write { db in try db.execute(sql: "UPDATE ZPAGE SET Z1_BOOK = (SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'Book') WHERE ZNUMBER = 1") }
        try queue.close()
        #expect(try pages(url)[1] == "Book")
        #expect(try pageDictionaries(url)[1] == "Book")
    }

    /// Dictionary results name each object by its own entity, with the entity numbers read in
    /// the fetch's one statement: a to-one key, `self`, and the evaluated object.
    @Test func dictionaryResultsCarryTheEntityWithoutAQueryPerRow() throws {
        let url = try makeStore()
        let (dictionaries, log) = try SQLDebugLog.capturing { try pageDictionaries(url) }
        #expect(dictionaries == [1: "Novel", 2: "Book", 3: "Book"])
        let statements = log.filter { $0.hasPrefix("sql:") }
        #expect(statements.count == 1 && statements[0].contains("t0.Z1_BOOK"), "\(log)")

        let (coordinator, _) = try TestSupport.coordinator(Self.model(), url: url)
        let context = TestSupport.context(coordinator)
        let request = NSFetchRequest<NSDictionary>(entityName: "Book")
        request.resultType = .dictionaryResultType
        let object = NSExpressionDescription()
        object.name = "object"
        object.expression = NSExpression.expressionForEvaluatedObject()
        object.expressionResultType = .objectIDAttributeType
        request.propertiesToFetch = ["title", "self", object]
        let (rows, bookLog) = try SQLDebugLog.capturing { try context.fetch(request) }
        var entities: [String: [String]] = [:]
        for row in rows {
            let ids = [row["self"], row["object"]].map { ($0 as? NSManagedObjectID)?.entity.name ?? "none" }
            entities[row["title"] as! String] = ids
        }
        #expect(entities == ["Dune": ["Novel", "Novel"], "Atlas": ["Book", "Book"]])
        #expect(bookLog.filter { $0.hasPrefix("sql:") }.count == 1, "\(bookLog)")
    }

    /// A store written before the column existed still reads right (from the destination rows)
    /// and keeps working without it.
    @Test func aStoreWithoutTheColumnStillWorks() throws {
        let url = try makeStore()
        let queue = try DatabaseQueue(path: url.path)
        try queue.write { db in try db.execute(sql: "ALTER TABLE ZPAGE DROP COLUMN Z1_BOOK") }
        try queue.close()
        #expect(try pages(url) == [1: "Novel", 2: "Book", 3: "Book"])
        // The entity numbers come with the rows, from a subquery in the fetch's own statement:
        // no query per row.
        let (pagesRead, log) = try SQLDebugLog.capturing { try pages(url) }
        #expect(pagesRead == [1: "Novel", 2: "Book", 3: "Book"])
        let statements = log.filter { $0.hasPrefix("sql:") }
        #expect(statements.count == 1 && statements[0].contains("(SELECT d.Z_ENT FROM ZBOOK d WHERE d.Z_PK = t0.ZBOOK)"), "\(log)")
        let (dictionaries, dictionaryLog) = try SQLDebugLog.capturing { try pageDictionaries(url) }
        #expect(dictionaries == [1: "Novel", 2: "Book", 3: "Book"])
        let dictionaryStatements = dictionaryLog.filter { $0.hasPrefix("sql:") }
        #expect(dictionaryStatements.count == 1 && dictionaryStatements[0].contains("(SELECT d.Z_ENT FROM ZBOOK d WHERE d.Z_PK = t0.ZBOOK)"), "\(dictionaryLog)")
        let (coordinator, _) = try TestSupport.coordinator(Self.model(), url: url)
        let context = TestSupport.context(coordinator)
        let novel = try #require(try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Novel")).first)
        let page = NSEntityDescription.insertNewObject(forEntityName: "Page", into: context)
        page.setValue(Int64(4), forKey: "number")
        page.setValue(novel, forKey: "book")
        try context.save()
        try coordinator.remove(coordinator.persistentStores[0])
        #expect(try pages(url)[4] == "Novel")
    }
}
