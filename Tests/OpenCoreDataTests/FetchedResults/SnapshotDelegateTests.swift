import Foundation
import OpenCoreData
import Testing
import WorldCupKit

/// A delegate that implements only the snapshot form.
final class SnapshotDelegate: NSFetchedResultsControllerDelegate {
    var snapshots: [NSDiffableDataSourceSnapshot<String, NSManagedObjectID>] = []
    var otherCallbacks = 0
    func controller(_ controller: NSFetchedResultsController<NSFetchRequestResult>, didChangeContentWith snapshot: NSDiffableDataSourceSnapshot<String, NSManagedObjectID>) {
        snapshots.append(snapshot)
    }
    func controllerWillChangeContent(_ controller: NSFetchedResultsController<NSFetchRequestResult>) { otherCallbacks += 1 }
    func controllerDidChangeContent(_ controller: NSFetchedResultsController<NSFetchRequestResult>) { otherCallbacks += 1 }
}

/// A delegate written as UIKit apps write it: Apple's snapshot reference, bridged to the typed
/// snapshot a diffable data source applies.
final class SnapshotReferenceDelegate: NSObject, NSFetchedResultsControllerDelegate {
    var references: [NSDiffableDataSourceSnapshotReference] = []
    var applied: [NSDiffableDataSourceSnapshot<String, NSManagedObjectID>] = []
    var otherCallbacks = 0
    func controller(_ controller: NSFetchedResultsController<NSFetchRequestResult>, didChangeContentWith snapshot: NSDiffableDataSourceSnapshotReference) {
        references.append(snapshot)
        let snapshot = snapshot as NSDiffableDataSourceSnapshot<String, NSManagedObjectID>
        applied.append(snapshot)
    }
    func controller(_ controller: NSFetchedResultsController<NSFetchRequestResult>, didChange anObject: Any, at indexPath: IndexPath?,
                    for type: NSFetchedResultsChangeType, newIndexPath: IndexPath?) { otherCallbacks += 1 }
}

/// A delegate that implements only the `CollectionDifference` form.
final class DifferenceDelegate: NSFetchedResultsControllerDelegate {
    var differences: [CollectionDifference<NSManagedObjectID>] = []
    var otherCallbacks = 0
    func controller(_ controller: NSFetchedResultsController<NSFetchRequestResult>, didChangeContentWith diff: CollectionDifference<NSManagedObjectID>) {
        differences.append(diff)
    }
    func controllerDidChangeContent(_ controller: NSFetchedResultsController<NSFetchRequestResult>) { otherCallbacks += 1 }
}

@MainActor
@Suite struct SnapshotDelegateTests {
    private func app() throws -> WorldCupApp {
        let app = try WorldCupApp(storeURL: TestSupport.temporaryDirectory().appendingPathComponent("WorldCup.sqlite"))
        try app.importSeedIfNeeded()
        return app
    }

    private func request() -> NSFetchRequest<Team> { WorldCupApp.teamsRequest() }

    @Test func snapshotsReplaceTheOtherCallbacks() throws {
        let app = try app()
        let controller = NSFetchedResultsController(fetchRequest: request(), managedObjectContext: app.context, sectionNameKeyPath: "qualifyingZone", cacheName: nil)
        let delegate = SnapshotDelegate()
        controller.delegate = delegate
        try controller.performFetch()
        #expect(delegate.snapshots.count == 1, "the fetched state is delivered at once")
        #expect(delegate.snapshots[0].numberOfItems == 32)
        #expect(delegate.snapshots[0].sectionIdentifiers == controller.sections?.map(\.name))
        _ = try app.execute("win Uruguay")
        #expect(delegate.snapshots.count == 2)
        #expect(delegate.otherCallbacks == 0)
        let snapshot = delegate.snapshots[1]
        let uruguay = try #require(try app.team(named: "Uruguay"))
        #expect(snapshot.itemIdentifiers(inSection: "South America").first == uruguay.objectID)
        #expect(snapshot.reloadedItemIdentifiers == [uruguay.objectID], "changed objects are marked reloaded")
        #expect(snapshot.itemIdentifiers == controller.fetchedObjects?.map(\.objectID))
    }

    /// Apple's `NSDiffableDataSourceSnapshotReference` form replaces the other callbacks too, and
    /// bridges to the typed snapshot (`as`, `as?`) or is read untyped.
    @Test func snapshotReferencesBridgeToTypedSnapshots() throws {
        let app = try app()
        let controller = NSFetchedResultsController(fetchRequest: request(), managedObjectContext: app.context, sectionNameKeyPath: "qualifyingZone", cacheName: nil)
        let delegate = SnapshotReferenceDelegate()
        controller.delegate = delegate
        try controller.performFetch()
        _ = try app.execute("win Uruguay")
        #expect(delegate.applied.count == 2)
        #expect(delegate.otherCallbacks == 0)
        let uruguay = try #require(try app.team(named: "Uruguay"))
        let typed = delegate.applied[1]
        #expect(typed.itemIdentifiers == controller.fetchedObjects?.map(\.objectID))
        #expect(typed.reloadedItemIdentifiers == [uruguay.objectID])

        let reference = delegate.references[1]
        #expect(reference.numberOfItems == 32)
        #expect(reference.numberOfSections == controller.sections?.count)
        #expect(reference.sectionIdentifiers as? [String] == controller.sections?.map(\.name))
        #expect((reference.itemIdentifiersInSection(withIdentifier: "South America").first as? NSManagedObjectID) == uruguay.objectID)
        #expect(reference.sectionIdentifierForSection(containingItemIdentifier: uruguay.objectID) as? String == "South America")
        #expect(reference.index(ofItemIdentifier: uruguay.objectID) == controller.fetchedObjects?.firstIndex(of: uruguay))
        #expect(reference.index(ofSectionIdentifier: "Nowhere") == NSNotFound)
        #expect((reference.reloadedItemIdentifiers as? [NSManagedObjectID]) == [uruguay.objectID])

        let empty = NSDiffableDataSourceSnapshotReference() as NSDiffableDataSourceSnapshot<String, NSManagedObjectID>
        #expect(empty.numberOfItems == 0)
        let roundTrip = NSDiffableDataSourceSnapshotReference(typed) as NSDiffableDataSourceSnapshot<String, NSManagedObjectID>
        #expect(roundTrip.itemIdentifiers == typed.itemIdentifiers)
    }

    @Test func differencesWithoutSections() throws {
        let app = try app()
        let request = NSFetchRequest<Team>(entityName: "Team")
        request.sortDescriptors = [NSSortDescriptor(key: "wins", ascending: false), NSSortDescriptor(key: "teamName", ascending: true)]
        let controller = NSFetchedResultsController(fetchRequest: request, managedObjectContext: app.context, sectionNameKeyPath: nil, cacheName: nil)
        let delegate = DifferenceDelegate()
        controller.delegate = delegate
        try controller.performFetch()
        let before = controller.fetchedObjects?.map(\.objectID) ?? []
        _ = try app.execute("win Ghana")
        _ = try app.execute("delete Japan")
        #expect(delegate.differences.count == 2)
        #expect(delegate.otherCallbacks == 0)
        var applied = before
        for difference in delegate.differences { applied = applied.applying(difference) ?? [] }
        #expect(applied == controller.fetchedObjects?.map(\.objectID))
    }

    @Test func snapshotEditing() {
        var snapshot = NSDiffableDataSourceSnapshot<String, Int>()
        snapshot.appendSections(["a", "b"])
        snapshot.appendItems([1, 2, 3], toSection: "a")
        snapshot.appendItems([4])
        snapshot.insertItems([9], afterItem: 1)
        snapshot.moveItem(3, beforeItem: 1)
        snapshot.deleteItems([2])
        #expect(snapshot.itemIdentifiers(inSection: "a") == [3, 1, 9])
        #expect(snapshot.itemIdentifiers(inSection: "b") == [4])
        #expect(snapshot.sectionIdentifier(containingItem: 4) == "b")
        #expect(snapshot.indexOfItem(4) == 3)
        #expect(snapshot.numberOfItems == 4)
        snapshot.deleteSections(["a"])
        #expect(snapshot.itemIdentifiers == [4])
    }
}

/// Beyond Apple: the controller's changes as an `AsyncSequence`.
@MainActor
@Suite struct UpdateStreamTests {
    @Test func updatesStreamSnapshotsAndDifferences() async throws {
        let app = try WorldCupApp(storeURL: TestSupport.temporaryDirectory().appendingPathComponent("WorldCup.sqlite"))
        try app.importSeedIfNeeded()
        let request = NSFetchRequest<Team>(entityName: "Team")
        request.sortDescriptors = [NSSortDescriptor(key: "wins", ascending: false), NSSortDescriptor(key: "teamName", ascending: true)]
        let controller = NSFetchedResultsController(fetchRequest: request, managedObjectContext: app.context, sectionNameKeyPath: nil, cacheName: nil)
        try controller.performFetch()
        var iterator = controller.updates.makeAsyncIterator()
        let initial = try #require(await iterator.next())
        #expect(initial.snapshot.numberOfItems == 32)
        _ = try app.execute("win Ghana")
        let update = try #require(await iterator.next())
        let ghana = try #require(try app.team(named: "Ghana"))
        #expect(update.snapshot.itemIdentifiers.first == ghana.objectID)
        #expect(initial.snapshot.itemIdentifiers.applying(update.difference) == update.snapshot.itemIdentifiers)
        #expect(controller.delegate == nil, "tracking runs for the stream alone")
    }
}
