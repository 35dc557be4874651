import Foundation
import OpenCoreData
import Testing

/// Derived attributes (`NSDerivedAttributeDescription`) in the SQLite store: computed by the store
/// in each save's transaction, read back into the saved objects, kept current when what they
/// derive from changes in another table, and refused when of a form no store can derive. The
/// scenarios are static so that `PostgreSQLDerivedAttributeTests` runs them on a server store.
@Suite struct DerivedAttributeTests {
    /// Makes a coordinator with a new, empty store of the kind under test.
    typealias StoreMaker = (NSManagedObjectModel) throws -> NSPersistentStoreCoordinator

    private static func sqlite(_ model: NSManagedObjectModel) throws -> NSPersistentStoreCoordinator {
        try TestSupport.coordinator(model).0
    }

    static func derived(_ name: String, _ type: NSAttributeType, _ expression: String, optional: Bool = true) -> NSDerivedAttributeDescription {
        let attribute = NSDerivedAttributeDescription(name: name, type: type, isOptional: optional)
        attribute.derivationExpression = NSExpression(format: expression)
        return attribute
    }

    /// Publisher ←→> Author ←→> Book <<→> Tag, with derived attributes of every supported form.
    static func makeModel(extra: NSDerivedAttributeDescription? = nil, dropping dropped: String? = nil) -> NSManagedObjectModel {
        let publisher = NSEntityDescription(name: "Publisher", className: "NSManagedObject")
        let author = NSEntityDescription(name: "Author", className: "NSManagedObject")
        let book = NSEntityDescription(name: "Book", className: "NSManagedObject")
        let tag = NSEntityDescription(name: "Tag", className: "NSManagedObject")
        let (publisherAuthors, authorPublisher) = TestSupport.relationships("authors", from: publisher, toMany: true, inverse: "publisher", to: author)
        let (authorBooks, bookAuthor) = TestSupport.relationships("books", from: author, toMany: true, inverse: "author", to: book)
        let (bookTags, tagBooks) = TestSupport.relationships("tags", from: book, toMany: true, inverse: "books", to: tag, inverseToMany: true)
        publisher.properties = [NSAttributeDescription(name: "name", type: .stringAttributeType), publisherAuthors]
        author.properties = [
            NSAttributeDescription(name: "name", type: .stringAttributeType), authorPublisher, authorBooks,
            derived("bookCount", .integer64AttributeType, "books.@count"),
            derived("pageTotal", .integer64AttributeType, "books.@sum.pages"),
            derived("searchName", .stringAttributeType, "canonical:(name)"),
            derived("shout", .stringAttributeType, "uppercase:(name)"),
            // Not optional: the store fills it, so a save must not ask the object for it.
            derived("touched", .dateAttributeType, "now()", optional: false),
        ].filter { $0.name != dropped } + (extra.map { [$0] } ?? [])
        book.properties = [
            NSAttributeDescription(name: "title", type: .stringAttributeType),
            NSAttributeDescription(name: "pages", type: .integer64AttributeType, defaultValue: Int64(0)),
            bookAuthor, bookTags,
            derived("authorName", .stringAttributeType, "author.name"),
            derived("authorKey", .stringAttributeType, "lowercase:(author.name)"),
            derived("publisherName", .stringAttributeType, "author.publisher.name"),
            derived("tagCount", .integer64AttributeType, "tags.@count"),
        ]
        tag.properties = [NSAttributeDescription(name: "label", type: .stringAttributeType), tagBooks]
        let model = NSManagedObjectModel()
        model.entities = [publisher, author, book, tag]
        return model
    }

    static func insert(_ entity: String, _ values: [String: Any], into context: NSManagedObjectContext) -> NSManagedObject {
        let object = NSEntityDescription.insertNewObject(forEntityName: entity, into: context)
        for (key, value) in values { object.setValue(value, forKey: key) }
        return object
    }

    /// One object of an entity, fetched afresh from the store by a key's value.
    static func stored(_ entity: String, _ key: String, _ value: Any, in coordinator: NSPersistentStoreCoordinator) throws -> NSManagedObject {
        let request = NSFetchRequest<NSManagedObject>(entityName: entity)
        request.predicate = NSPredicate(format: "%K == %@", key, value as! CVarArg)
        return try #require(try TestSupport.context(coordinator).fetch(request).first, "\(entity) with \(key) \(value)")
    }

    @Test func valuesAreDerivedInTheSaveAndReadBackIntoTheObjects() throws {
        try Self.valuesAreDerivedInTheSaveAndReadBack(Self.sqlite)
    }

    static func valuesAreDerivedInTheSaveAndReadBack(_ makeStore: StoreMaker) throws {
        let coordinator = try makeStore(makeModel())
        let context = TestSupport.context(coordinator)
        let publisher = insert("Publisher", ["name": "Charpentier"], into: context)
        let author = insert("Author", ["name": "Émile Zola", "publisher": publisher], into: context)
        let novel = insert("Book", ["title": "Germinal", "pages": Int64(250), "author": author], into: context)
        let other = insert("Book", ["title": "Nana", "pages": Int64(100), "author": author], into: context)
        let classic = insert("Tag", ["label": "classic"], into: context)
        let french = insert("Tag", ["label": "french"], into: context)
        novel.mutableSetValue(forKey: "tags").add(classic)
        novel.mutableSetValue(forKey: "tags").add(french)
        other.mutableSetValue(forKey: "tags").add(french)
        #expect(author.value(forKey: "bookCount") == nil, "nothing is derived before the save")
        let before = Date()
        try context.save()

        #expect(author.value(forKey: "bookCount") as? Int64 == 2)
        #expect(author.value(forKey: "pageTotal") as? Int64 == 350)
        #expect(author.value(forKey: "searchName") as? String == "emile zola")
        #expect(author.value(forKey: "shout") as? String == "ÉMILE ZOLA")
        let touched = try #require(author.value(forKey: "touched") as? Date)
        #expect(touched.timeIntervalSince(before) > -1 && touched.timeIntervalSinceNow < 1)
        #expect(novel.value(forKey: "authorName") as? String == "Émile Zola")
        #expect(novel.value(forKey: "authorKey") as? String == "émile zola")
        #expect(novel.value(forKey: "publisherName") as? String == "Charpentier")
        #expect(novel.value(forKey: "tagCount") as? Int64 == 2)
        #expect(other.value(forKey: "tagCount") as? Int64 == 1)
        #expect(!author.hasChanges && !context.hasChanges, "reading back derived values is not a change")

        // Derived columns are ordinary columns to fetches: a case- and diacritic-free search.
        let search = NSFetchRequest<NSManagedObject>(entityName: "Author")
        search.predicate = NSPredicate(format: "searchName == %@", "emile zola")
        #expect(try TestSupport.context(coordinator).fetch(search).count == 1)
        let busy = NSFetchRequest<NSManagedObject>(entityName: "Author")
        busy.predicate = NSPredicate(format: "bookCount >= 2")
        #expect(try TestSupport.context(coordinator).count(for: busy) == 1)
    }

    @Test func changesElsewhereRecomputeTheValuesThatDependOnThem() throws {
        try Self.changesElsewhereRecompute(Self.sqlite)
    }

    static func changesElsewhereRecompute(_ makeStore: StoreMaker) throws {
        let coordinator = try makeStore(makeModel())
        let context = TestSupport.context(coordinator)
        let publisher = insert("Publisher", ["name": "Charpentier"], into: context)
        let zola = insert("Author", ["name": "Zola", "publisher": publisher], into: context)
        let hugo = insert("Author", ["name": "Hugo"], into: context)
        let germinal = insert("Book", ["title": "Germinal", "pages": Int64(250), "author": zola], into: context)
        let nana = insert("Book", ["title": "Nana", "pages": Int64(100), "author": zola], into: context)
        _ = insert("Book", ["title": "Thérèse", "pages": Int64(50), "author": zola], into: context)
        let tag = insert("Tag", ["label": "classic"], into: context)
        germinal.mutableSetValue(forKey: "tags").add(tag)
        try context.save()

        // Renaming the author (only the author is saved) renames the books' copies.
        zola.setValue("Émile Zola", forKey: "name")
        try context.save()
        #expect(try stored("Book", "title", "Germinal", in: coordinator).value(forKey: "authorName") as? String == "Émile Zola")
        #expect(try stored("Book", "title", "Nana", in: coordinator).value(forKey: "authorKey") as? String == "émile zola")
        // Two relationships away.
        publisher.setValue("Fasquelle", forKey: "name")
        try context.save()
        #expect(try stored("Book", "title", "Germinal", in: coordinator).value(forKey: "publisherName") as? String == "Fasquelle")

        // A book's pages, its move to another author and its deletion update the counts and sums.
        germinal.setValue(Int64(300), forKey: "pages")
        try context.save()
        #expect(try stored("Author", "name", "Émile Zola", in: coordinator).value(forKey: "pageTotal") as? Int64 == 450)
        nana.setValue(hugo, forKey: "author")
        try context.save()
        #expect(try stored("Author", "name", "Émile Zola", in: coordinator).value(forKey: "bookCount") as? Int64 == 2)
        #expect(try stored("Author", "name", "Hugo", in: coordinator).value(forKey: "bookCount") as? Int64 == 1)
        #expect(hugo.value(forKey: "pageTotal") as? Int64 == 100, "the saved new owner read its values back")
        context.delete(nana)
        try context.save()
        #expect(try stored("Author", "name", "Hugo", in: coordinator).value(forKey: "bookCount") as? Int64 == 0)
        #expect(try stored("Author", "name", "Hugo", in: coordinator).value(forKey: "pageTotal") as? Int64 == 0)
        // Many-to-many: removing the tag.
        germinal.mutableSetValue(forKey: "tags").remove(tag)
        try context.save()
        #expect(try stored("Book", "title", "Germinal", in: coordinator).value(forKey: "tagCount") as? Int64 == 0)
        // A deleted publisher leaves nothing to copy.
        context.delete(publisher)
        try context.save()
        #expect(try stored("Book", "title", "Germinal", in: coordinator).value(forKey: "publisherName") == nil)

        // Batch requests go through the same triggers.
        let update = NSBatchUpdateRequest(entityName: "Book")
        update.propertiesToUpdate = ["pages": Int64(10)]
        _ = try context.execute(update)
        #expect(try stored("Author", "name", "Émile Zola", in: coordinator).value(forKey: "pageTotal") as? Int64 == 20)
        let delete = NSBatchDeleteRequest(fetchRequest: NSFetchRequest<NSFetchRequestResult>(entityName: "Book"))
        _ = try context.execute(delete)
        #expect(try stored("Author", "name", "Émile Zola", in: coordinator).value(forKey: "bookCount") as? Int64 == 0)
    }

    /// A lightweight migration that adds a derived attribute derives it for the rows already
    /// there, before anything is saved.
    @Test func aMigrationThatAddsADerivedAttributeDerivesItForExistingRows() throws {
        let url = TestSupport.temporaryDirectory().appendingPathComponent("Library.sqlite")
        try Self.migrationDerivesForExistingRows(type: NSSQLiteStoreType, url: url)
    }

    static func migrationDerivesForExistingRows(type: String, url: URL) throws {
        do {
            let coordinator = NSPersistentStoreCoordinator(managedObjectModel: makeModel(dropping: "bookCount"))
            try coordinator.addPersistentStore(ofType: type, configurationName: nil, at: url, options: nil)
            let context = TestSupport.context(coordinator)
            let author = insert("Author", ["name": "Zola"], into: context)
            for title in ["Germinal", "Nana", "Thérèse Raquin"] { _ = insert("Book", ["title": title, "author": author], into: context) }
            try context.save()
            for store in coordinator.persistentStores { try coordinator.remove(store) }
        }
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: makeModel())
        try coordinator.addPersistentStore(ofType: type, configurationName: nil, at: url,
                                           options: TestSupport.migrating(from: [makeModel(dropping: "bookCount")]))
        #expect(try stored("Author", "name", "Zola", in: coordinator).value(forKey: "bookCount") as? Int64 == 3)
        #expect(try stored("Book", "title", "Nana", in: coordinator).value(forKey: "authorName") as? String == "Zola", "the other derived values survive")
        // The triggers came through the migration too.
        let context = TestSupport.context(coordinator)
        let author = try stored("Author", "name", "Zola", in: coordinator)
        _ = insert("Book", ["title": "L'Assommoir", "author": try context.existingObject(with: author.objectID)], into: context)
        try context.save()
        #expect(try stored("Author", "name", "Zola", in: coordinator).value(forKey: "bookCount") as? Int64 == 4)
    }

    @Test func theTimeIsTakenAgainWhenTheObjectIsSavedAgain() throws {
        try Self.timeIsTakenAgain(Self.sqlite)
    }

    static func timeIsTakenAgain(_ makeStore: StoreMaker) throws {
        let coordinator = try makeStore(makeModel())
        let context = TestSupport.context(coordinator)
        let author = insert("Author", ["name": "Zola"], into: context)
        try context.save()
        let first = try #require(author.value(forKey: "touched") as? Date)
        Thread.sleep(forTimeInterval: 0.01)
        author.setValue("Émile Zola", forKey: "name")
        try context.save()
        let second = try #require(author.value(forKey: "touched") as? Date)
        #expect(second > first)
        #expect(try stored("Author", "name", "Émile Zola", in: coordinator).value(forKey: "touched") as? Date == second)
    }

    @Test func aDerivationNoStoreCanComputeRefusesTheStore() throws {
        let directory = TestSupport.temporaryDirectory()
        let url = directory.appendingPathComponent("Refused.sqlite")
        for expression in ["books.@avg.pages", "name.@count", "books.title", "lowercase:(bookCount)", "random()"] {
            let model = Self.makeModel(extra: Self.derived("odd", .integer64AttributeType, expression))
            let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
            let error = try #require(throws: NSError.self, "\(expression)") {
                try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url, options: nil)
            }
            #expect(error.code == NSPersistentStoreIncompatibleSchemaError, "\(expression)")
            #expect(error.localizedDescription.contains("Author.odd"), "\(error.localizedDescription)")
            #expect(!FileManager.default.fileExists(atPath: url.path), "no file is made for a refused model")
        }
    }

    @Test func anXcodeModelDerivesWhatItDeclares() throws {
        // Model 2 of the SwiftGen kitchen sink declares canonical:(optionalString), oneToMany.@count
        // and a non-optional now().
        let (model, _, context) = try TestSupport.kitchenSink()
        let child = try #require(model.entitiesByName["ChildEntity"])
        #expect((child.attributesByName["derivedCount"] as? NSDerivedAttributeDescription)?.derivationExpression?.keyPath == "oneToMany.@count")
        let object = TestSupport.insertKitchenSinkObject("ChildEntity", into: context)
        object.setValue("Ärger im Öl", forKey: "optionalString")
        for name in ["a", "b", "c"] {
            let secondary = NSEntityDescription.insertNewObject(forEntityName: "SecondaryEntity", into: context)
            secondary.setValue(name, forKey: "name")
            object.mutableOrderedSetValue(forKey: "oneToMany").add(secondary)
        }
        try context.save()
        #expect(object.value(forKey: "canonicalOptionalString") as? String == "arger im ol")
        #expect(object.value(forKey: "derivedCount") as? Int64 == 3)
        #expect((object.value(forKey: "now") as? Double).map { abs($0 - Date().timeIntervalSinceReferenceDate) < 5 } == true)
    }

    @Test func aModelFileWithAnUnreadableDerivationNamesItsLine() throws {
        let directory = TestSupport.temporaryDirectory()
        let file = directory.appendingPathComponent("contents")
        try """
        <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
        <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0">
            <entity name="Thing" representedClassName="Thing">
                <attribute name="name" optional="YES" attributeType="String"/>
                <attribute name="key" optional="YES" attributeType="String" derived="YES" derivationExpression="lowercase:(name"/>
            </entity>
        </model>
        """.write(to: file, atomically: true, encoding: .utf8)
        let error = try #require(throws: NSError.self) { _ = try NSManagedObjectModel.load(contentsOf: file) }
        #expect(error.localizedDescription.contains("derivationExpression"))
        #expect(error.userInfo["NSLineNumber"] as? Int == 5)
    }
}
