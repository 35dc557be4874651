import Foundation
import OpenCoreData
import Testing

/// Undo and redo of changes a save has written since: the object graph, the store and the
/// versions the next save checks must agree afterwards.
@Suite struct UndoAcrossSavesTests {
    /// A context with an undo manager over a new SQLite store of the players' model, holding a
    /// department with one saved player.
    private static func stage() throws -> (NSManagedObjectContext, player: NSManagedObject, department: NSManagedObject) {
        let (coordinator, _) = try TestSupport.coordinator(FetchedResultsPropertyTests.model())
        let context = TestSupport.context(coordinator)
        let department = NSEntityDescription.insertNewObject(forEntityName: "Department", into: context)
        department.setValue("D1", forKey: "name")
        let player = NSEntityDescription.insertNewObject(forEntityName: "Player", into: context)
        player.setValue("Ann", forKey: "name")
        player.setValue(department, forKey: "department")
        try context.save()
        context.undoManager = UndoManager()
        return (context, player, department)
    }

    /// The players' names and departments a new context reads from the store.
    private static func stored(_ context: NSManagedObjectContext) throws -> [String] {
        let fresh = TestSupport.context(context.persistentStoreCoordinator!)
        return try fresh.fetch(NSFetchRequest<NSManagedObject>(entityName: "Player")).map { player in
            "\(player.value(forKey: "name") ?? "nil") in \((player.value(forKey: "department") as? NSManagedObject)?.value(forKey: "name") ?? "nil")"
        }.sorted()
    }

    @Test func anObjectSavedAgainAfterUndoingItsSavedDeletionCanBeChangedAndSaved() throws {
        let (context, player, _) = try Self.stage()
        context.delete(player)
        try context.save()
        context.undo()
        try context.save()
        // The row was written anew at its first version: the next save's check must expect that one.
        player.setValue(Int64(3), forKey: "score")
        try context.save()
        #expect(try Self.stored(context) == ["Ann in D1"])
        #expect(player.value(forKey: "score") as? Int64 == 3)
    }

    @Test func undoingAnEarlierChangeOfAnObjectBroughtBackByUndoKeepsItInserted() throws {
        let (context, player, _) = try Self.stage()
        player.setValue("Bea", forKey: "name")
        context.processPendingChanges()
        context.delete(player)
        try context.save()
        context.undo()  // the deletion: the player is inserted again, its row is gone
        context.undo()  // the rename: still to be inserted, with its first name
        #expect(player.isInserted)
        #expect(player.value(forKey: "name") as? String == "Ann")
        try context.save()
        #expect(try Self.stored(context) == ["Ann in D1"])
    }

    @Test func undoingTheDeletionOfAnObjectBroughtBackByUndoInsertsItAgain() throws {
        let (context, player, department) = try Self.stage()
        context.delete(player)
        try context.save()
        context.undo()  // inserted again
        context.processPendingChanges()
        context.delete(player)  // deleting an inserted object forgets it
        try context.save()
        context.undo()  // back, and still without a row
        #expect(player.isInserted)
        #expect((department.value(forKey: "players") as? Set<NSManagedObject>) == [player])
        try context.save()
        #expect(try Self.stored(context) == ["Ann in D1"])
    }

    @Test func undoingTheSavedDeletionOfTwoRelatedObjectsStoresTheirManyToManyRelationshipAgain() throws {
        let (coordinator, _) = try TestSupport.coordinator(TestSupport.makeCompanyModel())
        let context = TestSupport.context(coordinator)
        let employee = NSEntityDescription.insertNewObject(forEntityName: "Employee", into: context)
        employee.setValue("Ann", forKey: "name")
        let project = NSEntityDescription.insertNewObject(forEntityName: "Project", into: context)
        project.setValue("Atlas", forKey: "title")
        employee.mutableSetValue(forKey: "projects").add(project)
        try context.save()
        context.undoManager = UndoManager()
        context.delete(employee)
        context.delete(project)
        try context.save()  // the rows and the join row are gone
        context.undo()  // both inserted again, still members of each other
        #expect(employee.isInserted && project.isInserted)
        try context.save()
        let fresh = TestSupport.context(coordinator)
        let stored = try #require(try fresh.fetch(NSFetchRequest<NSManagedObject>(entityName: "Project")).first)
        let members = stored.value(forKey: "members") as? Set<NSManagedObject> ?? []
        #expect(members.map { $0.value(forKey: "name") as? String } == ["Ann"], "the join row is written again")
    }

    static let seeds = Int(ProcessInfo.processInfo.environment["OPENCOREDATA_UNDO_SEEDS"] ?? "") ?? 40
    static let steps = Int(ProcessInfo.processInfo.environment["OPENCOREDATA_UNDO_STEPS"] ?? "") ?? 200

    /// Random edits with undo and redo, across saves, refreshes and deletions merged from
    /// elsewhere, checked after every step: every relationship agrees with its inverse, nothing
    /// live refers to a deleted object, every save succeeds and writes the graph the context
    /// shows. `OPENCOREDATA_UNDO_SEEDS` and `OPENCOREDATA_UNDO_STEPS` make the run longer.
    @Test(arguments: 0..<seeds)
    func randomEditsUndoAndRedoKeepTheGraphConsistentAndSavable(_ seed: Int) throws {
        let (coordinator, _) = try TestSupport.coordinator(FetchedResultsPropertyTests.model())
        let context = TestSupport.context(coordinator)
        var random = DifferentialTests.Generator(state: UInt64(seed) &* 7919 &+ 17)
        let departmentIDs = try FetchedResultsPropertyTests.insertTeams(into: context, random: &random).map(\.objectID)
        context.undoManager = UndoManager()
        let elsewhere = TestSupport.context(coordinator)

        var log: [String] = []
        for step in 0..<Self.steps {
            // In one order whatever the process's hashing, so that a seed replays.
            let players = try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Player")).sorted { Self.name($0) < Self.name($1) }
            let departments = departmentIDs.map { context.object(with: $0) }
            switch random.int(0..<14) {
            case 0..<7:
                let kind = random.int(0..<7)
                if let change = FetchedResultsPropertyTests.randomChange(kind, in: context, players: players, departments: departments, random: &random) {
                    log.append(change)
                }
            case 7, 8:
                context.processPendingChanges()
                context.undo()
                log.append("undo")
            case 9:
                context.processPendingChanges()
                context.redo()
                log.append("redo")
            case 10:
                do {
                    try context.save()
                    log.append("save")
                } catch {
                    Issue.record("seed \(seed) step \(step): the save failed: \(error) after \(log.suffix(16))")
                    return
                }
                let shown = try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Player")).map(Self.describe).sorted()
                let fresh = TestSupport.context(coordinator)
                let stored = try fresh.fetch(NSFetchRequest<NSManagedObject>(entityName: "Player")).map(Self.describe).sorted()
                guard stored == shown else {
                    Issue.record("seed \(seed) step \(step): the store holds \(stored) where the context shows \(shown) after \(log.suffix(16))")
                    return
                }
            case 11:
                // Forgets the loaded to-many sets of unchanged objects (they fault in again later).
                for department in departments where !department.hasChanges { context.refresh(department, mergeChanges: false) }
                log.append("refresh departments")
            case 12:
                if let deletion = try Self.deleteOne("Player", in: elsewhere, mergingInto: context, random: &random) { log.append(deletion) }
            default:
                context.processPendingChanges()
                log.append("event")
            }
            if let disagreement = Self.inconsistency(in: context, departmentIDs: departmentIDs) {
                Issue.record("seed \(seed) step \(step): \(disagreement) after \(log.suffix(16))")
                return
            }
        }
    }

    /// Deletes a random saved object of an entity in `elsewhere` with a batch delete and merges
    /// the deletion into `context` by ID, as another process's change arrives; describes it (nil
    /// when there was none to delete).
    static func deleteOne(_ entityName: String, in elsewhere: NSManagedObjectContext, mergingInto context: NSManagedObjectContext,
                          random: inout DifferentialTests.Generator) throws -> String? {
        let saved = try elsewhere.fetch(NSFetchRequest<NSManagedObject>(entityName: entityName)).sorted { name($0) < name($1) }
        guard !saved.isEmpty else { return nil }
        let victim = random.pick(saved)
        let request = NSBatchDeleteRequest(objectIDs: [victim.objectID])
        request.resultType = .resultTypeObjectIDs
        let deleted = (try elsewhere.execute(request) as? NSBatchDeleteResult)?.result as? [NSManagedObjectID] ?? []
        NSManagedObjectContext.mergeChanges(fromRemoteContextSave: [NSDeletedObjectsKey: deleted], into: [context])
        elsewhere.reset()
        return "deleted elsewhere \(entityName) \(name(victim))"
    }

    private static func name(_ object: NSManagedObject) -> String { "#" + object.objectID.uriRepresentation().lastPathComponent }

    private static func describe(_ player: NSManagedObject) -> String {
        "\(name(player)) \(player.value(forKey: "name") ?? "nil") in \((player.value(forKey: "department") as? NSManagedObject).map(name) ?? "-")"
    }

    /// The first relationship in `context` that disagrees with its inverse or refers to a
    /// deleted object, described; nil when there is none.
    private static func inconsistency(in context: NSManagedObjectContext, departmentIDs: [NSManagedObjectID]) -> String? {
        for department in departmentIDs.map({ context.object(with: $0) }) where !department.isDeleted {
            for member in department.value(forKey: "players") as? Set<NSManagedObject> ?? [] {
                let back = member.value(forKey: "department") as? NSManagedObject
                guard !member.isDeleted, back === department else {
                    return "\(name(department)).players holds \(name(member)) (deleted: \(member.isDeleted), in \(back.map(name) ?? "-"))"
                }
            }
        }
        let players = context.registeredObjects.filter { $0.entity.name == "Player" && !$0.isDeleted && !$0.isFault }
        for player in players.sorted(by: { name($0) < name($1) }) {
            guard let department = player.value(forKey: "department") as? NSManagedObject else { continue }
            let members = department.value(forKey: "players") as? Set<NSManagedObject> ?? []
            guard !department.isDeleted, members.contains(player) else {
                return "\(name(player)).department is \(name(department)), whose players don't hold it (deleted: \(department.isDeleted))"
            }
        }
        return nil
    }
}
