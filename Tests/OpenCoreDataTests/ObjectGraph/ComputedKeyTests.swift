import Foundation
import OpenCoreData
import Testing

/// A `fullName` computed from two attributes: "Ada Lovelace" is first "Ada", last "Lovelace".
protocol FirstAndLastNamed: AnyObject {
    var first: String? { get set }
    var last: String? { get set }
}

extension FirstAndLastNamed {
    var fullName: String {
        get { [first, last].compactMap { $0 }.joined(separator: " ") }
        set {
            let parts = newValue.split(separator: " ", maxSplits: 1).map(String.init)
            first = parts.first
            last = parts.count > 1 ? parts[1] : nil
        }
    }
}

/// A class whose `fullName` is answered by name as the README's porting rule says (on Apple's
/// platforms an `@objc var fullName` with a setter would be).
final class Contact: NSManagedObject, FirstAndLastNamed {
    @Managed var first: String?
    @Managed var last: String?
    @Managed var mentor: Contact?

    override func value(forKey key: String) -> Any? {
        key == "fullName" ? fullName : super.value(forKey: key)
    }

    override func setValue(_ value: Any?, forKey key: String) {
        if key == "fullName" {
            fullName = value as? String ?? ""
        } else {
            super.setValue(value, forKey: key)
        }
    }
}

/// The same computed key answered where key-value coding sends keys the entity has no property
/// for: `value(forUndefinedKey:)` and `setValue(_:forUndefinedKey:)`.
final class Pseudonym: NSManagedObject, FirstAndLastNamed {
    @Managed var first: String?
    @Managed var last: String?

    override func value(forUndefinedKey key: String) -> Any? {
        key == "fullName" ? fullName : super.value(forUndefinedKey: key)
    }

    override func setValue(_ value: Any?, forUndefinedKey key: String) {
        guard key == "fullName" else { return super.setValue(value, forUndefinedKey: key) }
        fullName = value as? String ?? ""
    }
}

/// Key-value coding of a computed key through `value(forKey:)` and `setValue(_:forKey:)`
/// overrides (or their undefined-key hooks): by key, by key path, in predicates and sort
/// descriptors evaluated in memory.
struct ComputedKeyTests {
    private static func context() throws -> NSManagedObjectContext {
        let named = { (name: String) in
            NSEntityDescription(name: name, className: name, properties: [
                NSAttributeDescription(name: "first", type: .stringAttributeType),
                NSAttributeDescription(name: "last", type: .stringAttributeType),
            ])
        }
        let (contact, pseudonym) = (named("Contact"), named("Pseudonym"))
        contact.properties.append(NSRelationshipDescription(name: "mentor", destination: contact))
        let model = NSManagedObjectModel()
        model.entities = [contact, pseudonym]
        return TestSupport.context(try TestSupport.coordinator(model).0)
    }

    @Test func aComputedKeyIsSetAndReadByName() throws {
        let context = try Self.context()
        let ada = Contact(context: context)
        ada.setValue("Ada Lovelace", forKey: "fullName")
        #expect(ada.first == "Ada" && ada.last == "Lovelace")
        #expect(ada.value(forKey: "fullName") as? String == "Ada Lovelace")

        let grace = Contact(context: context)
        grace.mentor = ada
        grace.setValue("Grace Hopper", forKeyPath: "fullName")
        grace.setValue("Augusta Ada King", forKeyPath: "mentor.fullName")
        #expect(ada.first == "Augusta" && ada.last == "Ada King")
        #expect(grace.value(forKeyPath: "mentor.fullName") as? String == "Augusta Ada King")
        #expect(grace.dictionaryWithValues(forKeys: ["fullName"])["fullName"] as? String == "Grace Hopper")

        try context.save()
        let stored = try TestSupport.context(context.persistentStoreCoordinator!).existingObject(with: ada.objectID)
        #expect(stored.value(forKey: "first") as? String == "Augusta", "what the setter wrote is saved")
    }

    @Test func predicatesAndSortDescriptorsInMemoryReadTheComputedKey() throws {
        let context = try Self.context()
        let ada = Contact(context: context)
        ada.fullName = "Ada Lovelace"
        let grace = Contact(context: context)
        grace.fullName = "Grace Hopper"
        grace.mentor = ada

        #expect(NSPredicate(format: "fullName BEGINSWITH 'Ada'").evaluate(with: ada))
        #expect(!NSPredicate(format: "fullName BEGINSWITH 'Ada'").evaluate(with: grace))
        #expect(NSPredicate(format: "mentor.fullName == 'Ada Lovelace'").evaluate(with: grace))
        let byName = NSSortDescriptor(key: "fullName", ascending: false)
        #expect(byName.compare(ada, to: grace) == .orderedDescending)
    }

    @Test func theUndefinedKeyHooksAnswerAComputedKey() throws {
        let context = try Self.context()
        let mark = Pseudonym(context: context)
        mark.setValue("Mark Twain", forKey: "fullName")
        #expect(mark.first == "Mark" && mark.last == "Twain")
        #expect(mark.value(forKey: "fullName") as? String == "Mark Twain")
        let george = Pseudonym(context: context)
        george["fullName"] = "George Eliot"
        #expect(george["fullName"] as? String == "George Eliot")
        george.setValuesForKeys(["fullName": "George Sand"])
        #expect(george.last == "Sand")
        #expect(NSPredicate(format: "fullName ENDSWITH 'Twain'").evaluate(with: mark))
        #expect(NSSortDescriptor(key: "fullName", ascending: true).compare(george, to: mark) == .orderedAscending)
        let request = NSFetchRequest<Pseudonym>(entityName: "Pseudonym")
        request.sortDescriptors = [NSSortDescriptor(key: "first", ascending: true)]
        #expect(try context.fetch(request).map { $0.value(forKey: "fullName") as? String } == ["George Sand", "Mark Twain"])
    }

    /// NSManagedObject's own properties answer by name, as Objective-C's key-value coding answers
    /// them on Apple's platforms: in key paths, predicates and sort descriptors.
    @Test func theObjectsOwnPropertiesAnswerByName() throws {
        let context = try Self.context()
        let ada = Contact(context: context)
        ada.fullName = "Ada Lovelace"
        let grace = Contact(context: context)
        grace.mentor = ada
        try context.save()
        grace.first = "Grace"
        #expect(ada.value(forKey: "managedObjectContext") as? NSManagedObjectContext === context)
        #expect(ada.value(forKey: "entity") as? NSEntityDescription === ada.entity)
        #expect(ada.value(forKey: "objectID") as? NSManagedObjectID == ada.objectID)
        #expect(grace.value(forKeyPath: "mentor.objectID") as? NSManagedObjectID == ada.objectID)
        #expect(grace.value(forKey: "hasChanges") as? Bool == true && ada.value(forKey: "hasChanges") as? Bool == false)
        #expect(grace.value(forKey: "isUpdated") as? Bool == true)
        #expect(grace.value(forKey: "isInserted") as? Bool == false && grace.value(forKey: "isDeleted") as? Bool == false)
        #expect(NSPredicate(format: "hasChanges == YES").evaluate(with: grace))
        #expect(NSPredicate(format: "mentor.objectID == %@", ada.objectID).evaluate(with: grace))
        context.delete(ada)
        #expect(NSPredicate(format: "isDeleted == YES").evaluate(with: ada))
    }
}
