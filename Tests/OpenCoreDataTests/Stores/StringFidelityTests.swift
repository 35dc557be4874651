import Foundation
import OpenCoreData
import Testing

/// A string attribute is stored whole and read back whole by every store: NUL characters,
/// replaced lone surrogates, non-BMP characters and a megabyte of text.
@Suite("String fidelity")
struct StringFidelityTests {
    static let values: [String] = [
        "Zero\u{0}Byte",
        "\u{0}",
        "\u{0}\u{0}leading and trailing\u{0}",
        NSString(characters: [0x0041, 0xD800, 0x0042], length: 3) as String, // a lone high surrogate
        NSString(characters: [0xDC00], length: 1) as String,                  // a lone low surrogate
        "emoji 👩‍👩‍👧 and 𝄞 and e\u{301}",
        String(repeating: "0123456789abcdef", count: 65_536) + "\u{0}end", // 1 MiB and a NUL
    ]

    static func model() -> NSManagedObjectModel {
        let note = NSEntityDescription(name: "Note", className: "NSManagedObject")
        note.properties = [
            NSAttributeDescription(name: "index", type: .integer64AttributeType, isOptional: false),
            NSAttributeDescription(name: "text", type: .stringAttributeType),
        ]
        let model = NSManagedObjectModel()
        model.entities = [note]
        return model
    }

    @Test("saved and read back whole, through a fresh coordinator", arguments: [NSSQLiteStoreType, NSBinaryStoreType])
    func fileStores(type: String) throws {
        let model = Self.model()
        let (coordinator, url) = try TestSupport.coordinator(model, type: type)
        let context = TestSupport.context(coordinator)
        for (index, value) in Self.values.enumerated() {
            let note = NSEntityDescription.insertNewObject(forEntityName: "Note", into: context)
            note.setValue(Int64(index), forKey: "index")
            note.setValue(value, forKey: "text")
            #expect(note.value(forKey: "text") as? String == value, "the live object keeps value \(index)")
        }
        try context.save()

        let reopened = NSPersistentStoreCoordinator(managedObjectModel: model)
        try reopened.addPersistentStore(ofType: type, configurationName: nil, at: url, options: nil)
        let fresh = TestSupport.context(reopened)
        let request = NSFetchRequest<NSManagedObject>(entityName: "Note")
        request.sortDescriptors = [NSSortDescriptor(key: "index", ascending: true)]
        let notes = try fresh.fetch(request)
        #expect(notes.count == Self.values.count)
        for (note, value) in zip(notes, Self.values) {
            let text = note.value(forKey: "text") as? String
            #expect(text == value, "value \(note.value(forKey: "index") ?? "?"): \(text?.utf8.count ?? -1) bytes of \(value.utf8.count)")
        }

        // Updates, dictionary results and predicates see the whole value too.
        notes[0].setValue("Second\u{0}Save", forKey: "text")
        try fresh.save()
        fresh.refreshAllObjects()
        #expect(notes[0].value(forKey: "text") as? String == "Second\u{0}Save")
        let dictionaries = NSFetchRequest<NSDictionary>(entityName: "Note")
        dictionaries.resultType = .dictionaryResultType
        dictionaries.propertiesToFetch = ["text"]
        dictionaries.predicate = NSPredicate(format: "index == 1")
        #expect(try fresh.fetch(dictionaries).first?["text"] as? String == "\u{0}")
        let matching = NSFetchRequest<NSManagedObject>(entityName: "Note")
        matching.predicate = NSPredicate(format: "text == %@", "Second\u{0}Save")
        #expect(try fresh.count(for: matching) == 1)

        guard type == NSSQLiteStoreType else { return }
        let batch = NSBatchUpdateRequest(entityName: "Note")
        batch.predicate = NSPredicate(format: "text == %@", "\u{0}")
        batch.propertiesToUpdate = ["text": "Batch\u{0}Value"]
        batch.resultType = .updatedObjectsCountResultType
        #expect((try fresh.execute(batch) as? NSBatchUpdateResult)?.result as? Int == 1)
        fresh.refreshAllObjects()
        #expect(notes[1].value(forKey: "text") as? String == "Batch\u{0}Value")
    }

    @Test("the in-memory store keeps the value whole")
    func inMemory() throws {
        let (coordinator, _) = try TestSupport.coordinator(Self.model(), type: NSInMemoryStoreType)
        let context = TestSupport.context(coordinator)
        let note = NSEntityDescription.insertNewObject(forEntityName: "Note", into: context)
        note.setValue(Int64(0), forKey: "index")
        note.setValue("Zero\u{0}Byte", forKey: "text")
        try context.save()
        context.reset()
        let fetched = try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Note"))
        #expect(fetched.first?.value(forKey: "text") as? String == "Zero\u{0}Byte")
    }
}
