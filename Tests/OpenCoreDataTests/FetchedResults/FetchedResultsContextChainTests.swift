import Foundation
import OpenCoreData
@testable import OpenCoreDataCore
import Testing

/// `FetchedResultsPropertyTests`' random changes, reaching the controller the other ways apps make
/// them: unsaved (the controller follows `processPendingChanges()`, as at the end of a run loop
/// turn), with refreshes, rollbacks and undo; saved by a child context into the controller's (an
/// editing context's save); saved by another context and merged, by hand or automatically, also
/// while the controller's context has unsaved changes of its own or is itself a child; made by
/// batch requests and merged by their IDs; followed through the store's persistent history; and
/// saved on an in-memory store.
/// After every round, the table that applies the delegate's callbacks, the snapshot delegate's
/// latest snapshot and the controller itself must equal the answer worked out in memory from the
/// controller's context (`reference`).
@Suite struct FetchedResultsContextChainTests {
    /// Where the changes are made and when they are saved.
    enum Mode: String, CaseIterable, Sendable {
        /// In the controller's context, saved every fourth round.
        case unsaved
        /// In a child of the controller's context, saved into it every round; the controller's
        /// context saves every fourth round.
        case child
        /// In the controller's context, saved every round (here over an in-memory store:
        /// `FetchedResultsPropertyTests` saves on SQLite).
        case saved
        /// In another context of the same coordinator, saved every round and merged into the
        /// controller's with `mergeChanges(fromContextDidSave:)`.
        case sibling
        /// In another context of the same coordinator, saved every round; the controller's context
        /// merges each save by itself (`automaticallyMergesChangesFromParent`).
        case automatic
        /// Some changes in the controller's context, saved every fourth round, and some in another
        /// context, saved every round, each context merging the other's saves by itself: a
        /// background import while the user edits.
        case mixed
        /// The controller's context is a child of a root context; the changes are made in another
        /// child, saved into the root every round and merged by the controller's context by
        /// itself; the root saves to the store every fourth round.
        case nestedSibling
        /// Batch inserts, updates (of players, and renames of departments) and deletes run on
        /// another context, their IDs merged into the controller's context with
        /// `mergeChanges(fromRemoteContextSave:into:)`, as apps import large feeds.
        case batch
        /// The batch requests and their merges while the controller's context makes unsaved
        /// changes of its own, saved every fourth round, and sometimes undoes: an import while the
        /// user edits.
        case batchWhileEditing
        /// In another context, saved every round, with batch requests every other round; the
        /// controller's context learns of them only from the store's persistent history, merging
        /// each transaction since its last token, as apps follow other processes' changes.
        case history
    }

    struct Configuration: CustomStringConvertible, Sendable {
        let base: FetchedResultsPropertyTests.Configuration
        let mode: Mode

        var description: String { "\(mode): \(base)" }

        static let all = some(sections: [nil, "tier", "department.name"], batchSizes: [0, 20])
            + some(sections: [nil, "department.name"], batchSizes: [0], limit: 7)
            + some(sections: [nil, "department.name"], batchSizes: [0], limit: 7, offset: 3)

        /// Every mode with each section key path and batch size, with and without a predicate.
        static func some(sections keyPaths: [String?], batchSizes: [Int], limit: Int = 0, offset: Int = 0) -> [Configuration] {
            var result: [Configuration] = []
            for mode in Mode.allCases {
                for sections in keyPaths {
                    for batch in batchSizes {
                        for predicate in [nil, "score >= 2 AND department.name != 'D3'"] {
                            let bulk = (batch == 20) == (predicate == nil)
                            let selector = sections == "tier" && predicate == nil ? "localizedStandardCompare:" : "compare:"
                            result.append(Configuration(base: .init(sectionKeyPath: sections, batchSize: batch, limit: limit, predicate: predicate,
                                                                    bulk: bulk, nameSelector: selector, offset: offset), mode: mode))
                        }
                    }
                }
            }
            return result
        }
    }

    /// What the controller should show, worked out from every object in memory: the context's
    /// players judged by `evaluate(with:)`, ordered by `NSSortDescriptor.compare` with ties as
    /// the store breaks them (`sortAsStored`), and grouped by section name. (A fetch with pending
    /// changes would not do: like Core Data's, it answers unchanged objects from the store, so a
    /// department renamed and not saved doesn't move its players there; the controller re-judges
    /// them.) A fetch offset skips the first objects in that order; a fetch limit keeps the first
    /// of the rest.
    static func reference(_ base: FetchedResultsPropertyTests.Configuration, in context: NSManagedObjectContext) throws -> [(name: String, ids: [NSManagedObjectID])] {
        let predicate = base.predicate.map { NSPredicate(format: $0) }
        var sorted = try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Player")).filter { predicate?.evaluate(with: $0) ?? true }
        sorted.sortAsStored(by: base.sortDescriptors)
        sorted = Array(sorted.dropFirst(base.offset))
        if base.limit > 0 { sorted = Array(sorted.prefix(base.limit)) }
        var sections: [(name: String, ids: [NSManagedObjectID])] = []
        for object in sorted {
            let name = base.sectionKeyPath.flatMap { object.value(forKeyPath: $0) }.map { "\($0)" } ?? ""
            if sections.last?.name != name { sections.append((name, [])) }
            sections[sections.count - 1].ids.append(object.objectID)
        }
        return sections
    }

    @Test(arguments: Configuration.all)
    func changesThroughEveryContextKeepEveryFormExact(_ configuration: Configuration) throws {
        let type = configuration.mode == .saved ? NSInMemoryStoreType : NSSQLiteStoreType
        let options = configuration.mode == .history ? [NSPersistentHistoryTrackingKey: true as NSNumber] : nil
        try Self.run(configuration, on: TestSupport.coordinator(FetchedResultsPropertyTests.model(), type: type, options: options).0)
    }

    /// Makes the random changes of `configuration` over `coordinator`'s store (of the players'
    /// model, empty) and checks the controllers after every round.
    static func run(_ configuration: Configuration, on coordinator: NSPersistentStoreCoordinator) throws {
        let base = configuration.base
        let mode = configuration.mode
        let root = TestSupport.context(coordinator)
        let context = mode == .nestedSibling ? Self.child(of: root) : root
        var random = DifferentialTests.Generator(state: UInt64(configuration.description.utf8.reduce(11) { $0 &* 31 &+ Int($1) }.magnitude))
        let departmentIDs = try FetchedResultsPropertyTests.insertTeams(into: context, random: &random).map(\.objectID)
        if mode == .nestedSibling { try root.save() }

        let observers = try FetchedResultsPropertyTests.Observers(base, context: context)
        if mode == .unsaved || mode == .batchWhileEditing { context.undoManager = UndoManager() }

        // The child and the sibling live across rounds, as editing contexts do.
        let child = Self.child(of: mode == .nestedSibling ? root : context)
        let sibling = TestSupport.context(coordinator)
        switch mode {
        case .automatic, .nestedSibling:
            context.automaticallyMergesChangesFromParent = true
        case .mixed:
            // Both sides change the same objects: the last save's values win, property by property.
            for side in [context, sibling] {
                side.automaticallyMergesChangesFromParent = true
                side.mergePolicy = NSMergePolicy.mergeByPropertyObjectTrump
            }
        case .batchWhileEditing:
            context.mergePolicy = NSMergePolicy.mergeByPropertyObjectTrump
        case .unsaved, .child, .saved, .sibling, .batch, .history:
            break
        }
        let siblingSaves = SavedNotes()
        let observer = NotificationCenter.default.addObserver(forName: .NSManagedObjectContextDidSave, object: sibling, queue: nil) { siblingSaves.add($0) }
        defer { NotificationCenter.default.removeObserver(observer) }

        var historyToken = coordinator.currentPersistentHistoryToken(fromStores: nil)
        let rounds = Int(ProcessInfo.processInfo.environment["OPENCOREDATA_FRC_ROUNDS"] ?? "") ?? 20
        for round in 0..<rounds {
            let editors: [NSManagedObjectContext] = switch mode {
            case .child, .nestedSibling: [child]
            case .sibling, .automatic, .history: [sibling]
            case .mixed: [context, sibling]
            case .unsaved, .saved, .batchWhileEditing: [context]
            case .batch: []
            }
            let playersByEditor = try editors.map { try $0.fetch(NSFetchRequest<NSManagedObject>(entityName: "Player")) }
            let departmentsByEditor = editors.map { editor in departmentIDs.map { editor.object(with: $0) } }
            var operations: [String] = []
            for _ in 0..<(editors.isEmpty ? 0 : random.int(1..<6)) {
                let side = editors.count == 1 ? 0 : random.int(0..<editors.count)
                let (editing, players, departments) = (editors[side], playersByEditor[side], departmentsByEditor[side])
                if editors.count > 1 { operations.append(editing === context ? "here:" : "there:") }
                let kind = random.int(0..<8)
                switch kind {
                case 7 where !players.isEmpty:
                    // Discarding or keeping an object's unsaved changes (a "Revert" of one row).
                    let player = random.pick(players)
                    let merge = random.chance(50)
                    if !player.isInserted {
                        editing.refresh(player, mergeChanges: merge)
                        operations.append("refresh \(merge ? "merging" : "discarding") \(player.objectID.uriRepresentation().lastPathComponent)")
                    }
                default:
                    if let change = FetchedResultsPropertyTests.randomChange(kind, in: editing, players: players, departments: departments, random: &random) {
                        operations.append(change)
                    }
                }
            }
            func saveEveryFourthRound(_ saving: NSManagedObjectContext, _ label: String) throws {
                guard round % 4 == 3 else { return }
                try saving.save()
                operations.append(label)
            }
            // As Apple's users do for diffable snapshots: permanent IDs as soon as objects are new.
            for editing in editors { try editing.obtainPermanentIDs(for: Array(editing.insertedObjects)) }
            switch mode {
            case .unsaved:
                if random.chance(10) {
                    context.rollback()
                    operations.append("rollback")
                } else if random.chance(10) {
                    // Undo puts back the event just ended, as Edit > Undo does.
                    context.processPendingChanges()
                    context.undoManager?.undo()
                    context.processPendingChanges()
                    operations.append("undo")
                } else {
                    context.processPendingChanges()
                }
                if round % 4 == 3 { try context.save() }
            case .child:
                try child.save()
                context.processPendingChanges()
                try saveEveryFourthRound(context, "parent saved")
            case .saved:
                try context.save()
            case .sibling:
                try sibling.save()
                if let note = siblingSaves.last { context.mergeChanges(fromContextDidSave: note) }
            case .automatic:
                try sibling.save()
            case .mixed:
                try sibling.save()
                context.processPendingChanges()
                try saveEveryFourthRound(context, "saved here")
            case .nestedSibling:
                try child.save()
                try saveEveryFourthRound(root, "root saved")
            case .batch, .batchWhileEditing:
                if mode == .batchWhileEditing, random.chance(15) {
                    // Undo of the last edits, some of them saved, before the merge.
                    context.processPendingChanges()
                    context.undo()
                    operations.append("undo")
                }
                var changed: [AnyHashable: [NSManagedObjectID]] = [:]
                for _ in 0..<random.int(1..<4) { operations.append(try Self.randomBatchRequest(on: sibling, changed: &changed, random: &random)) }
                NSManagedObjectContext.mergeChanges(fromRemoteContextSave: changed, into: [context])
                context.processPendingChanges()
                try saveEveryFourthRound(context, "saved here")
            case .history:
                try sibling.save()
                if round % 2 == 1 {
                    // The context that ran it merges its results, or it would save stale objects.
                    var changed: [AnyHashable: [NSManagedObjectID]] = [:]
                    operations.append(try Self.randomBatchRequest(on: sibling, changed: &changed, random: &random))
                    NSManagedObjectContext.mergeChanges(fromRemoteContextSave: changed, into: [sibling])
                }
                historyToken = try Self.mergeHistory(after: historyToken, into: context)
            }
            guard observers.expectShowing(try reference(base, in: context), round: round, operations: operations) else { break }
        }
    }

    /// Runs one random batch request through `context` (straight to the store, as batch requests
    /// go) and adds the IDs it changed to `changed`, under the keys
    /// `mergeChanges(fromRemoteContextSave:into:)` reads; describes it.
    static func randomBatchRequest(on context: NSManagedObjectContext, changed: inout [AnyHashable: [NSManagedObjectID]],
                                   random: inout DifferentialTests.Generator) throws -> String {
        let description: String
        let key: String
        let result: Any?
        switch random.int(0..<5) {
        case 0:
            // Batch inserts can't set relationships: these players have no department.
            let players: [[String: Any]] = (0..<random.int(1..<4)).map { _ in
                ["name": random.pick(FetchedResultsPropertyTests.names), "score": Int64(random.int(0..<5)), "tier": Int16(random.int(0..<4))]
            }
            let request = NSBatchInsertRequest(entityName: "Player", objects: players)
            request.resultType = .objectIDs
            (description, key, result) = ("batch insert \(players.count)", NSInsertedObjectsKey, (try context.execute(request) as? NSBatchInsertResult)?.result)
        case 1:
            let fetch = NSFetchRequest<NSFetchRequestResult>(entityName: "Player")
            fetch.predicate = NSPredicate(format: "score == %d AND tier == %d", random.int(0..<5), random.int(0..<4))
            let request = NSBatchDeleteRequest(fetchRequest: fetch)
            request.resultType = .resultTypeObjectIDs
            (description, key, result) = ("batch delete \(fetch.predicate!)", NSDeletedObjectsKey, (try context.execute(request) as? NSBatchDeleteResult)?.result)
        case 2:
            let request = NSBatchUpdateRequest(entityName: "Department")
            request.predicate = NSPredicate(format: "name == %@", "D\(random.int(1..<7))")
            request.propertiesToUpdate = ["name": "D\(random.int(1..<7))"]
            request.resultType = .updatedObjectIDsResultType
            (description, key, result) = ("batch rename \(request.predicate!) to \(request.propertiesToUpdate!)", NSUpdatedObjectsKey,
                                          (try context.execute(request) as? NSBatchUpdateResult)?.result)
        default:
            let request = NSBatchUpdateRequest(entityName: "Player")
            request.predicate = random.chance(50) ? NSPredicate(format: "score == %d", random.int(0..<5))
                : NSPredicate(format: "name == %@", random.pick(FetchedResultsPropertyTests.names))
            request.propertiesToUpdate = switch random.int(0..<3) {
            case 0: ["score": Int64(random.int(0..<5))]
            case 1: ["tier": Int16(random.int(0..<4))]
            default: ["name": random.pick(FetchedResultsPropertyTests.names)]
            }
            request.resultType = .updatedObjectIDsResultType
            (description, key, result) = ("batch update \(request.predicate!) to \(request.propertiesToUpdate!)", NSUpdatedObjectsKey,
                                          (try context.execute(request) as? NSBatchUpdateResult)?.result)
        }
        let ids = try #require(result as? [NSManagedObjectID], "\(description) answers its object IDs")
        changed[key, default: []] += ids
        return "\(description): \(ids.map { $0.uriRepresentation().lastPathComponent })"
    }

    /// Merges each transaction of the store's history after `token` into `context`, as apps do with
    /// a remote change notification; the token to continue from.
    static func mergeHistory(after token: NSPersistentHistoryToken?, into context: NSManagedObjectContext) throws -> NSPersistentHistoryToken? {
        let result = try context.execute(NSPersistentHistoryChangeRequest.fetchHistory(after: token)) as? NSPersistentHistoryResult
        let transactions = try #require(result?.result as? [NSPersistentHistoryTransaction])
        for transaction in transactions { context.mergeChanges(fromContextDidSave: transaction.objectIDNotification()) }
        return transactions.last?.token ?? token
    }

    /// A new child context of `parent`, as an editing context is made.
    static func child(of parent: NSManagedObjectContext) -> NSManagedObjectContext {
        let child = NSManagedObjectContext(concurrencyType: .confinementConcurrencyType)
        child.parent = parent
        return child
    }
}
