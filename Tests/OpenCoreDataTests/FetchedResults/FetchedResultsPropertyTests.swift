import Foundation
import OpenCoreData
@testable import OpenCoreDataCore
import Testing

/// Random sequences of changes against fetched results controllers in every configuration: with
/// and without sections (also through a relationship), batch size, fetch limit and offset and a predicate, with
/// changes applied row by row and in bulk, names sorted with `compare:` or `localizedStandardCompare:`
/// (names long and short, accented, and nil).
/// After every save, a table that applies the delegate's callbacks with UITableView's rules, and a
/// snapshot delegate's latest snapshot, must both equal a fresh fetch.
@Suite struct FetchedResultsPropertyTests {
    struct Configuration: CustomStringConvertible, Sendable {
        let sectionKeyPath: String?
        let batchSize: Int
        let limit: Int
        let predicate: String?
        let bulk: Bool
        var nameSelector = "compare:"
        /// The request's `fetchOffset`.
        var offset = 0

        var description: String { "sections: \(sectionKeyPath ?? "none"), batch \(batchSize), limit \(limit)\(offset > 0 ? ", offset \(offset)" : ""), predicate: \(predicate ?? "none"), \(bulk ? "bulk" : "row by row"), names by \(nameSelector)" }

        var sortDescriptors: [NSSortDescriptor] {
            var sorts = [NSSortDescriptor(key: "score", ascending: false), NSSortDescriptor(key: "name", ascending: true, selector: Selector(nameSelector))]
            if let sectionKeyPath { sorts.insert(NSSortDescriptor(key: sectionKeyPath, ascending: true), at: 0) }
            return sorts
        }

        static let all: [Configuration] = {
            var result: [Configuration] = []
            for sections in [nil, "tier", "department.name"] {
                for batch in [0, 20] {
                    for limit in [0, 7] {
                        for predicate in [nil, "score >= 2 AND department.name != 'D3'"] {
                            for bulk in [false, true] where limit == 0 || !bulk {
                                result.append(Configuration(sectionKeyPath: sections, batchSize: batch, limit: limit, predicate: predicate, bulk: bulk))
                                if limit == 0 && predicate == nil {
                                    result.append(Configuration(sectionKeyPath: sections, batchSize: batch, limit: limit, predicate: predicate, bulk: bulk,
                                                                nameSelector: "localizedStandardCompare:"))
                                }
                                if limit > 0 && batch == 0 {
                                    result.append(Configuration(sectionKeyPath: sections, batchSize: batch, limit: limit, predicate: predicate, bulk: bulk, offset: 3))
                                }
                            }
                        }
                    }
                }
            }
            return result
        }()
    }

    /// Department (name) ←→> Player (name, score, tier, department).
    static func model() -> NSManagedObjectModel {
        let department = NSEntityDescription(name: "Department")
        let player = NSEntityDescription(name: "Player")
        let players = NSRelationshipDescription(name: "players", destination: player, toMany: true)
        let playerDepartment = NSRelationshipDescription(name: "department", destination: department)
        players.inverseRelationship = playerDepartment
        playerDepartment.inverseRelationship = players
        department.properties = [NSAttributeDescription(name: "name", type: .stringAttributeType), players]
        player.properties = [
            NSAttributeDescription(name: "name", type: .stringAttributeType),
            NSAttributeDescription(name: "score", type: .integer64AttributeType),
            NSAttributeDescription(name: "tier", type: .integer16AttributeType),
            playerDepartment,
        ]
        let model = NSManagedObjectModel()
        model.entities = [department, player]
        return model
    }

    static let names = ["Ann", "Bob", "Cy", "Dee", "Eve", "Flo", "Gus", "bob", "Émile 9", "Émile 10", "Zoë Ångström-Bergqvist", "Ann Marie Fitzgerald-Smythe"]

    /// The controller's request for a configuration.
    static func request(_ configuration: Configuration) -> NSFetchRequest<NSManagedObject> {
        let request = NSFetchRequest<NSManagedObject>(entityName: "Player")
        request.sortDescriptors = configuration.sortDescriptors
        request.fetchBatchSize = configuration.batchSize
        request.fetchLimit = configuration.limit
        request.fetchOffset = configuration.offset
        request.predicate = configuration.predicate.map { NSPredicate(format: $0) }
        return request
    }

    /// A fresh fetch, grouped into sections as the controller should show it.
    static func expected(_ configuration: Configuration, in context: NSManagedObjectContext) throws -> [(name: String, ids: [NSManagedObjectID])] {
        let request = request(configuration)
        request.fetchBatchSize = 0
        var sections: [(name: String, ids: [NSManagedObjectID])] = []
        for object in try context.fetch(request) {
            let value = configuration.sectionKeyPath.flatMap { object.value(forKeyPath: $0) }
            let name = value.map { "\($0)" } ?? ""
            if sections.last?.name != name { sections.append((name, [])) }
            sections[sections.count - 1].ids.append(object.objectID)
        }
        return sections
    }

    /// Saves four departments, D1 to D4, and 30 players with random values among them; returns
    /// the departments.
    static func insertTeams(into context: NSManagedObjectContext, random: inout DifferentialTests.Generator) throws -> [NSManagedObject] {
        let departments = (1...4).map { index in
            let department = NSEntityDescription.insertNewObject(forEntityName: "Department", into: context)
            department.setValue("D\(index)", forKey: "name")
            return department
        }
        for _ in 0..<30 { insertPlayer(into: context, departments: departments, random: &random) }
        try context.save()
        return departments
    }

    /// Inserts a player with random values into one of `departments`.
    static func insertPlayer(into context: NSManagedObjectContext, departments: [NSManagedObject], random: inout DifferentialTests.Generator) {
        let player = NSEntityDescription.insertNewObject(forEntityName: "Player", into: context)
        player.setValue(random.pick(names), forKey: "name")
        player.setValue(Int64(random.int(0..<5)), forKey: "score")
        player.setValue(Int16(random.int(0..<4)), forKey: "tier")
        player.setValue(random.pick(departments), forKey: "department")
    }

    /// Makes the change `kind` (0..<7) in `context`: an insert, a delete, a new score or tier, a
    /// department renamed, a player moved or renamed; its description, or nil when none was made.
    static func randomChange(_ kind: Int, in context: NSManagedObjectContext, players: [NSManagedObject], departments: [NSManagedObject],
                             random: inout DifferentialTests.Generator) -> String? {
        func describe(_ object: NSManagedObject) -> String { "\(object.value(forKey: "name") ?? "?")#\(object.objectID.uriRepresentation().lastPathComponent)" }
        if kind == 0 {
            insertPlayer(into: context, departments: departments, random: &random)
            return "insert"
        }
        if kind == 4 {
            let department = random.pick(departments)
            let old = department.value(forKey: "name") as? String ?? ""
            department.setValue("D\(random.int(1..<7))", forKey: "name")
            return "rename \(old) → \(department.value(forKey: "name") ?? "")"
        }
        guard !players.isEmpty, (1..<7).contains(kind) else { return nil }
        let player = random.pick(players)
        guard !player.isDeleted else { return nil }
        switch kind {
        case 1: context.delete(player); return "delete \(describe(player))"
        case 2: player.setValue(Int64(random.int(0..<5)), forKey: "score"); return "score \(describe(player))"
        case 3: player.setValue(Int16(random.int(0..<4)), forKey: "tier"); return "tier \(describe(player))"
        case 5: player.setValue(random.pick(departments), forKey: "department"); return "move \(describe(player))"
        default:
            player.setValue(random.int(0..<5) == 0 ? nil : random.pick(names), forKey: "name")
            return "rename \(describe(player))"
        }
    }

    /// A controller whose delegate is a `TestTableView`, and a second one whose delegate takes
    /// diffable snapshots, over a configuration's request.
    struct Observers {
        let controller: NSFetchedResultsController<NSManagedObject>
        let table = TestTableView()
        let snapshots: NSFetchedResultsController<NSManagedObject>
        let snapshotDelegate = SnapshotDelegate()

        init(_ configuration: Configuration, context: NSManagedObjectContext) throws {
            controller = NSFetchedResultsController(fetchRequest: request(configuration), managedObjectContext: context,
                                                    sectionNameKeyPath: configuration.sectionKeyPath, cacheName: nil)
            controller.state.bulkThresholdOverride = configuration.bulk ? 0 : Int.max
            controller.delegate = table
            try controller.performFetch()
            table.reload(from: controller)
            snapshots = NSFetchedResultsController(fetchRequest: request(configuration), managedObjectContext: context,
                                                   sectionNameKeyPath: configuration.sectionKeyPath, cacheName: nil)
            snapshots.state.bulkThresholdOverride = configuration.bulk ? 0 : Int.max
            snapshots.delegate = snapshotDelegate
            try snapshots.performFetch()
        }

        /// Expects the table, the controller and the latest snapshot to show `fresh`; false when
        /// the table or the controller doesn't (later rounds would only repeat the failure).
        func expectShowing(_ fresh: [(name: String, ids: [NSManagedObjectID])], round: Int, operations: [String]) -> Bool {
            #expect(table.failures.isEmpty, "round \(round): \(table.failures.prefix(3)) \(operations) \(table.log.suffix(12))")
            #expect(table.sections.map(\.name) == fresh.map(\.name), "round \(round) \(operations)")
            #expect(table.sections.map { $0.rows.map(\.objectID) } == fresh.map(\.ids), "round \(round) \(operations)")
            #expect(controller.sections?.map(\.name) == fresh.map(\.name), "round \(round)")
            #expect(controller.fetchedObjects?.map(\.objectID) == fresh.flatMap(\.ids), "round \(round) \(operations)")
            #expect(controller.sections?.map(\.numberOfObjects) == fresh.map(\.ids.count), "round \(round)")
            if let snapshot = snapshotDelegate.snapshots.last {
                #expect(snapshot.sectionIdentifiers == fresh.map(\.name), "round \(round)")
                #expect(snapshot.itemIdentifiers == fresh.flatMap(\.ids), "round \(round) \(operations) snapshots: \(snapshotDelegate.snapshots.count)")
            }
            return table.failures.isEmpty && controller.fetchedObjects?.map(\.objectID) == fresh.flatMap(\.ids)
        }
    }

    @Test(arguments: Configuration.all)
    func randomChangesKeepEveryFormExact(_ configuration: Configuration) throws {
        let (coordinator, _) = try TestSupport.coordinator(Self.model())
        let context = TestSupport.context(coordinator)
        var random = DifferentialTests.Generator(state: UInt64(configuration.description.utf8.reduce(7) { $0 &* 31 &+ Int($1) }.magnitude))
        let departments = try Self.insertTeams(into: context, random: &random)

        let observers = try Observers(configuration, context: context)

        let rounds = Int(ProcessInfo.processInfo.environment["OPENCOREDATA_FRC_ROUNDS"] ?? "") ?? 30
        for round in 0..<rounds {
            let players = try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Player"))
            var operations: [String] = []
            for _ in 0..<random.int(1..<6) {
                let kind = random.int(0..<8)
                switch kind {
                case 7:
                    operations.append("background")
                    // A save of another context, merged in.
                    try context.obtainPermanentIDs(for: Array(context.insertedObjects))
                    try context.save()
                    let background = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
                    background.persistentStoreCoordinator = coordinator
                    let saved = SavedNotes()
                    let observer = NotificationCenter.default.addObserver(forName: .NSManagedObjectContextDidSave, object: background, queue: nil) { saved.add($0) }
                    try background.performAndWait {
                        let others = try background.fetch(NSFetchRequest<NSManagedObject>(entityName: "Department"))
                        Self.insertPlayer(into: background, departments: others, random: &random)
                        if let some = try background.fetch(NSFetchRequest<NSManagedObject>(entityName: "Player")).randomElement() {
                            some.setValue(Int64(random.int(0..<5)), forKey: "score")
                        }
                        try background.save()
                    }
                    NotificationCenter.default.removeObserver(observer)
                    if let note = saved.first { context.mergeChanges(fromContextDidSave: note) }
                default:
                    if let change = Self.randomChange(kind, in: context, players: players, departments: departments, random: &random) { operations.append(change) }
                }
            }
            // As Apple's users do for diffable snapshots: permanent IDs before the save.
            try context.obtainPermanentIDs(for: Array(context.insertedObjects))
            try context.save()
            guard observers.expectShowing(try Self.expected(configuration, in: context), round: round, operations: operations) else { break }
        }
    }
}
