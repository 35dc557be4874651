import Foundation
@testable import OpenCoreDataCore
import OpenCoreData
import Testing

/// The typed slot storage behind managed objects and stored rows, and the identity hash map of
/// the context's registry and change lists.
@MainActor
@Suite struct SlotValuesTests {
    private let layout = SlotLayout(kinds: [.int64, .int32, .int16, .bool, .double, .float, .date, .cell, .cell])

    @Test func wordSlotsGiveBackExactlyWhatWasStored() {
        var values = SlotValues(layout: layout)
        #expect(values.count == 9)
        #expect(values.allSatisfy { $0 == nil })
        let date = Date(timeIntervalSinceReferenceDate: -12.75)
        let stored: [Any] = [Int64.min, Int32(-7), Int16.max, true, -0.0, Float(1.5), date, "text", Data([1, 2])]
        for (slot, value) in stored.enumerated() { values[slot] = value }
        #expect(values[0] as? Int64 == Int64.min)
        #expect(values[1] as? Int32 == -7)
        #expect(values[2] as? Int16 == Int16.max)
        #expect(values[3] as? Bool == true)
        #expect((values[4] as? Double).map { $0 == 0 && $0.sign == .minus } == true, "negative zero keeps its sign")
        #expect(values[5] as? Float == 1.5)
        #expect(values[6] as? Date == date)
        #expect(values[7] as? String == "text")
        #expect(values[8] as? Data == Data([1, 2]))
        #expect(values.word(at: 0) == UInt64(bitPattern: Int64.min))
        #expect(values.word(at: 7) == nil, "a cell slot has no word")
        values[0] = nil
        #expect(values[0] == nil)
        #expect(values.word(at: 0) == nil)
    }

    /// Strings read in place give what the slot's `Any?` holds when that is a `String`, and nil
    /// for anything else (which callers then read the general way).
    @Test func stringsAreReadInPlaceAndOnlyStrings() {
        var values = SlotValues(layout: layout)
        #expect(values.string(at: 7) == nil, "nil")
        values[7] = "a name longer than fifteen bytes, accentué"
        values[8] = "short"
        #expect(values.string(at: 7) == "a name longer than fifteen bytes, accentué")
        #expect(values.string(at: 8) == "short")
        values[0] = Int64(5)
        #expect(values.string(at: 0) == nil, "a word slot")
        for other: Any in [NSString(string: "bridged"), Substring("sub"), Int64(3), ["array"], Optional<String>.some("wrapped") as Any] {
            values[8] = other
            #expect(values.string(at: 8) == nil, "\(type(of: other)) is not read as a String")
        }
        let batch = SlotRowBatch.make(layout: layout, capacity: 2)
        let row = batch.appendRow { $0.setCell("in a batch", at: 7) }
        #expect(batch.string(row: row, slot: 7) == "in a batch")
        #expect(batch.string(row: row, slot: 8) == nil)
    }

    @Test func aValueOfAnotherTypeIsKeptAsGiven() {
        var values = SlotValues(layout: layout)
        values[0] = "not a number"
        #expect(values[0] as? String == "not a number")
        #expect(values.word(at: 0) == nil)
        values[0] = Int(3)
        #expect(values[0] as? Int == 3, "an Int on an Integer 64 slot is not converted by the storage")
        #expect(!(values[0] is Int64))
        values[0] = Int64(3)
        #expect(values[0] as? Int64 == 3)
        #expect(values.word(at: 0) == 3)
    }

    @Test func copiesAreIndependent() {
        var original = SlotValues(layout: layout)
        original[0] = Int64(1)
        original[7] = "a"
        original[1] = "odd"
        var copy = original
        copy[0] = Int64(2)
        copy[7] = "b"
        copy[1] = Int32(5)
        #expect(original[0] as? Int64 == 1)
        #expect(original[7] as? String == "a")
        #expect(original[1] as? String == "odd")
        #expect(copy[0] as? Int64 == 2)
        #expect(copy[7] as? String == "b")
        #expect(copy[1] as? Int32 == 5)
        #expect(SlotValues().isEmpty)
    }

    @Test func managedObjectsStoreIntegersAsWordsAndConvertOtherWidths() throws {
        let entity = NSEntityDescription(name: "Row", properties: [
            NSAttributeDescription(name: "numberOfGoalsScored", type: .integer64AttributeType),
            NSAttributeDescription(name: "title", type: .stringAttributeType),
        ])
        let model = NSManagedObjectModel()
        model.entities = [entity]
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(ofType: NSInMemoryStoreType, configurationName: nil, at: nil, options: nil)
        let context = NSManagedObjectContext(concurrencyType: .mainQueueConcurrencyType)
        context.persistentStoreCoordinator = coordinator
        let object = NSManagedObject(entity: entity, insertInto: context)
        object.setValue(Int64(40), forKey: "numberOfGoalsScored")
        #expect(object.value(forKey: "numberOfGoalsScored") as? Int64 == 40)
        object.setValue(41, forKey: "numberOfGoalsScored")
        #expect(object.value(forKey: "numberOfGoalsScored") as? Int64 == 41, "an exact Int becomes Int64")
        // A long name built at run time has other storage than the model's: found by its bytes.
        let builtKey = ["numberOf", "GoalsScored"].joined()
        #expect(object.value(forKey: builtKey) as? Int64 == 41)
        object.setValue("x", forKey: "title")
        try context.save()
        #expect(object.committedValues(forKeys: ["numberOfGoalsScored"])["numberOfGoalsScored"] as? Int64 == 41)
    }

    @Test func hashMapInsertsFindsAndRemovesAcrossProbeRuns() {
        struct Colliding: FastHashable {
            let id: Int
            var fastHash: UInt64 { UInt64(id % 3) }
        }
        var map = FastHashMap<Colliding, Int>()
        var reference: [Int: Int] = [:]
        for id in 0..<500 {
            map[Colliding(id: id)] = id * 2
            reference[id] = id * 2
        }
        for id in stride(from: 0, to: 500, by: 3) {
            let removed = map.removeValue(forKey: Colliding(id: id))
            #expect(removed == id * 2)
            reference[id] = nil
        }
        let removedAgain = map.removeValue(forKey: Colliding(id: 0))
        #expect(removedAgain == nil)
        #expect(map.count == reference.count)
        for id in 0..<500 { #expect(map[Colliding(id: id)] == reference[id]) }
        #expect(map[Colliding(id: 1)] == 2)
        #expect(map.values.sorted() == reference.values.sorted())
    }

    /// Forty objects of one entity, in no context.
    private static func looseObjects() -> [NSManagedObject] {
        let entity = NSEntityDescription(name: "Item")
        let model = NSManagedObjectModel()
        model.entities = [entity]
        return (0..<40).map { _ in NSManagedObject(entity: entity, insertInto: nil) }
    }

    @Test func changeListsKeepInsertionOrderThroughRemovals() {
        let objects = Self.looseObjects()
        var list = ManagedObjectList(.inserted)
        for object in objects { list.append(object) }
        list.append(objects[0])
        #expect(list.count == 40)
        for object in objects.prefix(30) where objects.firstIndex(of: object)! % 2 == 0 { list.remove(object) }
        let expected = objects.enumerated().filter { $0.offset >= 30 || $0.offset % 2 == 1 }.map(\.element)
        #expect(list.elements.map(ObjectIdentifier.init) == expected.map(ObjectIdentifier.init))
        #expect(Array(list).count == expected.count)
        #expect(!list.contains(objects[0]))
        #expect(list.contains(objects[1]))
    }

    @Test func changeListPositionsLeftBehindAreNeverMembership() {
        let objects = Self.looseObjects()
        var list = ManagedObjectList(.updated)
        for object in objects { list.append(object) }
        // A copy keeps its members when the original is emptied and refilled in another order.
        let copy = list
        list.removeAll()
        #expect(list.isEmpty && !list.contains(objects[5]))
        for object in objects.reversed().prefix(10) { list.append(object) }
        #expect(list.elements.map(ObjectIdentifier.init) == objects.reversed().prefix(10).map(ObjectIdentifier.init))
        #expect(!list.contains(objects[0]) && list.contains(objects[39]))
        #expect(copy.count == 40 && Array(copy).map(ObjectIdentifier.init) == objects.map(ObjectIdentifier.init))
        // Lists of different kinds keep separate positions; removal and compaction keep them right.
        var other = ManagedObjectList(.pendingUpdated)
        for object in objects.prefix(20) { other.append(object) }
        for object in objects.prefix(15) { other.remove(object) }
        #expect(other.elements.map(ObjectIdentifier.init) == objects[15..<20].map(ObjectIdentifier.init))
        for object in objects[15..<20] { #expect(other.contains(object)) }
        other.remove(objects[17])
        #expect(!other.contains(objects[17]) && other.contains(objects[18]) && other.count == 4)
        #expect(list.contains(objects[39]) && list.count == 10)
    }
}
