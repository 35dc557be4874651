import Foundation
import OpenCoreData
import Testing

/// `committedValues(forKeys:)`: the values last fetched or saved, `NSNull` for nil, relationships
/// as objects, transient properties left out.
struct CommittedValuesTests {
    @Test func committedValuesHaveNullsRelationshipsAndNoTransients() throws {
        let (context, alice, bob, rex) = try CurrentEventChangesTests.savedGraph()
        context.refreshAllObjects()
        alice.setValue("Alicia", forKey: "name")
        alice.setValue("scratched", forKey: "scratch")
        rex.setValue(bob, forKey: "owner")

        let committed = alice.committedValues(forKeys: nil)
        #expect(Set(committed.keys) == ["name", "nickname", "age", "pets"], "every persistent property, no transient")
        #expect(committed["name"] as? String == "Alice")
        #expect(committed["nickname"] is NSNull)
        #expect(committed["age"] as? Int64 == 30)
        #expect(committed["pets"] as? Set<NSManagedObject> == [rex], "the saved members, not the current ones")
        #expect(rex.committedValues(forKeys: ["owner"])["owner"] as? NSManagedObject == alice)
        #expect(alice.committedValues(forKeys: ["scratch"]).isEmpty)

        let carol = NSEntityDescription.insertNewObject(forEntityName: "Owner", into: context)
        #expect(carol.committedValues(forKeys: nil).isEmpty, "never saved")
    }
}
