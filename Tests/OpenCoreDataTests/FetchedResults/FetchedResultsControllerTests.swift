import Foundation
import OpenCoreData
import OpenCoreDataTestKit
import Testing
import WorldCupKit

/// The World Cup screen of the tutorial: sections by qualifying zone, wins descending, name.
@MainActor
@Suite struct FetchedResultsControllerTests {
    private func worldCup() throws -> (WorldCupApp, NSFetchedResultsController<Team>, TestTableView) {
        let app = try WorldCupApp(storeURL: TestSupport.temporaryDirectory().appendingPathComponent("WorldCup.sqlite"))
        try app.importSeedIfNeeded()
        let controller = NSFetchedResultsController(fetchRequest: WorldCupApp.teamsRequest(), managedObjectContext: app.context, sectionNameKeyPath: "qualifyingZone", cacheName: nil)
        let table = TestTableView()
        controller.delegate = table
        try controller.performFetch()
        table.reload(from: controller)
        return (app, controller, table)
    }

    @Test func sectionsAndLookups() throws {
        let (app, controller, _) = try worldCup()
        let sections = try #require(controller.sections)
        let zones = try app.sections().map(\.zone)
        #expect(sections.map(\.name) == zones)
        #expect(sections.reduce(0) { $0 + $1.numberOfObjects } == 32)
        let first = controller.object(at: IndexPath(row: 0, section: 0))
        #expect(controller.indexPath(forObject: first) == IndexPath(row: 0, section: 0))
        #expect(controller.fetchedObjects?.count == 32)
        #expect(controller.sectionIndexTitles == ["A", "E", "N", "S"])
        #expect(controller.section(forSectionIndexTitle: "E", at: 1) == 2)
        #expect(controller.sectionIndexTitle(forSectionName: "Europe") == "E")
    }

    @Test func aWinMovesATeamWithinItsSection() throws {
        let (app, controller, table) = try worldCup()
        let output = try app.execute("win Uruguay").output
        #expect(output.contains("1 wins"))
        #expect(table.failures.isEmpty, "\(table.failures)")
        #expect(table.batches == 1)
        #expect(table.log.filter { $0.hasPrefix("move") }.count == 1, "\(table.log)")
        let uruguay = try #require(try app.team(named: "Uruguay"))
        let path = try #require(controller.indexPath(forObject: uruguay))
        #expect(path.row == 0, "the only team with a win leads its zone")
        // A second win changes nothing in the order: an update, not a move.
        _ = try app.execute("win Uruguay")
        #expect(table.log.last?.hasPrefix("update") == true, "\(table.log)")
        #expect(table.failures.isEmpty, "\(table.failures)")
    }

    /// Another coordinator opening the same store file (an importer, a widget) must not change
    /// which rows the controller's objects are: a win after it opened moves the team, it doesn't
    /// add it a second time.
    @Test func anotherCoordinatorOnTheSameFileLeavesTheRowsAlone() throws {
        let app = try WorldCupApp(storeURL: TestSupport.temporaryDirectory().appendingPathComponent("WorldCup.sqlite"))
        try app.importSeedIfNeeded()
        // With a batch size the rows come from the store as keys, without objects.
        let request = WorldCupApp.teamsRequest()
        request.fetchBatchSize = 20
        let controller = NSFetchedResultsController(fetchRequest: request, managedObjectContext: app.context, sectionNameKeyPath: "qualifyingZone", cacheName: nil)
        let table = TestTableView()
        controller.delegate = table
        try controller.performFetch()
        table.reload(from: controller)
        let url = try #require(app.context.persistentStoreCoordinator?.persistentStores.first?.url)
        let other = NSPersistentStoreCoordinator(managedObjectModel: try #require(app.context.persistentStoreCoordinator?.managedObjectModel))
        let otherStore = try other.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url, options: nil)
        #expect(otherStore.identifier == app.context.persistentStoreCoordinator?.persistentStores.first?.identifier)
        _ = try app.execute("win Uruguay")
        _ = try app.execute("win Brazil")
        #expect(controller.fetchedObjects?.count == 32)
        #expect(Set(controller.fetchedObjects?.map(\.objectID) ?? []).count == 32)
        #expect(table.failures.isEmpty, "\(table.failures)")
        withExtendedLifetime(other) {}
    }

    @Test func newZoneInsertsASectionAndDeletingItsTeamRemovesIt() throws {
        let (app, controller, table) = try worldCup()
        _ = try app.execute("add Atlantis \"Lost Zone\"")
        #expect(table.log.contains { $0.hasPrefix("section insert") }, "\(table.log)")
        #expect(controller.sections?.contains { $0.name == "Lost Zone" } == true)
        _ = try app.execute("delete Atlantis")
        #expect(table.log.contains { $0.hasPrefix("section delete") }, "\(table.log)")
        #expect(controller.sections?.contains { $0.name == "Lost Zone" } == false)
        #expect(table.failures.isEmpty, "\(table.failures)")
    }

    /// A team added without saving, then edited in a later event (a detail screen editing a new
    /// row): the event lists it as updated, though the context still counts it as inserted, so
    /// the controller moves and updates its row before any save.
    @Test func editingAnUnsavedInsertedObjectMovesAndUpdatesItsRow() throws {
        let (app, controller, table) = try worldCup()
        let updatedInEvents = UpdatedObjectsLog()
        let token = NotificationCenter.default.addObserver(forName: .NSManagedObjectContextObjectsDidChange, object: app.context, queue: nil) { note in
            updatedInEvents.append((note.userInfo?[NSUpdatedObjectsKey] as? Set<NSManagedObject>) ?? [])
        }
        defer { NotificationCenter.default.removeObserver(token) }
        let zembla = WorldCupApp.insertTeam(named: "Zembla", zone: "Europe", into: app.context)
        zembla.wins = 0
        app.context.processPendingChanges()
        #expect(table.log.last?.hasPrefix("insert") == true, "\(table.log)")
        let europe = try #require(controller.sections?.firstIndex { $0.name == "Europe" })
        #expect(controller.indexPath(forObject: zembla)?.row == (controller.sections?[europe].numberOfObjects ?? 0) - 1, "last in its zone, without wins")
        #expect(updatedInEvents.events.last?.contains(zembla) == false, "inserted in the event: not updated in it")
        zembla.wins = 99
        app.context.processPendingChanges()
        #expect(updatedInEvents.events.last?.contains(zembla) == true)
        #expect(app.context.insertedObjects.contains(zembla))
        #expect(!app.context.updatedObjects.contains(zembla))
        #expect(table.log.last?.hasPrefix("move") == true, "\(table.log)")
        #expect(controller.indexPath(forObject: zembla) == IndexPath(row: 0, section: europe))
        zembla.imageName = "zembla-flag-2"
        app.context.processPendingChanges()
        #expect(table.log.last?.hasPrefix("update") == true, "\(table.log)")
        #expect(table.failures.isEmpty, "\(table.failures)")
        #expect(table.sections.map { $0.rows.map(\.objectID) } == controller.sections?.map { ($0.objects as? [NSManagedObject] ?? []).map(\.objectID) })
        // Saved, it is an ordinary object again: no longer inserted, and updated when changed.
        try app.context.save()
        zembla.wins = 1
        app.context.processPendingChanges()
        #expect(app.context.updatedObjects.contains(zembla))
        #expect(table.failures.isEmpty, "\(table.failures)")
    }

    @Test func outOfOrderSectionsAreAnError() throws {
        let (app, _, _) = try worldCup()
        let request = NSFetchRequest<Team>(entityName: "Team")
        request.sortDescriptors = [NSSortDescriptor(key: "teamName", ascending: true)]
        let controller = NSFetchedResultsController(fetchRequest: request, managedObjectContext: app.context, sectionNameKeyPath: "qualifyingZone", cacheName: nil)
        let error = try #require(throws: NSError.self) { try controller.performFetch() }
        #expect(error.code == NSCoreDataError)
        #expect(error.localizedDescription.contains("out of order section name"))
        let unsorted = NSFetchedResultsController(fetchRequest: NSFetchRequest<Team>(entityName: "Team"), managedObjectContext: app.context, sectionNameKeyPath: nil, cacheName: nil)
        #expect(throws: NSError.self) { try unsorted.performFetch() }
    }

    /// Random inserts, deletes and updates of sort keys and section keys, saved in batches: after
    /// every save the test table (which fails exactly where UITableView raises) equals a fresh fetch.
    @Test func randomChangesKeepTheTableExact() throws {
        let (app, controller, table) = try worldCup()
        var random = DifferentialTests.Generator(state: 7)
        let zones = ["Africa", "Asia", "Europe", "North America", "South America", "Oceania"]
        let rounds = Int(ProcessInfo.processInfo.environment["OPENCOREDATA_FRC_ROUNDS"] ?? "") ?? 150
        var added = 0
        for _ in 0..<rounds {
            let teams = controller.fetchedObjects ?? []
            for _ in 0..<random.int(1..<5) {
                switch random.int(0..<5) {
                case 0:
                    let team = Team(context: app.context)
                    added += 1
                    team.teamName = "Team \(added)"
                    team.qualifyingZone = random.pick(zones)
                    team.wins = Int32(random.int(0..<4))
                case 1 where !teams.isEmpty:
                    let victim = random.pick(teams)
                    if !victim.isDeleted { app.context.delete(victim) }
                case 2 where !teams.isEmpty:
                    random.pick(teams).wins = Int32(random.int(0..<6))
                case 3 where !teams.isEmpty:
                    random.pick(teams).qualifyingZone = random.pick(zones)
                case 4 where !teams.isEmpty:
                    random.pick(teams).imageName = "changed-\(random.int(0..<100))"
                default:
                    break
                }
            }
            try app.context.save()
            let fresh = try app.sections()
            #expect(table.failures.isEmpty, "\(table.failures.prefix(3))")
            #expect(table.sections.map(\.name) == fresh.map(\.zone))
            #expect(table.sections.map { $0.rows.map(\.objectID) } == fresh.map { $0.teams.map(\.objectID) })
            if !table.failures.isEmpty { break }
        }
        #expect(table.batches > 0)
    }

    @Test func backgroundSavesMergedIntoTheViewContextUpdateTheTable() async throws {
        let (app, controller, table) = try worldCup()
        app.context.automaticallyMergesChangesFromParent = true
        let brazil = try #require(try app.team(named: "Brazil"))
        let id = brazil.objectID
        try await app.container.performBackgroundTask { context in
            let team = context.object(with: id)
            team.setValue(Int32(9), forKey: "wins")
            let newcomer = NSEntityDescription.insertNewObject(forEntityName: "Team", into: context)
            newcomer.setValue("Newcomer", forKey: "teamName")
            newcomer.setValue("Africa", forKey: "qualifyingZone")
            try context.save()
        }
        _ = try await eventually(every: .milliseconds(5)) { table.batches > 0 }
        // The merge runs on the main queue under the view context's lock (the table counts the
        // batch before it applies it): perform takes that lock, so it waits for the merge to end.
        await app.context.perform {}
        #expect(table.batches >= 1)
        #expect(table.failures.isEmpty, "\(table.failures)")
        #expect(controller.fetchedObjects?.count == 33)
        let southAmerica = try #require(controller.sections?.first { $0.name == "South America" })
        #expect((southAmerica.objects?.first as? Team)?.teamName == "Brazil")
        let fresh = try app.sections()
        #expect(table.sections.map { $0.rows.map(\.objectID) } == fresh.map { $0.teams.map(\.objectID) })
    }
}

/// The updated objects of each `NSManagedObjectContextObjectsDidChange`, in order.
private final class UpdatedObjectsLog: @unchecked Sendable {
    private(set) var events: [Set<NSManagedObject>] = []
    func append(_ objects: Set<NSManagedObject>) { events.append(objects) }
}
