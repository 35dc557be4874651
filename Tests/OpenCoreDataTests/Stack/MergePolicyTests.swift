import Foundation
import GRDB
import OpenCoreData
import OpenCoreDataTestKit
import Testing

/// Optimistic-locking conflicts between two contexts (each on its own coordinator, as two
/// processes would be) saving the same object of one SQLite store, under each merge policy.
@Suite struct MergePolicyTests {
    /// Item: name, price, note. Tag: code (unique), label.
    static func makeModel() -> NSManagedObjectModel {
        let item = NSEntityDescription(name: "Item", className: "NSManagedObject")
        item.properties = [
            NSAttributeDescription(name: "name", type: .stringAttributeType),
            NSAttributeDescription(name: "price", type: .integer64AttributeType),
            NSAttributeDescription(name: "note", type: .stringAttributeType),
        ]
        let tag = NSEntityDescription(name: "Tag", className: "NSManagedObject")
        tag.properties = [
            NSAttributeDescription(name: "code", type: .stringAttributeType),
            NSAttributeDescription(name: "label", type: .stringAttributeType),
        ]
        tag.uniquenessConstraints = [["code"]]
        let model = NSManagedObjectModel()
        model.entities = [item, tag]
        return model
    }

    /// A store file with one saved item, and two contexts (on two coordinators) that both read it.
    struct Scenario {
        let url: URL
        let mine: NSManagedObjectContext
        let theirs: NSManagedObjectContext
        let item: NSManagedObject
        let theirItem: NSManagedObject
        // Kept alive for the contexts.
        let coordinators: [NSPersistentStoreCoordinator]

        init(storeType: String = NSSQLiteStoreType) throws {
            let model = MergePolicyTests.makeModel()
            let (first, url) = try TestSupport.coordinator(model, type: storeType)
            let second: NSPersistentStoreCoordinator
            if storeType == NSSQLiteStoreType {
                second = NSPersistentStoreCoordinator(managedObjectModel: model)
                try second.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url, options: nil)
            } else {
                second = first
            }
            self.url = url ?? URL(fileURLWithPath: "/dev/null")
            coordinators = [first, second]
            mine = TestSupport.context(first)
            theirs = TestSupport.context(second)
            let original = NSEntityDescription.insertNewObject(forEntityName: "Item", into: mine)
            original.setValue("Original", forKey: "name")
            original.setValue(10, forKey: "price")
            original.setValue("first note", forKey: "note")
            try mine.save()
            item = original
            theirItem = try theirs.existingObject(with: original.objectID)
            _ = theirItem.value(forKey: "name")
        }

        /// The other context changes price and note and saves; this one changes name and price.
        func makeConflict() throws {
            theirItem.setValue(20, forKey: "price")
            theirItem.setValue("their note", forKey: "note")
            try theirs.save()
            item.setValue("Mine", forKey: "name")
            item.setValue(30, forKey: "price")
        }

        /// The item's row (the first stored) as the file holds it: name, price, note, Z_OPT.
        func storedRow() throws -> (String?, Int?, String?, Int?) {
            let queue = try DatabaseQueue(path: url.path)
            defer { try? queue.close() }
            return try queue.read { db in
                let row = try #require(try Row.fetchOne(db, sql: "SELECT ZNAME, ZPRICE, ZNOTE, Z_OPT FROM ZITEM ORDER BY Z_PK LIMIT 1"))
                return (row["ZNAME"], row["ZPRICE"], row["ZNOTE"], row["Z_OPT"])
            }
        }

        func values(_ object: NSManagedObject) -> (String?, Int64?, String?) {
            (object.value(forKey: "name") as? String, object.value(forKey: "price") as? Int64, object.value(forKey: "note") as? String)
        }

        func cleanUp() {
            if url.path != "/dev/null" { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        }
    }

    @Test func errorPolicyReportsTheConflictAndChangesNothing() throws {
        let scenario = try Scenario()
        defer { scenario.cleanUp() }
        try scenario.makeConflict()
        #expect(scenario.mine.mergePolicy as? NSMergePolicy === NSErrorMergePolicy, "the default policy")
        let error = try #require(throws: NSError.self) { try scenario.mine.save() }
        #expect(error.domain == NSCocoaErrorDomain)
        #expect(error.code == NSManagedObjectMergeError)
        let conflicts = try #require(error.userInfo[NSPersistentStoreSaveConflictsErrorKey] as? [NSMergeConflict])
        #expect(conflicts.count == 1)
        let conflict = try #require(conflicts.first)
        #expect(conflict.sourceObject === scenario.item)
        #expect(conflict.oldVersionNumber == 1)
        #expect(conflict.newVersionNumber == 2)
        #expect(conflict.cachedSnapshot?["price"] as? Int64 == 10)
        #expect(conflict.cachedSnapshot?["note"] as? String == "first note")
        #expect(conflict.persistedSnapshot?["price"] as? Int64 == 20)
        #expect(conflict.persistedSnapshot?["note"] as? String == "their note")
        #expect(conflict.persistedSnapshot?["name"] as? String == "Original")
        #expect(conflict.objectSnapshot?["price"] as? Int64 == 30)
        #expect(conflict.objectSnapshot?["name"] as? String == "Mine")
        // All or nothing: the store keeps the other save, the context keeps its changes.
        let (name, price, note, version) = try scenario.storedRow()
        #expect(name == "Original" && price == 20 && note == "their note" && version == 2)
        #expect(scenario.mine.hasChanges)
        #expect(scenario.values(scenario.item) == ("Mine", 30, "first note"))
    }

    /// The resolving policies and the values they give price and note (name changed only here:
    /// "Mine" under each). Price changed on both sides (here 30, there 20), note only there.
    static let propertyOutcomes: [(policy: NSMergePolicy, price: Int64, note: String)] = [
        (NSMergeByPropertyStoreTrumpMergePolicy, 20, "their note"),
        (NSMergePolicy.mergeByPropertyObjectTrump, 30, "their note"),
        (NSOverwriteMergePolicy, 30, "first note"),
    ]

    @Test(arguments: propertyOutcomes)
    func resolvingPoliciesChooseValuesPropertyByProperty(outcome: (policy: NSMergePolicy, price: Int64, note: String)) throws {
        let scenario = try Scenario()
        defer { scenario.cleanUp() }
        try scenario.makeConflict()
        scenario.mine.mergePolicy = outcome.policy
        try scenario.mine.save()
        #expect(scenario.values(scenario.item) == ("Mine", outcome.price, outcome.note))
        #expect(!scenario.mine.hasChanges)
        let (name, price, note, version) = try scenario.storedRow()
        #expect(name == "Mine" && price.map(Int64.init) == outcome.price && note == outcome.note && version == 3)
        // The object now carries the store's version: the next change saves without conflict.
        scenario.item.setValue(31, forKey: "price")
        try scenario.mine.save()
        #expect(try scenario.storedRow().1 == 31)
    }

    @Test func rollbackDiscardsTheContextsChangesToConflictingObjects() throws {
        let scenario = try Scenario()
        defer { scenario.cleanUp() }
        try scenario.makeConflict()
        // A change to another object is not in conflict and is saved.
        let other = NSEntityDescription.insertNewObject(forEntityName: "Item", into: scenario.mine)
        other.setValue("Other", forKey: "name")
        scenario.mine.mergePolicy = NSRollbackMergePolicy
        try scenario.mine.save()
        #expect(scenario.values(scenario.item) == ("Original", 20, "their note"))
        #expect(!scenario.mine.hasChanges)
        #expect(!other.objectID.isTemporaryID)
        let (name, price, note, version) = try scenario.storedRow()
        #expect(name == "Original" && price == 20 && note == "their note" && version == 2)
    }

    @Test func theStoresDeletionWinsUnderTheResolvingPolicies() throws {
        let scenario = try Scenario()
        defer { scenario.cleanUp() }
        scenario.theirs.delete(scenario.theirItem)
        try scenario.theirs.save()
        scenario.item.setValue(99, forKey: "price")
        let error = try #require(throws: NSError.self) { try scenario.mine.save() }
        let conflict = try #require((error.userInfo[NSPersistentStoreSaveConflictsErrorKey] as? [NSMergeConflict])?.first)
        #expect(conflict.persistedSnapshot == nil)
        #expect(conflict.newVersionNumber == 0)
        scenario.mine.mergePolicy = NSMergeByPropertyObjectTrumpMergePolicy
        try scenario.mine.save()
        #expect(scenario.item.managedObjectContext == nil)
        #expect(try scenario.mine.count(for: NSFetchRequest<NSManagedObject>(entityName: "Item")) == 0)
    }

    /// A policy subclass that records what it is asked to resolve, then merges as object trump.
    final class RecordingPolicy: NSMergePolicy, @unchecked Sendable {
        var mergeCalls = 0
        var lockingConflicts: [NSMergeConflict] = []

        init() { super.init(merge: .mergeByPropertyObjectTrumpMergePolicyType) }

        override func resolve(mergeConflicts list: [Any]) throws {
            mergeCalls += 1
            try super.resolve(mergeConflicts: list)
        }

        override func resolve(optimisticLockingConflicts list: [NSMergeConflict]) throws {
            lockingConflicts += list
            try super.resolve(optimisticLockingConflicts: list)
            // The subclass's own rule on top: notes are joined.
            for conflict in list {
                let notes = [conflict.objectSnapshot?["note"], conflict.persistedSnapshot?["note"]].compactMap { $0 as? String }
                conflict.sourceObject.setValue(notes.joined(separator: " + "), forKey: "note")
            }
        }
    }

    @Test func aPolicySubclassIsAskedToResolve() throws {
        let scenario = try Scenario()
        defer { scenario.cleanUp() }
        try scenario.makeConflict()
        let policy = RecordingPolicy()
        scenario.mine.mergePolicy = policy
        try scenario.mine.save()
        #expect(policy.mergeCalls == 1)
        #expect(policy.lockingConflicts.map(\.sourceObject) == [scenario.item])
        #expect(scenario.values(scenario.item) == ("Mine", 30, "first note + their note"))
        let (name, price, note, _) = try scenario.storedRow()
        #expect(name == "Mine" && price == 30 && note == "first note + their note")
    }

    @Test func theInMemoryStoreResolvesConflictsToo() throws {
        let scenario = try Scenario(storeType: NSInMemoryStoreType)
        try scenario.makeConflict()
        let error = try #require(throws: NSError.self) { try scenario.mine.save() }
        #expect((error.userInfo[NSPersistentStoreSaveConflictsErrorKey] as? [NSMergeConflict])?.count == 1)
        scenario.mine.mergePolicy = NSMergeByPropertyStoreTrumpMergePolicy
        try scenario.mine.save()
        let fresh = TestSupport.context(scenario.coordinators[0])
        let stored = try fresh.existingObject(with: scenario.item.objectID)
        #expect(scenario.values(stored) == ("Mine", 20, "their note"))
    }

    /// A policy that, while it resolves, has another connection to the store try to commit
    /// (with a short lock timeout): the resolution and the save after it hold the store's writes.
    final class InterruptedPolicy: NSMergePolicy, @unchecked Sendable {
        var interrupt: (() -> Void)?
        init() { super.init(merge: .mergeByPropertyObjectTrumpMergePolicyType) }
        override func resolve(optimisticLockingConflicts list: [NSMergeConflict]) throws {
            interrupt?()
            interrupt = nil
            try super.resolve(optimisticLockingConflicts: list)
        }
    }

    /// A conflict is resolved and saved with the store's writes held: another process's commit
    /// can't fall between the rows the policy merged and the save (it waits, here until its
    /// timeout), so the retry doesn't meet a new conflict.
    @Test func aConflictIsResolvedAndSavedWithTheStoresWritesHeld() throws {
        let scenario = try Scenario()
        defer { scenario.cleanUp() }
        try scenario.makeConflict()
        let intruder = NSPersistentStoreCoordinator(managedObjectModel: scenario.coordinators[0].managedObjectModel)
        try intruder.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: scenario.url,
                                        options: [NSPersistentStoreTimeoutOption: 0.2 as NSNumber])
        // A read-only store beside the saving one: its writes aren't held (it can't be written).
        let other = TestSupport.temporaryDirectory().appendingPathComponent("Other.sqlite")
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: scenario.url.path + suffix) {
            try FileManager.default.copyItem(atPath: scenario.url.path + suffix, toPath: other.path + suffix)
        }
        try scenario.coordinators[0].addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: other,
                                                        options: [NSReadOnlyPersistentStoreOption: true])
        let intruderContext = TestSupport.context(intruder)
        let intruderItem = try intruderContext.existingObject(with: scenario.item.objectID)
        var intrusion: Result<Void, Error>?
        let policy = InterruptedPolicy()
        policy.interrupt = {
            intruderItem.setValue("intruder note", forKey: "note")
            intrusion = Result { try intruderContext.save() }
        }
        scenario.mine.mergePolicy = policy
        try scenario.mine.save()
        #expect(throws: (any Error).self, "the other writer could not commit during the resolution") { try intrusion?.get() }
        #expect(intrusion != nil, "the policy was asked to resolve")
        let (name, price, note, _) = try scenario.storedRow()
        #expect(name == "Mine" && price == 30 && note == "their note")
    }

    /// Two private-queue contexts on two coordinators change different properties of one object
    /// and save at the same time, over and over: every save goes through (conflicts resolved and
    /// retried), and the store ends with each side's last value.
    @Test func concurrentSavesUnderObjectTrumpAllSucceed() async throws {
        let policy = CountingMergePolicy()
        let scenario = try Scenario()
        defer { scenario.cleanUp() }
        let rounds = 40
        let id = scenario.item.objectID
        let sides: [(NSPersistentStoreCoordinator, String)] = [(scenario.coordinators[0], "price"), (scenario.coordinators[1], "note")]
        let failures = try await withThrowingTaskGroup(of: Int.self) { group in
            for (coordinator, key) in sides {
                let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
                context.persistentStoreCoordinator = coordinator
                context.mergePolicy = policy
                group.addTask {
                    await context.perform {
                        var failures = 0
                        guard let object = try? context.existingObject(with: id) else { return rounds }
                        for round in 1...rounds {
                            object.setValue(key == "price" ? round as Any : "note \(round)" as Any, forKey: key)
                            do { try context.save() } catch { failures += 1 }
                            Thread.sleep(forTimeInterval: 0.002)  // lets the other side's saves interleave
                        }
                        return failures
                    }
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(failures == 0)
        let (name, price, note, version) = try scenario.storedRow()
        #expect(name == "Original" && price == rounds && note == "note \(rounds)")
        #expect(version == 1 + 2 * rounds)
        // Whichever side saves second starts from a stale version: at least one conflict.
        #expect(policy.resolved >= 1)
        print("Merge policies: \(2 * rounds) concurrent saves, \(policy.resolved) conflicts resolved")
    }
}
