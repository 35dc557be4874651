import Foundation
import OpenCoreData
import Testing

/// Fetched properties (`NSFetchedPropertyDescription`): evaluated when first read, with
/// `$FETCH_SOURCE` standing for the object, then kept until the object is refreshed.
@Suite struct FetchedPropertyTests {
    /// Author with `longBooks`: the books whose author is the source and that have over 100
    /// pages, by title. Books have no relationship back that the property uses.
    private func makeModel() -> NSManagedObjectModel {
        let author = NSEntityDescription(name: "Author", className: "NSManagedObject")
        let book = NSEntityDescription(name: "Book", className: "NSManagedObject")
        let (authorBooks, bookAuthor) = TestSupport.relationships("books", from: author, toMany: true, inverse: "author", to: book)
        let longBooks = NSFetchedPropertyDescription()
        longBooks.name = "longBooks"
        let request = NSFetchRequest<NSFetchRequestResult>(entityName: "Book")
        request.predicate = NSPredicate(format: "author == $FETCH_SOURCE AND pages > 100")
        request.sortDescriptors = [NSSortDescriptor(key: "title", ascending: true)]
        longBooks.fetchRequest = request
        author.properties = [NSAttributeDescription(name: "name", type: .stringAttributeType), authorBooks, longBooks]
        book.properties = [NSAttributeDescription(name: "title", type: .stringAttributeType),
                           NSAttributeDescription(name: "pages", type: .integer64AttributeType), bookAuthor]
        let model = NSManagedObjectModel()
        model.entities = [author, book]
        return model
    }

    private func book(_ title: String, _ pages: Int64, by author: NSManagedObject, in context: NSManagedObjectContext) {
        let book = NSEntityDescription.insertNewObject(forEntityName: "Book", into: context)
        book.setValue(title, forKey: "title")
        book.setValue(pages, forKey: "pages")
        book.setValue(author, forKey: "author")
    }

    private func titles(_ value: Any?) -> [String]? {
        (value as? [Any])?.compactMap { ($0 as? NSManagedObject)?.value(forKey: "title") as? String }
    }

    @Test func aFetchedPropertyIsFetchedOnFirstReadAndKeptUntilRefreshed() throws {
        let (coordinator, _) = try TestSupport.coordinator(makeModel())
        let context = TestSupport.context(coordinator)
        let zola = NSEntityDescription.insertNewObject(forEntityName: "Author", into: context)
        zola.setValue("Zola", forKey: "name")
        let hugo = NSEntityDescription.insertNewObject(forEntityName: "Author", into: context)
        hugo.setValue("Hugo", forKey: "name")
        book("Nana", 90, by: zola, in: context)
        book("Germinal", 250, by: zola, in: context)
        book("L'Assommoir", 300, by: zola, in: context)
        book("Les Misérables", 1500, by: hugo, in: context)
        try context.save()

        #expect(titles(zola.value(forKey: "longBooks")) == ["Germinal", "L'Assommoir"], "the source's books over 100 pages, sorted")
        #expect(titles(hugo.value(forKey: "longBooks")) == ["Les Misérables"])
        #expect(!context.hasChanges, "reading a fetched property changes nothing")

        // A new matching book is not seen until the author is refreshed: the result is kept.
        book("La Terre", 400, by: zola, in: context)
        try context.save()
        #expect(titles(zola.value(forKey: "longBooks")) == ["Germinal", "L'Assommoir"])
        context.refresh(zola, mergeChanges: true)
        #expect(titles(zola.value(forKey: "longBooks")) == ["Germinal", "L'Assommoir", "La Terre"])
        book("Le Rêve", 200, by: zola, in: context)
        try context.save()
        context.refresh(zola, mergeChanges: false)
        #expect(zola.isFault)
        #expect(titles(zola.value(forKey: "longBooks")) == ["Germinal", "L'Assommoir", "La Terre", "Le Rêve"])

        // Another context evaluates its own, and reset forgets them all.
        let other = TestSupport.context(coordinator)
        let otherZola = try other.existingObject(with: zola.objectID)
        #expect(titles(otherZola.value(forKey: "longBooks"))?.count == 4)
        book("Au Bonheur des Dames", 500, by: otherZola, in: other)
        try other.save()
        #expect(titles(otherZola.value(forKey: "longBooks"))?.count == 4)
        other.reset()
        #expect(titles(try other.existingObject(with: zola.objectID).value(forKey: "longBooks"))?.count == 5)
        // Fetched properties are not stored: the save above wrote no column for them.
        #expect(zola.changedValues().isEmpty)
    }

    @Test func theKitchenSinkModelsFetchedPropertyFetches() throws {
        // MainEntity.fetchedProperty fetches every NewEntity ("true == true").
        let context = try TestSupport.kitchenSink().context
        let main = TestSupport.insertKitchenSinkObject(into: context)
        for _ in 0..<2 { NSEntityDescription.insertNewObject(forEntityName: "NewEntity", into: context).setValue(UUID(), forKey: "identifier") }
        try context.save()
        let fetched = try #require(main.value(forKey: "fetchedProperty") as? [Any])
        #expect(fetched.count == 2)
        #expect(fetched.allSatisfy { ($0 as? NSManagedObject)?.entity.name == "NewEntity" })
    }
}
