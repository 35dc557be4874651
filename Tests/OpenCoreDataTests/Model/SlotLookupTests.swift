import Foundation
import Testing
@testable import OpenCoreDataCore

/// Finding a property's slot by name (`NSEntityDescription.fastSlot(forKey:)`): by the name's raw
/// bits for literals and the model's own strings, by its bytes for names built at run time, for
/// entities of every size.
@Suite struct SlotLookupTests {
    private func entity(_ names: [String]) -> NSEntityDescription {
        let entity = NSEntityDescription(name: "Thing", className: "NSManagedObject")
        entity.properties = names.map { NSAttributeDescription(name: $0, type: .integer64AttributeType) }
        let model = NSManagedObjectModel()
        model.entities = [entity]
        model.freeze()
        return entity
    }

    @Test(arguments: [1, 2, 10, 33, 200])
    func everyNameFindsItsSlotHoweverItWasMade(count: Int) {
        var names = (0..<count).map { "p\($0)" }
        if count > 2 { names[1] = "aNameLongerThanFifteenBytes\(count)" }
        let thing = entity(names)
        for (slot, name) in thing.slotKeys.enumerated() {
            #expect(thing.fastSlot(forKey: name) == slot, "the model's own string")
            // The same name made at run time: other storage, other bits for a long name.
            let rebuilt = String(decoding: Array(name.utf8), as: UTF8.self)
            #expect(thing.fastSlot(forKey: rebuilt) == slot, "\(name) rebuilt")
        }
        #expect(thing.fastSlot(forKey: "p\(count)") == nil)
        #expect(thing.fastSlot(forKey: "") == nil)
        #expect(thing.fastSlot(forKey: "aNameLongerThanFifteenBytes-none") == nil)
    }

    @Test func theTableHasNoFalseMatches() {
        let names = (0..<50).map { "key\($0)" }
        let table = SlotBitsTable(names.map { unsafeBitCast($0, to: NSEntityDescription.StringBits.self) })
        for (slot, name) in names.enumerated() {
            #expect(table.slot(of: unsafeBitCast(name, to: NSEntityDescription.StringBits.self)) == slot)
        }
        for other in (50..<5_000).map({ "key\($0)" }) {
            #expect(table.slot(of: unsafeBitCast(other, to: NSEntityDescription.StringBits.self)) == nil)
        }
        #expect(SlotBitsTable().slot(of: unsafeBitCast("key1", to: NSEntityDescription.StringBits.self)) == nil)
    }
}
