import Foundation
import OpenCoreData
import Testing

// Custom accessors written as Apple's accessor-method guide writes them: a property of the
// class's own wrapping a primitive accessor (`@NSManaged var primitiveTitle`, ported as
// `@Managed`) between the access and change notifications, and to-many accessors that announce
// a set mutation around their change.

final class Ledger: NSManagedObject {
    @Managed private var primitiveTitle: String?
    @Managed private var primitiveTotal: Int64
    @Managed private var primitiveOwner: LedgerEntry?
    @Managed private var primitiveEntries: NSSet?
    @Managed var entries: NSSet?

    /// A title kept trimmed, through the primitive accessor.
    var title: String? {
        get {
            willAccessValue(forKey: "title")
            defer { didAccessValue(forKey: "title") }
            return primitiveTitle
        }
        set {
            willChangeValue(forKey: "title")
            defer { didChangeValue(forKey: "title") }
            primitiveTitle = newValue?.trimmingCharacters(in: .whitespaces)
        }
    }

    var total: Int64 {
        get {
            willAccessValue(forKey: "total")
            defer { didAccessValue(forKey: "total") }
            return primitiveTotal
        }
        set {
            willChangeValue(forKey: "total")
            defer { didChangeValue(forKey: "total") }
            primitiveTotal = newValue
        }
    }

    /// The to-one read through its primitive accessor (no inverse maintenance there).
    var ownerThroughPrimitive: LedgerEntry? { primitiveOwner }
    /// The to-many read through its primitive accessor: a copy of the set.
    var entriesThroughPrimitive: NSSet? { primitiveEntries }

    /// A hand-written to-many accessor: the change announced as a set mutation.
    func addEntriesObject(_ entry: LedgerEntry) {
        let changed: Set<AnyHashable> = [entry]
        willChangeValue(forKey: "entries", withSetMutation: .union, using: changed)
        mutableSetValue(forKey: "entries").add(entry)
        didChangeValue(forKey: "entries", withSetMutation: .union, using: changed)
    }

    func removeEntriesObject(_ entry: LedgerEntry) {
        let changed: Set<AnyHashable> = [entry]
        willChangeValue(forKey: "entries", withSetMutation: .minus, using: changed)
        mutableSetValue(forKey: "entries").remove(entry)
        didChangeValue(forKey: "entries", withSetMutation: .minus, using: changed)
    }
}

final class LedgerEntry: NSManagedObject {
    @Managed var amount: Int64
    @Managed var ledger: Ledger?
}

@Suite struct CustomAccessorTests {
    private static func model() -> NSManagedObjectModel {
        let ledger = NSEntityDescription()
        ledger.name = "Ledger"
        ledger.managedObjectClassName = "Ledger"
        let entry = NSEntityDescription()
        entry.name = "LedgerEntry"
        entry.managedObjectClassName = "LedgerEntry"
        let title = NSAttributeDescription(name: "title", type: .stringAttributeType)
        let total = NSAttributeDescription(name: "total", type: .integer64AttributeType)
        total.isOptional = false
        total.defaultValue = Int64(0)
        let amount = NSAttributeDescription(name: "amount", type: .integer64AttributeType)
        let entries = NSRelationshipDescription()
        entries.name = "entries"
        entries.destinationEntity = entry
        entries.maxCount = 0
        entries.deleteRule = .cascadeDeleteRule
        let owner = NSRelationshipDescription()
        owner.name = "owner"
        owner.destinationEntity = entry
        owner.maxCount = 1
        let back = NSRelationshipDescription()
        back.name = "ledger"
        back.destinationEntity = ledger
        back.maxCount = 1
        entries.inverseRelationship = back
        back.inverseRelationship = entries
        ledger.properties = [title, total, entries, owner]
        entry.properties = [amount, back]
        let model = NSManagedObjectModel()
        model.entities = [ledger, entry]
        return model
    }

    private func context() throws -> NSManagedObjectContext {
        let (coordinator, _) = try TestSupport.coordinator(Self.model())
        return TestSupport.context(coordinator)
    }

    /// `@Managed var primitiveTitle` is the primitive accessor of `title`: the custom accessor's
    /// value is what the store keeps and what key-value coding reads, and its change is saved.
    @Test func primitiveAccessorsReadAndWriteTheirProperty() throws {
        let context = try context()
        let ledger = Ledger(context: context)
        ledger.title = "  Groceries "
        ledger.total = 42
        #expect(ledger.title == "Groceries")
        #expect(ledger.value(forKey: "title") as? String == "Groceries")
        #expect(ledger.primitiveValue(forKey: "total") as? Int64 == 42)
        try context.save()

        ledger.title = "Rent "
        #expect(ledger.isUpdated, "didChangeValue(forKey:) around a primitive set records the change")
        #expect(ledger.changedValues()["title"] as? String == "Rent")
        try context.save()

        let other = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        other.persistentStoreCoordinator = context.persistentStoreCoordinator
        try other.performAndWait {
            let fetched = try #require(try other.fetch(NSFetchRequest<Ledger>(entityName: "Ledger")).first)
            #expect(fetched.isFault)
            #expect(fetched.title == "Rent", "the primitive accessor fires the fault")
            #expect(fetched.total == 42)
        }
    }

    /// Primitive relationship accessors read the related objects.
    @Test func primitiveRelationshipAccessorsReadTheObjects() throws {
        let context = try context()
        let ledger = Ledger(context: context)
        let entry = LedgerEntry(context: context)
        ledger.setValue(entry, forKey: "owner")
        #expect(ledger.ownerThroughPrimitive === entry)
        #expect(ledger.entriesThroughPrimitive?.count == 0)
        ledger.addEntriesObject(entry)
        #expect(ledger.entriesThroughPrimitive?.count == 1)
    }

    /// Hand-written to-many accessors that announce a set mutation record the change, maintain
    /// the inverse, and save.
    @Test func setMutationNotificationsRecordTheChange() throws {
        let context = try context()
        let ledger = Ledger(context: context)
        ledger.title = "Trip"
        try context.save()

        let entry = LedgerEntry(context: context)
        entry.amount = 12
        ledger.addEntriesObject(entry)
        #expect(entry.ledger === ledger)
        #expect(ledger.isUpdated)
        try context.save()
        #expect(ledger.entries?.count == 1)

        ledger.removeEntriesObject(entry)
        #expect(entry.ledger == nil)
        #expect(ledger.hasChanges)
        try context.save()
        context.refresh(ledger, mergeChanges: false)
        #expect(ledger.entries?.count == 0)
    }

    /// A set mutation announced on a saved object with nothing else changed still marks it
    /// updated, as `didChangeValue(forKey:)` does; undo restores the relationship.
    @Test func setMutationNotificationsJoinUndo() throws {
        let context = try context()
        context.undoManager = UndoManager()
        let ledger = Ledger(context: context)
        let entry = LedgerEntry(context: context)
        try context.save()
        context.processPendingChanges()
        context.undoManager?.removeAllActions()

        ledger.addEntriesObject(entry)
        context.processPendingChanges()
        #expect(ledger.entries?.count == 1)
        context.undoManager?.undo()
        #expect(ledger.entries?.count == 0)
    }

    /// Ordered changes announced with `willChange(_:valuesAt:forKey:)` record the change.
    @Test func orderedChangeNotificationsRecordTheChange() throws {
        let model = try TestSupport.model("dogwalk", "DogWalk")
        let (coordinator, _) = try TestSupport.coordinator(model)
        let context = TestSupport.context(coordinator)
        let dog = NSEntityDescription.insertNewObject(forEntityName: "Dog", into: context)
        try context.save()
        let walk = NSEntityDescription.insertNewObject(forEntityName: "Walk", into: context)
        dog.willChange(.insertion, valuesAt: IndexSet(integer: 0), forKey: "walks")
        dog.mutableOrderedSetValue(forKey: "walks").insert(walk, at: 0)
        dog.didChange(.insertion, valuesAt: IndexSet(integer: 0), forKey: "walks")
        #expect(dog.isUpdated)
        try context.save()
        #expect((dog.value(forKey: "walks") as? NSOrderedSet)?.count == 1)
    }
}
