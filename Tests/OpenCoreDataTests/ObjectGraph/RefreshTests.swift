import Foundation
import OpenCoreData
import Testing

/// Bringing objects up to date with changes another coordinator saved to the same store:
/// `shouldRefreshRefetchedObjects`, `refreshAllObjects()` and `refresh(_:mergeChanges:)`.
@Suite struct RefreshTests {
    private typealias Scenario = MergePolicyTests.Scenario

    /// The other context saves a new price and note.
    private func theirSave(_ scenario: Scenario) throws {
        scenario.theirItem.setValue(20, forKey: "price")
        scenario.theirItem.setValue("their note", forKey: "note")
        try scenario.theirs.save()
    }

    @Test func refetchingRefreshesRegisteredObjectsOnlyWhenAsked() throws {
        let scenario = try Scenario()
        defer { scenario.cleanUp() }
        try theirSave(scenario)
        let request = NSFetchRequest<NSManagedObject>(entityName: "Item")
        #expect(try scenario.mine.fetch(request) == [scenario.item])
        #expect(scenario.item.value(forKey: "price") as? Int64 == 10, "a refetch keeps the registered object's values")
        request.shouldRefreshRefetchedObjects = true
        #expect(try scenario.mine.fetch(request) == [scenario.item])
        #expect(scenario.values(scenario.item) == ("Original", 20, "their note"))
        // The object now has the store's version: a change saves without conflict.
        scenario.item.setValue(21, forKey: "price")
        try scenario.mine.save()
        #expect(try scenario.storedRow().1 == 21)
    }

    /// Every fault reads the store, so any `stalenessInterval` is met: a fault fired after another
    /// coordinator's save sees that save (see docs/Differences.md, "Merge policies: what differs").
    @Test(arguments: [0.0, -1.0, 3600.0])
    func faultsAreNeverStalerThanTheInterval(interval: TimeInterval) throws {
        let scenario = try Scenario()
        defer { scenario.cleanUp() }
        scenario.mine.stalenessInterval = interval
        #expect(scenario.mine.stalenessInterval == interval)
        scenario.mine.refresh(scenario.item, mergeChanges: false)
        #expect(scenario.item.isFault)
        try theirSave(scenario)
        #expect(scenario.values(scenario.item) == ("Original", 20, "their note"))
    }

    @Test func refreshAllObjectsKeepsUnsavedChanges() throws {
        let scenario = try Scenario()
        defer { scenario.cleanUp() }
        let untouched = NSEntityDescription.insertNewObject(forEntityName: "Item", into: scenario.mine)
        untouched.setValue("Untouched", forKey: "name")
        try scenario.mine.save()
        let theirUntouched = try scenario.theirs.existingObject(with: untouched.objectID)
        theirUntouched.setValue(5, forKey: "price")
        try theirSave(scenario)
        scenario.item.setValue("Mine", forKey: "name")
        scenario.mine.refreshAllObjects()
        #expect(untouched.isFault, "objects without changes become faults")
        #expect(untouched.value(forKey: "price") as? Int64 == 5)
        #expect(scenario.values(scenario.item) == ("Mine", 20, "their note"), "unsaved changes are kept over the store's values")
        #expect(scenario.item.hasChanges)
        // Refreshed, the object saves under the default (error) policy.
        try scenario.mine.save()
        let (name, price, note, _) = try scenario.storedRow()
        #expect(name == "Mine" && price == 20 && note == "their note")
    }

    @Test func refreshWithoutMergingDropsChanges() throws {
        let scenario = try Scenario()
        defer { scenario.cleanUp() }
        try theirSave(scenario)
        scenario.item.setValue("Mine", forKey: "name")
        scenario.mine.refresh(scenario.item, mergeChanges: false)
        #expect(!scenario.mine.hasChanges)
        #expect(scenario.values(scenario.item) == ("Original", 20, "their note"))
    }

    /// Discarding a move or a delete puts the object back in its saved destinations' inverse
    /// relationships and out of the others, in either direction of a one-to-many relationship.
    @Test func discardingARelationshipChangeLeavesTheInversesAsSaved() throws {
        let (context, alice, bob, rex) = try CurrentEventChangesTests.savedGraph()
        func pets(_ owner: NSManagedObject) -> [String] {
            ((owner.value(forKey: "pets") as? Set<NSManagedObject>) ?? []).compactMap { $0.value(forKey: "name") as? String }.sorted()
        }
        rex.setValue(bob, forKey: "owner")
        #expect(pets(alice) == [] && pets(bob) == ["Rex"])
        context.refresh(rex, mergeChanges: false)
        #expect(rex.value(forKey: "owner") as? NSManagedObject === alice)
        #expect(pets(alice) == ["Rex"] && pets(bob) == [])

        context.delete(rex)
        #expect(pets(alice) == [])
        context.refresh(rex, mergeChanges: false)
        #expect(!rex.isDeleted && context.deletedObjects.isEmpty)
        #expect(pets(alice) == ["Rex"])

        // From the to-many side: Alice's pets changed, then her changes discarded.
        alice.mutableSetValue(forKey: "pets").remove(rex)
        #expect(rex.value(forKey: "owner") == nil)
        context.refresh(alice, mergeChanges: false)
        #expect(rex.value(forKey: "owner") as? NSManagedObject === alice)
        #expect(pets(alice) == ["Rex"])
        try context.save()
        let fresh = TestSupport.context(context.persistentStoreCoordinator!)
        let stored = try fresh.fetch(NSFetchRequest<NSManagedObject>(entityName: "Pet"))
        #expect(stored.map { ($0.value(forKey: "owner") as? NSManagedObject)?.value(forKey: "name") as? String } == ["Alice"])
    }

    /// Keeping unsaved changes over values another context saved keeps a to-many relationship's
    /// additions and removals, not its whole set: members the other context added or took away
    /// stay as it saved them, in one-to-many and many-to-many relationships. (Taking the local set
    /// whole lost them, and left the other side's to-one pointing at an object that didn't list it.)
    @Test(arguments: ["mergeChanges(fromContextDidSave:)", "refreshAllObjects()"])
    func keepingChangesKeepsOtherContextsToManyChanges(_ how: String) throws {
        let (coordinator, _) = try TestSupport.coordinator(TestSupport.makeCompanyModel())
        let setUp = TestSupport.context(coordinator)
        func insert(_ entity: String, _ name: String, _ values: [String: Any] = [:]) -> NSManagedObject {
            Self.insert(entity, name, values, into: setUp)
        }
        let d1 = insert("Department", "D1"), d2 = insert("Department", "D2")
        let e1 = insert("Employee", "E1", ["department": d1]), e2 = insert("Employee", "E2", ["department": d1])
        let e3 = insert("Employee", "E3", ["department": d2])
        let p1 = insert("Project", "P1")
        p1.mutableSetValue(forKey: "members").add(e1)
        try setUp.save()

        let here = TestSupport.context(coordinator)
        here.mergePolicy = NSMergePolicy.mergeByPropertyObjectTrump
        func mine(_ object: NSManagedObject) -> NSManagedObject { here.object(with: object.objectID) }
        func names(_ object: NSManagedObject, _ key: String) -> [String] {
            ((object.value(forKey: key) as? Set<NSManagedObject>) ?? []).compactMap { $0.value(forKey: "name") as? String }.sorted()
        }
        // Here: E2 moves to D2, and joins P1.
        mine(e2).setValue(mine(d2), forKey: "department")
        mine(p1).mutableSetValue(forKey: "members").add(mine(e2))
        #expect(names(mine(d1), "employees") == ["E1"] && names(mine(p1), "members") == ["E1", "E2"])

        // There, saved: E3 moves to D1, and joins P1.
        let there = TestSupport.context(coordinator)
        let note = try Self.saved(there) {
            there.object(with: e3.objectID).setValue(there.object(with: d1.objectID), forKey: "department")
            there.object(with: p1.objectID).mutableSetValue(forKey: "members").add(there.object(with: e3.objectID))
        }

        if how == "refreshAllObjects()" {
            here.refreshAllObjects()
        } else {
            here.mergeChanges(fromContextDidSave: note)
        }
        #expect(names(mine(d1), "employees") == ["E1", "E3"])
        #expect(names(mine(d2), "employees") == ["E2"])
        #expect(names(mine(p1), "members") == ["E1", "E2", "E3"])
        #expect((mine(e3).value(forKey: "department") as? NSManagedObject) === mine(d1))

        try here.save()
        let fresh = TestSupport.context(coordinator)
        let stored = { (object: NSManagedObject, key: String) in names(fresh.object(with: object.objectID), key) }
        #expect(stored(d1, "employees") == ["E1", "E3"] && stored(d2, "employees") == ["E2"])
        #expect(stored(p1, "members") == ["E1", "E2", "E3"])
    }

    /// An object added here to a to-many relationship and deleted by another context leaves the
    /// relationship when the deletion is merged, one-to-many and many-to-many; the save then
    /// writes the relationship without it.
    @Test(arguments: [false, true])
    func membersDeletedElsewhereLeaveChangedRelationships(_ manyToMany: Bool) throws {
        let (coordinator, _) = try TestSupport.coordinator(TestSupport.makeCompanyModel())
        let setUp = TestSupport.context(coordinator)
        let department = Self.insert("Department", "D1", into: setUp)
        let employee = Self.insert("Employee", "E3", ["department": Self.insert("Department", "D2", into: setUp)], into: setUp)
        let project = Self.insert("Project", "P1", into: setUp)
        try setUp.save()

        let here = TestSupport.context(coordinator)
        let owner = here.object(with: (manyToMany ? project : department).objectID)
        let key = manyToMany ? "members" : "employees"
        if manyToMany {
            owner.mutableSetValue(forKey: key).add(here.object(with: employee.objectID))
        } else {
            here.object(with: employee.objectID).setValue(owner, forKey: "department")
        }
        #expect((owner.value(forKey: key) as? Set<NSManagedObject>)?.count == 1)

        let there = TestSupport.context(coordinator)
        here.mergeChanges(fromContextDidSave: try Self.saved(there) { there.delete(there.object(with: employee.objectID)) })
        #expect((owner.value(forKey: key) as? Set<NSManagedObject>)?.isEmpty == true)

        try here.save()
        let fresh = TestSupport.context(coordinator)
        #expect((fresh.object(with: owner.objectID).value(forKey: key) as? Set<NSManagedObject>)?.isEmpty == true)
        #expect(try fresh.count(for: NSFetchRequest<NSManagedObject>(entityName: "Employee")) == 0)
    }

    /// An unsaved change pointing a to-one relationship at an object another context deleted
    /// fails the save with Core Data's validation error (1550, "dangling reference") and writes
    /// nothing, rather than saving a reference to a row that is gone; pointing it elsewhere lets
    /// the save through.
    @Test func aReferenceToAnObjectDeletedElsewhereFailsTheSave() throws {
        let (coordinator, _) = try TestSupport.coordinator(TestSupport.makeCompanyModel())
        let setUp = TestSupport.context(coordinator)
        let kept = Self.insert("Department", "D1", into: setUp)
        let doomed = Self.insert("Department", "D3", into: setUp)
        let employee = Self.insert("Employee", "E1", ["department": kept], into: setUp)
        try setUp.save()

        let here = TestSupport.context(coordinator)
        let mine = here.object(with: employee.objectID)
        mine.setValue(here.object(with: doomed.objectID), forKey: "department")
        let there = TestSupport.context(coordinator)
        here.mergeChanges(fromContextDidSave: try Self.saved(there) { there.delete(there.object(with: doomed.objectID)) })

        let error = try #require(throws: NSError.self) { try here.save() }
        #expect(error.domain == NSCocoaErrorDomain && error.code == NSManagedObjectValidationError)
        #expect(error.userInfo[NSValidationKeyErrorKey] as? String == "department")
        #expect(here.hasChanges)
        let fresh = TestSupport.context(coordinator)
        let stored = fresh.object(with: employee.objectID)
        #expect((stored.value(forKey: "department") as? NSManagedObject)?.objectID == kept.objectID)

        mine.setValue(here.object(with: kept.objectID), forKey: "department")
        try here.save()
    }

    /// A reference made after another context's deletion was merged, to an object still held
    /// from before it, fails the save in the same way, whichever kind of relationship holds it;
    /// the store keeps what it had, and the save goes through once the reference is taken back.
    @Test(arguments: ["department", "employees", "members"])
    func aReferenceMadeAfterTheMergeToAnObjectDeletedElsewhereFailsTheSave(_ key: String) throws {
        let (coordinator, _) = try TestSupport.coordinator(TestSupport.makeCompanyModel())
        let setUp = TestSupport.context(coordinator)
        let kept = Self.insert("Department", "D1", into: setUp)
        let doomedDepartment = Self.insert("Department", "D3", into: setUp)
        let employee = Self.insert("Employee", "E1", ["department": kept], into: setUp)
        let doomedEmployee = Self.insert("Employee", "E2", into: setUp)
        let project = Self.insert("Project", "P1", into: setUp)
        try setUp.save()

        let here = TestSupport.context(coordinator)
        let heldDepartment = here.object(with: doomedDepartment.objectID)
        let heldEmployee = here.object(with: doomedEmployee.objectID)
        let there = TestSupport.context(coordinator)
        here.mergeChanges(fromContextDidSave: try Self.saved(there) {
            there.delete(there.object(with: doomedDepartment.objectID))
            there.delete(there.object(with: doomedEmployee.objectID))
        })
        let owner = here.object(with: (key == "department" ? employee : key == "employees" ? kept : project).objectID)
        if key == "department" { owner.setValue(heldDepartment, forKey: key) } else { owner.mutableSetValue(forKey: key).add(heldEmployee) }

        let error = try #require(throws: NSError.self) { try here.save() }
        #expect(error.domain == NSCocoaErrorDomain && error.code == NSManagedObjectValidationError)
        #expect(error.userInfo[NSValidationKeyErrorKey] as? String == key)
        #expect(here.hasChanges)
        let fresh = TestSupport.context(coordinator)
        #expect((fresh.object(with: employee.objectID).value(forKey: "department") as? NSManagedObject)?.objectID == kept.objectID)
        #expect((fresh.object(with: kept.objectID).value(forKey: "employees") as? Set<NSManagedObject>)?.map(\.objectID) == [employee.objectID])
        #expect((fresh.object(with: project.objectID).value(forKey: "members") as? Set<NSManagedObject>)?.isEmpty == true)

        if key == "department" { owner.setValue(here.object(with: kept.objectID), forKey: key) } else { owner.mutableSetValue(forKey: key).remove(heldEmployee) }
        try here.save()
    }

    /// Inserts an object of the company model with its name (a project's title) and other values.
    private static func insert(_ entity: String, _ name: String, _ values: [String: Any] = [:], into context: NSManagedObjectContext) -> NSManagedObject {
        let object = NSEntityDescription.insertNewObject(forEntityName: entity, into: context)
        object.setValue(name, forKey: entity == "Project" ? "title" : "name")
        for (key, value) in values { object.setValue(value, forKey: key) }
        return object
    }

    /// Makes `changes` in `context` and saves it: the `NSManagedObjectContextDidSave` notification.
    static func saved(_ context: NSManagedObjectContext, _ changes: () throws -> Void) throws -> Notification {
        let notes = SavedNotes()
        let observer = NotificationCenter.default.addObserver(forName: .NSManagedObjectContextDidSave, object: context, queue: nil) { notes.add($0) }
        defer { NotificationCenter.default.removeObserver(observer) }
        try changes()
        try context.save()
        return try #require(notes.last)
    }
}
