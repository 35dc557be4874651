import Foundation
import OpenCoreData
import Testing

/// A class with the scalar and optional types Xcode generates, read and written through the
/// typed `@Managed` accessors (which skip the runtime's dynamic cast).
class TypedMeasurement: NSManagedObject {
    @Managed var count64: Int64
    @Managed var count32: Int32
    @Managed var count16: Int16
    @Managed var ratio: Double
    @Managed var weight: Float
    @Managed var flag: Bool
    @Managed var optionalCount: Int64?
    @Managed var optionalRatio: Double?
    @Managed var optionalFlag: Bool?
    @Managed var label: String?
    /// A type other than the attribute's (Integer 64): read through the generic conversion.
    @Managed var wide: Int
}

@Suite struct TypedAccessorTests {
    static func model(className: String = "TypedMeasurement") -> NSManagedObjectModel {
        let entity = NSEntityDescription(name: "Measurement", className: className)
        entity.properties = [
            NSAttributeDescription(name: "count64", type: .integer64AttributeType),
            NSAttributeDescription(name: "count32", type: .integer32AttributeType),
            NSAttributeDescription(name: "count16", type: .integer16AttributeType),
            NSAttributeDescription(name: "ratio", type: .doubleAttributeType),
            NSAttributeDescription(name: "weight", type: .floatAttributeType),
            NSAttributeDescription(name: "flag", type: .booleanAttributeType),
            NSAttributeDescription(name: "optionalCount", type: .integer64AttributeType),
            NSAttributeDescription(name: "optionalRatio", type: .doubleAttributeType),
            NSAttributeDescription(name: "optionalFlag", type: .booleanAttributeType),
            NSAttributeDescription(name: "label", type: .stringAttributeType),
            NSAttributeDescription(name: "wide", type: .integer64AttributeType),
        ]
        let model = NSManagedObjectModel()
        model.entities = [entity]
        return model
    }

    /// Every typed property against `value(forKey:)`.
    static func expectConsistent(_ object: TypedMeasurement, _ note: String) {
        #expect(object.count64 == (object.value(forKey: "count64") as? Int64 ?? 0), "\(note)")
        #expect(object.count32 == (object.value(forKey: "count32") as? Int32 ?? 0), "\(note)")
        #expect(object.count16 == (object.value(forKey: "count16") as? Int16 ?? 0), "\(note)")
        #expect(object.ratio == (object.value(forKey: "ratio") as? Double ?? 0), "\(note)")
        #expect(object.weight == (object.value(forKey: "weight") as? Float ?? 0), "\(note)")
        #expect(object.flag == (object.value(forKey: "flag") as? Bool ?? false), "\(note)")
        #expect(object.optionalCount == object.value(forKey: "optionalCount") as? Int64, "\(note)")
        #expect(object.optionalRatio == object.value(forKey: "optionalRatio") as? Double, "\(note)")
        #expect(object.optionalFlag == object.value(forKey: "optionalFlag") as? Bool, "\(note)")
        #expect(object.label == object.value(forKey: "label") as? String, "\(note)")
        #expect(Int64(object.wide) == (object.value(forKey: "wide") as? Int64 ?? 0), "\(note)")
    }

    @Test func typedPropertiesReadWhatTheyWrite() throws {
        let (coordinator, _) = try TestSupport.coordinator(Self.model())
        let context = TestSupport.context(coordinator)
        let empty = TypedMeasurement(context: context)
        // Nil reads as zero through a scalar, nil through an optional.
        #expect(empty.count64 == 0 && empty.count32 == 0 && empty.count16 == 0 && empty.ratio == 0 && empty.weight == 0 && !empty.flag)
        #expect(empty.optionalCount == nil && empty.optionalRatio == nil && empty.optionalFlag == nil && empty.label == nil && empty.wide == 0)
        Self.expectConsistent(empty, "empty")

        let full = TypedMeasurement(context: context)
        full.count64 = .max
        full.count32 = -32
        full.count16 = 16
        full.ratio = 0.25
        full.weight = 1.5
        full.flag = true
        full.optionalCount = -7
        full.optionalRatio = 2.5
        full.optionalFlag = false
        full.label = "a label longer than fifteen bytes, with ü"
        full.wide = 123
        #expect(full.count64 == .max && full.count32 == -32 && full.count16 == 16 && full.ratio == 0.25 && full.weight == 1.5 && full.flag)
        #expect(full.optionalCount == -7 && full.optionalRatio == 2.5 && full.optionalFlag == false && full.label == "a label longer than fifteen bytes, with ü")
        #expect(full.wide == 123)
        #expect(full.changedValues().count == 11, "every typed write is recorded")
        Self.expectConsistent(full, "inserted")
        full.optionalCount = nil
        full.label = nil
        #expect(full.optionalCount == nil && full.label == nil)
        full.optionalCount = -7
        full.label = "short"
        try context.save()

        // Read back as faults in another context, from the store's rows.
        let other = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        other.persistentStoreCoordinator = coordinator
        try other.performAndWait {
            let request = NSFetchRequest<TypedMeasurement>(entityName: "Measurement")
            request.sortDescriptors = [NSSortDescriptor(key: "count64", ascending: true)]
            let fetched = try other.fetch(request)
            #expect(fetched.count == 2)
            for object in fetched { Self.expectConsistent(object, "fetched \(object.count64)") }
            let saved = try #require(fetched.last)
            #expect(saved.count64 == .max && saved.count32 == -32 && saved.optionalCount == -7 && saved.label == "short" && saved.flag)
            #expect(saved.optionalFlag == false && saved.weight == 1.5 && saved.wide == 123)
        }
    }

    /// Typed setters write like `setValue(_:forKey:)`: on a fetched object (whose values come from
    /// the store's row) the change is recorded and saved, the undo manager can take it back, and
    /// `willChangeValue`/`didChangeValue` overrides see it.
    @Test func typedSettersRecordChangesForSavesUndoAndObservers() throws {
        let (coordinator, _) = try TestSupport.coordinator(Self.model(className: "ObservedMeasurement"))
        let writer = TestSupport.context(coordinator)
        let made = ObservedMeasurement(context: writer)
        made.count64 = 1
        made.count32 = 2
        try writer.save()

        let context = TestSupport.context(coordinator)
        context.undoManager = UndoManager()
        let object = try #require(try context.fetch(NSFetchRequest<ObservedMeasurement>(entityName: "Measurement")).first)
        #expect(!object.hasChanges)
        object.count64 = 64
        object.count32 = -1
        object.ratio = 0.5
        object.weight = 2
        object.flag = true
        object.count16 = 7
        #expect(object.observed == ["count64", "count32", "ratio", "weight", "flag", "count16"].flatMap { ["will \($0)", "did \($0)"] })
        #expect(context.updatedObjects.contains(object))
        #expect(Set(object.changedValues().keys) == ["count64", "count32", "ratio", "weight", "flag", "count16"])
        #expect(object.committedValues(forKeys: ["count64"])["count64"] as? Int64 == 1, "the store's row is left as it was")
        context.processPendingChanges()
        context.undoManager?.undo()
        #expect(object.count64 == 1 && object.count32 == 2 && !object.flag, "undo takes the typed writes back")
        object.count64 = 640
        try context.save()
        let reread = try #require(try TestSupport.context(coordinator).fetch(NSFetchRequest<ObservedMeasurement>(entityName: "Measurement")).first)
        #expect(reread.count64 == 640 && reread.count32 == 2)
    }
}

/// Counts the change callbacks the typed setters make.
final class ObservedMeasurement: TypedMeasurement {
    nonisolated(unsafe) var observed: [String] = []

    override func willChangeValue(forKey key: String) {
        observed.append("will \(key)")
        super.willChangeValue(forKey: key)
    }

    override func didChangeValue(forKey key: String) {
        observed.append("did \(key)")
        super.didChangeValue(forKey: key)
    }
}
