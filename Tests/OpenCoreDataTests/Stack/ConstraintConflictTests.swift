import Foundation
import GRDB
import OpenCoreData
import Testing

/// Uniqueness constraints (`Tag.code` is unique) checked by saves to a SQLite store, under the
/// error policy and resolved by the trump policies.
@Suite struct ConstraintConflictTests {
    private struct Scenario {
        let coordinator: NSPersistentStoreCoordinator
        let url: URL
        let stored: NSManagedObjectID

        init() throws {
            let (coordinator, url) = try TestSupport.coordinator(MergePolicyTests.makeModel())
            self.coordinator = coordinator
            self.url = try #require(url)
            let context = TestSupport.context(coordinator)
            let tag = Self.tag("swift", "stored label", in: context)
            try context.save()
            stored = tag.objectID
        }

        static func tag(_ code: String, _ label: String, in context: NSManagedObjectContext) -> NSManagedObject {
            let tag = NSEntityDescription.insertNewObject(forEntityName: "Tag", into: context)
            tag.setValue(code, forKey: "code")
            tag.setValue(label, forKey: "label")
            return tag
        }

        /// The labels of the stored tags with a code, read by a fresh context.
        func storedLabels(_ code: String) throws -> [String] {
            let request = NSFetchRequest<NSManagedObject>(entityName: "Tag")
            request.predicate = NSPredicate(format: "code == %@", code)
            return try TestSupport.context(coordinator).fetch(request).compactMap { $0.value(forKey: "label") as? String }
        }

        func cleanUp() { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
    }

    @Test func theErrorPolicyReportsAConstraintConflict() throws {
        let scenario = try Scenario()
        defer { scenario.cleanUp() }
        let context = TestSupport.context(scenario.coordinator)
        let duplicate = Scenario.tag("swift", "new label", in: context)
        let error = try #require(throws: NSError.self) { try context.save() }
        #expect(error.code == NSManagedObjectConstraintMergeError)
        let conflict = try #require((error.userInfo[NSPersistentStoreSaveConflictsErrorKey] as? [NSConstraintConflict])?.first)
        #expect(conflict.constraint == ["code"])
        #expect(conflict.constraintValues["code"] as? String == "swift")
        #expect(conflict.conflictingObjects == [duplicate])
        #expect(conflict.databaseObject?.objectID == scenario.stored)
        #expect(conflict.databaseSnapshot?["label"] as? String == "stored label")
        #expect(conflict.conflictingSnapshots.first?["label"] as? String == "new label")
        #expect(try scenario.storedLabels("swift") == ["stored label"])
        #expect(duplicate.isInserted && duplicate.objectID.isTemporaryID)
    }

    /// Object trump: the inserted object's values are written over the stored row; store trump:
    /// the inserted object takes the stored row's values. Either way it takes the row's identity.
    static let outcomes: [(policy: NSMergePolicy, label: String)] = [
        (NSMergeByPropertyObjectTrumpMergePolicy, "new label"),
        (NSMergeByPropertyStoreTrumpMergePolicy, "stored label"),
    ]

    @Test(arguments: outcomes)
    func trumpPoliciesMergeTheInsertedObjectWithTheStoredRow(outcome: (policy: NSMergePolicy, label: String)) throws {
        let scenario = try Scenario()
        defer { scenario.cleanUp() }
        let context = TestSupport.context(scenario.coordinator)
        context.mergePolicy = outcome.policy
        let duplicate = Scenario.tag("swift", "new label", in: context)
        try context.save()
        #expect(duplicate.objectID == scenario.stored)
        #expect(duplicate.value(forKey: "label") as? String == outcome.label)
        #expect(try scenario.storedLabels("swift") == [outcome.label])
        #expect(!context.hasChanges)
    }

    @Test func duplicatesAmongInsertedObjectsKeepOne() throws {
        let scenario = try Scenario()
        defer { scenario.cleanUp() }
        let context = TestSupport.context(scenario.coordinator)
        let first = Scenario.tag("linux", "first", in: context)
        _ = Scenario.tag("linux", "second", in: context)
        let error = try #require(throws: NSError.self) { try context.save() }
        let conflict = try #require((error.userInfo[NSPersistentStoreSaveConflictsErrorKey] as? [NSConstraintConflict])?.first)
        #expect(conflict.databaseObject == nil)
        #expect(conflict.conflictingObjects.count == 2)
        context.mergePolicy = NSMergeByPropertyObjectTrumpMergePolicy
        try context.save()
        #expect(try scenario.storedLabels("linux") == ["first"])
        #expect(!first.objectID.isTemporaryID)
    }

    @Test func aNewStoreIndexesTheConstrainedColumns() throws {
        let scenario = try Scenario()
        defer { scenario.cleanUp() }
        let queue = try DatabaseQueue(path: scenario.url.path)
        defer { try? queue.close() }
        // The save's lookup (`ZCODE IS ?`) searches this index instead of scanning the table.
        #expect(try queue.read { db in try db.indexes(on: "ZTAG").map(\.columns) } == [["ZCODE"]])
    }
}
