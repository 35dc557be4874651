import Foundation
import OpenCoreData
import Testing

/// `changedValuesForCurrentEvent()`: the keys changed since the context last posted
/// `NSManagedObjectContextObjectsDidChange`, with the values they had before, as an observer of
/// that notification reads them.
struct CurrentEventChangesTests {
    /// Owner (name, nickname, age with a default of 7, pets) ←→> Pet (name, owner).
    static func model() -> NSManagedObjectModel {
        let scratch = NSAttributeDescription(name: "scratch", type: .stringAttributeType)
        scratch.isTransient = true
        let owner = NSEntityDescription(name: "Owner", properties: [
            NSAttributeDescription(name: "name", type: .stringAttributeType),
            NSAttributeDescription(name: "nickname", type: .stringAttributeType),
            NSAttributeDescription(name: "age", type: .integer64AttributeType, defaultValue: 7),
            scratch,
        ])
        let pet = NSEntityDescription(name: "Pet", properties: [NSAttributeDescription(name: "name", type: .stringAttributeType)])
        let pets = NSRelationshipDescription(name: "pets", destination: pet, toMany: true)
        let petOwner = NSRelationshipDescription(name: "owner", destination: owner, toMany: false)
        pets.inverseRelationship = petOwner
        petOwner.inverseRelationship = pets
        owner.properties.append(pets)
        pet.properties.append(petOwner)
        let model = NSManagedObjectModel()
        model.entities = [owner, pet]
        return model
    }

    /// A context over a SQLite store holding Alice (age 30) with her pet Rex, and Bob.
    static func savedGraph() throws -> (NSManagedObjectContext, alice: NSManagedObject, bob: NSManagedObject, rex: NSManagedObject) {
        let context = TestSupport.context(try TestSupport.coordinator(model()).0)
        let alice = NSEntityDescription.insertNewObject(forEntityName: "Owner", into: context)
        alice.setValue("Alice", forKey: "name")
        alice.setValue(30, forKey: "age")
        let bob = NSEntityDescription.insertNewObject(forEntityName: "Owner", into: context)
        bob.setValue("Bob", forKey: "name")
        let rex = NSEntityDescription.insertNewObject(forEntityName: "Pet", into: context)
        rex.setValue("Rex", forKey: "name")
        rex.setValue(alice, forKey: "owner")
        try context.save()
        return (context, alice, bob, rex)
    }

    /// Collects what observers of the context's ObjectsDidChange read from `object`.
    private final class EventReader: @unchecked Sendable {
        var reads: [[String: Any]] = []
        private let object: NSManagedObject
        private var token: NSObjectProtocol?

        init(_ context: NSManagedObjectContext, reading object: NSManagedObject) {
            self.object = object
            token = NotificationCenter.default.addObserver(forName: .NSManagedObjectContextObjectsDidChange, object: context, queue: nil) { [unowned self] _ in
                reads.append(self.object.changedValuesForCurrentEvent())
            }
        }

        deinit { token.map(NotificationCenter.default.removeObserver) }
    }

    @Test func anObserverReadsTheValuesBeforeTheEvent() throws {
        let (context, alice, _, _) = try Self.savedGraph()
        let reader = EventReader(context, reading: alice)
        alice.setValue("Alicia", forKey: "name")
        alice.setValue("Ally", forKey: "name")
        alice.setValue("scratched", forKey: "scratch")
        #expect(alice.changedValuesForCurrentEvent() as NSDictionary == ["name": "Alice"], "within the event too")
        context.processPendingChanges()
        #expect(reader.reads.map { $0 as NSDictionary } == [["name": "Alice"]], "the value at the start of the event, not the one set in between; no transient")
        #expect(alice.changedValuesForCurrentEvent().isEmpty, "a new event has no changes yet")

        alice.setValue(31, forKey: "age")
        context.processPendingChanges()
        #expect(reader.reads.last as NSDictionary? == ["age": 30], "only what this event changed")
        #expect(Set(alice.changedValues().keys) == ["name", "age"], "changedValues() still counts from the save")

        alice.setValue("Ally", forKey: "nickname")
        alice.setValue("Ally", forKey: "name")
        context.processPendingChanges()
        #expect(reader.reads.last as NSDictionary? == ["nickname": NSNull()], "nil is NSNull; a value set to what it was is no change")
    }

    @Test func anInsertedObjectsOldValuesAreItsDefaults() throws {
        let (context, _, _, _) = try Self.savedGraph()
        let carol = NSEntityDescription.insertNewObject(forEntityName: "Owner", into: context)
        let reader = EventReader(context, reading: carol)
        carol.setValue("Carol", forKey: "name")
        carol.setValue(40, forKey: "age")
        context.processPendingChanges()
        #expect(reader.reads.map { $0 as NSDictionary } == [["name": NSNull(), "age": 7]])

        carol.setValue(41, forKey: "age")
        #expect(carol.changedValuesForCurrentEvent() as NSDictionary == ["age": 40], "a later event of an unsaved object")
    }

    @Test func relationshipsReportTheirOldDestinations() throws {
        let (context, alice, bob, rex) = try Self.savedGraph()
        context.refreshAllObjects()
        _ = alice.value(forKey: "pets")  // Loaded before the change, as a table showing them has.
        let rexReader = EventReader(context, reading: rex)
        let aliceReader = EventReader(context, reading: alice)
        let bobReader = EventReader(context, reading: bob)
        rex.setValue(bob, forKey: "owner")
        context.processPendingChanges()
        #expect(rexReader.reads.map { $0["owner"] as? NSManagedObject } == [alice])
        #expect(aliceReader.reads.map { $0["pets"] as? Set<NSManagedObject> } == [[rex]])
        #expect(bobReader.reads.map { $0["pets"] as? Set<NSManagedObject> } == [[]])

        rex.setValue(nil, forKey: "owner")
        context.processPendingChanges()
        #expect(rexReader.reads.last?["owner"] as? NSManagedObject == bob)
        #expect(aliceReader.reads.last?.isEmpty == true, "Alice lost Rex in the event before")
    }

    @Test func bothSidesOfAnUnloadedRelationshipAreUpdated() throws {
        let (context, alice, bob, rex) = try Self.savedGraph()
        context.refreshAllObjects()
        let aliceReader = EventReader(context, reading: alice)
        let bobReader = EventReader(context, reading: bob)
        nonisolated(unsafe) var updated: Set<NSManagedObject> = []
        let token = NotificationCenter.default.addObserver(forName: .NSManagedObjectContextObjectsDidChange, object: context, queue: nil) { note in
            updated = note.userInfo?[NSUpdatedObjectsKey] as? Set<NSManagedObject> ?? []
        }
        defer { NotificationCenter.default.removeObserver(token) }
        rex.setValue(bob, forKey: "owner")  // Neither owner's pets are loaded.
        #expect(alice.isUpdated && bob.isUpdated)
        context.processPendingChanges()
        #expect(updated == [rex, alice, bob])
        #expect(aliceReader.reads.map { $0["pets"] as? Set<NSManagedObject> } == [[rex]])
        #expect(bobReader.reads.map { $0["pets"] as? Set<NSManagedObject> } == [[]])
        #expect((bob.value(forKey: "pets") as? Set<NSManagedObject>) == [rex])
        #expect((alice.value(forKey: "pets") as? Set<NSManagedObject>) == [])
    }

    @Test func saveRollbackAndResetEndTheEvent() throws {
        let (context, alice, _, _) = try Self.savedGraph()
        alice.setValue("Alicia", forKey: "name")
        try context.save()
        #expect(alice.changedValuesForCurrentEvent().isEmpty)
        alice.setValue("Ally", forKey: "name")
        #expect(alice.changedValuesForCurrentEvent() as NSDictionary == ["name": "Alicia"], "the saved value")

        context.rollback()
        #expect(alice.changedValuesForCurrentEvent().isEmpty)
        alice.setValue("Al", forKey: "name")
        #expect(alice.changedValuesForCurrentEvent() as NSDictionary == ["name": "Alicia"], "recorded again after a rollback")
    }

    @Test func undoReportsWhatItPutBack() throws {
        let (context, alice, _, _) = try Self.savedGraph()
        context.undoManager = UndoManager()
        alice.setValue("Alicia", forKey: "name")
        context.processPendingChanges()
        let reader = EventReader(context, reading: alice)
        context.undo()
        #expect(alice.value(forKey: "name") as? String == "Alice")
        #expect(reader.reads.map { $0 as NSDictionary } == [["name": "Alicia"]])
    }
}
