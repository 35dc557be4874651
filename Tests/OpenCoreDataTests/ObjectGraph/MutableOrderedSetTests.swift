import Foundation
import OpenCoreData
import Testing

/// `mutableOrderedSetValue(forKey:)` edits an ordered relationship by `NSMutableOrderedSet`'s
/// rules, and what it does is what the store keeps.
@Suite struct MutableOrderedSetTests {
    /// A department with teams "a" … "e" in that order, saved, in a context over a SQLite store.
    private static func stage() throws -> (NSManagedObjectContext, NSManagedObject, NSManagedMutableOrderedSet) {
        let (coordinator, _) = try TestSupport.coordinator(TestSupport.makeCompanyModel())
        let context = TestSupport.context(coordinator)
        let department = NSEntityDescription.insertNewObject(forEntityName: "Department", into: context)
        department.setValue("Ops", forKey: "name")
        let teams = department.mutableOrderedSetValue(forKey: "teams")
        for title in ["a", "b", "c", "d", "e"] {
            let team = NSEntityDescription.insertNewObject(forEntityName: "Team", into: context)
            team.setValue(title, forKey: "title")
            teams.add(team)
        }
        try context.save()
        return (context, department, teams)
    }

    private static func titles(_ teams: NSManagedMutableOrderedSet) -> String {
        teams.array.map { $0.value(forKey: "title") as? String ?? "?" }.joined()
    }

    /// The order a new context reads from the store after a save.
    private static func stored(_ context: NSManagedObjectContext, _ department: NSManagedObject) throws -> String {
        try context.save()
        let fresh = TestSupport.context(context.persistentStoreCoordinator!)
        return titles(fresh.object(with: department.objectID).mutableOrderedSetValue(forKey: "teams"))
    }

    @Test func addingOrInsertingAMemberChangesNothing() throws {
        let (context, department, teams) = try Self.stage()
        teams.add(teams[0])
        teams.insert(teams[4], at: 0)
        teams.addObjects(from: [teams[1], teams[2]])
        #expect(Self.titles(teams) == "abcde")
        #expect(!department.hasChanges)
        #expect(try Self.stored(context, department) == "abcde")
    }

    @Test func movingExchangingAndReplacingFollowFoundation() throws {
        let (context, department, teams) = try Self.stage()
        // Foundation's example: moving the objects at 1 and 3 to 2 of what remains.
        teams.moveObjects(at: IndexSet([1, 3]), to: 2)
        #expect(Self.titles(teams) == "acbde")
        teams.exchangeObject(at: 0, withObjectAt: 4)
        #expect(Self.titles(teams) == "ecbda")
        #expect(teams.firstObject?.value(forKey: "title") as? String == "e")
        #expect(teams.lastObject?.value(forKey: "title") as? String == "a")
        let replacement = NSEntityDescription.insertNewObject(forEntityName: "Team", into: context)
        replacement.setValue("f", forKey: "title")
        let replaced = teams[2]
        teams[2] = replacement
        #expect(Self.titles(teams) == "ecfda")
        #expect(replaced.value(forKey: "department") == nil, "the replaced team left the department")
        teams.replaceObject(at: 0, with: teams[1])
        #expect(Self.titles(teams) == "ecfda", "a member put in another's place changes nothing")
        #expect(try Self.stored(context, department) == "ecfda")
    }

    @Test func insertingAndRemovingAtIndexes() throws {
        let (context, department, teams) = try Self.stage()
        let new = ["x", "y"].map { title -> NSManagedObject in
            let team = NSEntityDescription.insertNewObject(forEntityName: "Team", into: context)
            team.setValue(title, forKey: "title")
            return team
        }
        // Each at its index counted after the earlier insertions.
        teams.insert(new, at: IndexSet([1, 3]))
        #expect(Self.titles(teams) == "axbycde")
        teams.removeObjects(at: IndexSet([0, 6]))
        #expect(Self.titles(teams) == "xbycd")
        teams.removeObjects(in: [new[1], teams[0]])
        #expect(Self.titles(teams) == "bcd")
        #expect(teams.index(of: teams[2]) == 2)
        #expect(teams.index(of: new[1]) == NSNotFound, "as NSOrderedSet answers for a non-member")
        #expect(!teams.contains(new[1]))
        #expect(try Self.stored(context, department) == "bcd")
    }

    @Test func anIndexBeyondTheRelationshipTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let context = try TestSupport.companyContext()
            let department = NSEntityDescription.insertNewObject(forEntityName: "Department", into: context)
            let team = NSEntityDescription.insertNewObject(forEntityName: "Team", into: context)
            department.mutableOrderedSetValue(forKey: "teams").insert(team, at: 1)
        }
        #expect(ProgrammerErrorTests.message(result).contains("insert(_:at:): index 1 is beyond the bounds of the ordered relationship (0..<1)."))
    }
}
