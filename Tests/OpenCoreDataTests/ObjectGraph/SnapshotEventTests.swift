import Foundation
import OpenCoreData
import Testing

/// A subclass that records the snapshot events it is told of.
final class Snapshotted: NSManagedObject {
    @Managed var name: String?

    nonisolated(unsafe) static var events: [(name: String?, flags: NSSnapshotEventType)] = []

    override func awake(fromSnapshotEvents flags: NSSnapshotEventType) {
        super.awake(fromSnapshotEvents: flags)
        Self.events.append((primitiveValue(forKey: "name") as? String, flags))
    }
}

/// `awake(fromSnapshotEvents:)`: called with the reason whenever an object's values are set again
/// from a snapshot (undo and redo, rollback, refresh keeping changes, a merge policy).
@Suite(.serialized) struct SnapshotEventTests {
    private static func coordinator() throws -> NSPersistentStoreCoordinator {
        let entity = NSEntityDescription(name: "Snapshotted", className: "Snapshotted", properties: [
            NSAttributeDescription(name: "name", type: .stringAttributeType),
        ])
        let model = NSManagedObjectModel()
        model.entities = [entity]
        return try TestSupport.coordinator(model).0
    }

    /// A context with an undo manager and one saved object named "Saved".
    private static func savedObject() throws -> (NSManagedObjectContext, Snapshotted) {
        let context = TestSupport.context(try coordinator())
        context.undoManager = UndoManager()
        let object = Snapshotted(context: context)
        object.name = "Saved"
        try context.save()
        context.undoManager?.removeAllActions()
        Snapshotted.events = []
        return (context, object)
    }

    @Test func undoAndRedoSayWhatTheyUndid() throws {
        let (context, object) = try Self.savedObject()
        object.name = "Changed"
        context.processPendingChanges()
        context.undo()
        #expect(object.name == "Saved")
        #expect(Snapshotted.events.map(\.flags) == [.undoUpdate])
        #expect(Snapshotted.events.first?.name == "Saved", "called after the values are back")

        Snapshotted.events = []
        context.delete(object)
        context.processPendingChanges()
        context.undo()
        #expect(!object.isDeleted)
        #expect(Snapshotted.events.map(\.flags) == [.undoDeletion])

        Snapshotted.events = []
        let added = Snapshotted(context: context)
        added.name = "Added"
        context.processPendingChanges()
        context.undo()
        #expect(!context.insertedObjects.contains(added))
        #expect(Snapshotted.events.map(\.flags) == [.undoInsertion])
        Snapshotted.events = []
        context.redo()
        #expect(context.insertedObjects.contains(added))
        #expect(Snapshotted.events.map(\.flags) == [.undoInsertion])
    }

    @Test func rollbackAndRefreshSayWhatHappened() throws {
        let (context, object) = try Self.savedObject()
        object.name = "Changed"
        context.rollback()
        #expect(object.name == "Saved")
        #expect(Snapshotted.events.map(\.flags) == [.rollback])

        Snapshotted.events = []
        object.name = "Mine"
        context.refresh(object, mergeChanges: true)
        #expect(object.name == "Mine")
        #expect(Snapshotted.events.map(\.flags) == [.refresh])

        Snapshotted.events = []
        context.refresh(object, mergeChanges: false)
        #expect(Snapshotted.events.isEmpty, "an object turned into a fault has no values to awake from")
    }

    @Test func aMergePolicySaysItResolvedAConflict() throws {
        let (context, object) = try Self.savedObject()
        let theirs = TestSupport.context(try #require(context.persistentStoreCoordinator))
        let theirObject = try #require(try theirs.existingObject(with: object.objectID) as? Snapshotted)
        theirObject.name = "Theirs"
        try theirs.save()
        Snapshotted.events = []
        object.name = "Mine"
        context.mergePolicy = NSMergeByPropertyObjectTrumpMergePolicy
        try context.save()
        #expect(Snapshotted.events.map(\.flags) == [.mergePolicy])
        #expect(object.name == "Mine")
    }
}
