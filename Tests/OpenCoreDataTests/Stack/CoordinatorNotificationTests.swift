import Foundation
import OpenCoreData
import Testing

/// The coordinator's store notifications: `NSPersistentStoreCoordinatorStoresDidChange` when
/// stores are added, removed or migrated, `NSPersistentStoreCoordinatorWillRemoveStore` before a
/// store goes.
@Suite struct CoordinatorNotificationTests {
    /// The notifications of one name posted by one object while `body` runs.
    func notes(_ name: Notification.Name, from object: AnyObject?, during body: () throws -> Void) rethrows -> [Notification] {
        let box = NotesBox()
        let observer = NotificationCenter.default.addObserver(forName: name, object: object, queue: nil) { box.append($0) }
        defer { NotificationCenter.default.removeObserver(observer) }
        try body()
        return box.notes
    }

    @Test func addingRemovingAndMigratingStoresIsAnnounced() throws {
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: TestSupport.makeCompanyModel())
        let directory = TestSupport.temporaryDirectory()
        var store: NSPersistentStore!
        let added = try notes(.NSPersistentStoreCoordinatorStoresDidChange, from: coordinator) {
            store = try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: directory.appendingPathComponent("a.sqlite"))
        }
        #expect(added.count == 1)
        #expect((added.first?.userInfo?[NSAddedPersistentStoresKey] as? [NSPersistentStore])?.first === store)
        #expect(added.first?.userInfo?[NSRemovedPersistentStoresKey] == nil)

        var migrated: NSPersistentStore!
        let moved = try notes(.NSPersistentStoreCoordinatorStoresDidChange, from: coordinator) {
            migrated = try coordinator.migratePersistentStore(store, to: directory.appendingPathComponent("b.sqlite"), options: nil, withType: NSSQLiteStoreType)
        }
        #expect(moved.compactMap { ($0.userInfo?[NSAddedPersistentStoresKey] as? [NSPersistentStore])?.first }.map(ObjectIdentifier.init) == [ObjectIdentifier(migrated)])
        #expect(moved.compactMap { ($0.userInfo?[NSRemovedPersistentStoresKey] as? [NSPersistentStore])?.first }.map(ObjectIdentifier.init) == [ObjectIdentifier(store)])

        // At will-remove the store is still the coordinator's.
        let probe = StoreProbe(coordinator, migrated)
        let observer = NotificationCenter.default.addObserver(forName: .NSPersistentStoreCoordinatorWillRemoveStore, object: migrated, queue: nil) { _ in
            probe.look()
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        let removed = try notes(.NSPersistentStoreCoordinatorStoresDidChange, from: coordinator) { try coordinator.remove(migrated) }
        #expect((removed.first?.userInfo?[NSRemovedPersistentStoresKey] as? [NSPersistentStore])?.first === migrated)
        #expect(probe.sightings == [true])
        #expect(coordinator.persistentStores.isEmpty)
    }
}

/// Whether a store is among its coordinator's stores, each time it is asked to look.
final class StoreProbe: @unchecked Sendable {
    private let coordinator: NSPersistentStoreCoordinator
    private let store: NSPersistentStore
    private(set) var sightings: [Bool] = []
    init(_ coordinator: NSPersistentStoreCoordinator, _ store: NSPersistentStore) { (self.coordinator, self.store) = (coordinator, store) }
    func look() { sightings.append(coordinator.persistentStores.contains { $0 === store }) }
}

/// Notifications collected by an observer block.
final class NotesBox: @unchecked Sendable {
    private let lock = NSLock()
    private var collected: [Notification] = []
    var notes: [Notification] { lock.withLock { collected } }
    func append(_ note: Notification) { lock.withLock { collected.append(note) } }
}
