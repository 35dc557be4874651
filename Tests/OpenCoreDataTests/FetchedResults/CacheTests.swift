import Foundation
import OpenCoreData
@testable import OpenCoreDataCore
import Testing
import WorldCupKit

/// `cacheName`: a relaunch on unchanged data reads the results from the cache instead of the store.
@MainActor
@Suite struct CacheTests {
    private func request() -> NSFetchRequest<Team> { WorldCupApp.teamsRequest() }

    /// Two coordinators on one file each save once: the change counter (the cache's token) counts
    /// both saves, though each coordinator's own copy of the metadata saw only one.
    @Test func theChangeCounterCountsEverySaveOfEveryCoordinator() throws {
        let url = TestSupport.temporaryDirectory().appendingPathComponent("WorldCup.sqlite")
        let first = try WorldCupApp(storeURL: url)
        try first.importSeedIfNeeded()
        let second = try WorldCupApp(storeURL: url)
        let stores = { (app: WorldCupApp) in app.container.persistentStoreCoordinator.persistentStores }
        let before = FetchedResultsCache.storeToken(stores(first))
        _ = try first.execute("win Ghana")
        let afterFirst = FetchedResultsCache.storeToken(stores(second))
        _ = try second.execute("win Brazil")
        let afterSecond = FetchedResultsCache.storeToken(stores(first))
        #expect(Set([before, afterFirst, afterSecond]).count == 3, "\(before) \(afterFirst) \(afterSecond)")
    }

    @Test func relaunchUsesTheCacheUntilTheStoreChanges() throws {
        let url = TestSupport.temporaryDirectory().appendingPathComponent("WorldCup.sqlite")
        let cacheName = "worldcup-\(UUID().uuidString)"
        defer { NSFetchedResultsController<Team>.deleteCache(withName: cacheName) }
        var firstNames: [[String]] = []
        do {
            let app = try WorldCupApp(storeURL: url)
            try app.importSeedIfNeeded()
            let controller = NSFetchedResultsController(fetchRequest: request(), managedObjectContext: app.context, sectionNameKeyPath: "qualifyingZone", cacheName: cacheName)
            try controller.performFetch()
            firstNames = controller.sections?.map { ($0.objects ?? []).compactMap { ($0 as? Team)?.teamName } } ?? []
            #expect(FileManager.default.fileExists(atPath: FetchedResultsCache(name: cacheName).url.path))
        }
        // "Relaunch": a new stack over the same file.
        do {
            let app = try WorldCupApp(storeURL: url)
            let controller = NSFetchedResultsController(fetchRequest: request(), managedObjectContext: app.context, sectionNameKeyPath: "qualifyingZone", cacheName: cacheName)
            let (_, log) = try SQLDebugLog.capturing { try controller.performFetch() }
            #expect(log.filter { $0.hasPrefix("sql: ") }.isEmpty, "served from the cache: \(log)")
            #expect(controller.sections?.map { ($0.objects ?? []).compactMap { ($0 as? Team)?.teamName } } == firstNames)
            _ = try app.execute("win Ghana")
        }
        // The store changed: the cache is stale and the fetch runs again.
        do {
            let app = try WorldCupApp(storeURL: url)
            let controller = NSFetchedResultsController(fetchRequest: request(), managedObjectContext: app.context, sectionNameKeyPath: "qualifyingZone", cacheName: cacheName)
            let (_, log) = try SQLDebugLog.capturing { try controller.performFetch() }
            #expect(!log.filter { $0.hasPrefix("sql: ") }.isEmpty)
            let africa = try #require(controller.sections?.first { $0.name == "Africa" })
            #expect((africa.objects?.first as? Team)?.teamName == "Ghana")
            // Another request under the same name is an error until the cache is deleted.
            let other = request()
            other.predicate = NSPredicate(format: "wins > 0")
            let mutated = NSFetchedResultsController(fetchRequest: other, managedObjectContext: app.context, sectionNameKeyPath: "qualifyingZone", cacheName: cacheName)
            let error = try #require(throws: NSError.self) { try mutated.performFetch() }
            #expect(error.localizedDescription.contains(cacheName))
            NSFetchedResultsController<Team>.deleteCache(withName: cacheName)
            try mutated.performFetch()
            #expect(mutated.fetchedObjects?.count == 1)
        }
    }
}
