import Foundation
import OCDInspectorKit
import OpenCoreData
import OpenCoreDataTestKit
import Testing

@Suite("ocd watch")
struct WatchCommandTests {
    @Test("prints inserts, updates and deletes as another coordinator saves them")
    func changesFromAnotherCoordinator() async throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try Inspector.makeWorldCupStore(in: directory, teams: [("Brazil", "South America", 5)])
        let console = Console.capturing()
        let arguments = ["watch", store.path, "--model", Inspector.worldCupModel, "--entity", "Team",
                         "--interval", "0.05", "--stop-after", "3", "--timeout", "300"]
        // The command polls with sleeps between: on a thread of its own, not the concurrency pool's.
        let watcher = Task { await offThePool { OCDCommand.run(arguments: arguments, console: console) } }
        try await WatchWaiting.until { console.errors.contains("watching") }

        let writer = try WorldCupWriter(store)
        try writer.insert("Peru", wins: 2)
        try await WatchWaiting.until { console.output.split(separator: "\n").count == 1 }
        try writer.setWins(of: "Brazil", to: 6)
        try await WatchWaiting.until { console.output.split(separator: "\n").count == 2 }
        try writer.delete("Peru")
        #expect(await watcher.value == 0)
        writer.close()

        let lines = console.output.split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        #expect(lines[0].hasPrefix("insert Team x-coredata://"))
        #expect(lines[0].hasSuffix("/Team/p2 imageName=nil losses=0 qualifyingZone=nil teamName=\"Peru\" wins=2"))
        #expect(lines[1].hasPrefix("update Team x-coredata://"))
        #expect(lines[1].hasSuffix("/Team/p1 wins: 5 -> 6"))
        #expect(lines[2].hasPrefix("delete Team x-coredata://"))
        #expect(lines[2].hasSuffix("/Team/p2"))
        #expect(console.errors.split(separator: "\n").count == 2)
        #expect(console.errors.contains("the store records no persistent history"), "\(console.errors)")
    }

    @Test("with persistent history, an insert, an update and a delete saved in quick succession are all printed, in order")
    func everyChangeFromHistory() async throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try Inspector.makeWorldCupStore(in: directory, teams: [("Brazil", "South America", 5)])
        let writer = try WorldCupWriter(store, history: true)
        let console = Console.capturing()
        let arguments = ["watch", store.path, "--model", Inspector.worldCupModel, "--entity", "Team",
                         "--interval", "0.3", "--stop-after", "3", "--timeout", "300"]
        let watcher = Task { await offThePool { OCDCommand.run(arguments: arguments, console: console) } }
        try await WatchWaiting.until { console.errors.contains("watching") }
        // Three saves well inside one interval: comparing rows would see only the update.
        try writer.insert("Peru", wins: 2)
        try writer.setWins(of: "Brazil", to: 6)
        try writer.delete("Peru")
        #expect(await watcher.value == 0)
        writer.close()

        let lines = console.output.split(separator: "\n").map(String.init)
        #expect(lines.count == 3, "\(lines)")
        // The insert's values are those read after it: none, if Peru was already deleted then.
        #expect(lines.first?.hasPrefix("insert Team x-coredata://") == true && lines.first?.contains("/Team/p2") == true, "\(lines)")
        #expect(lines.dropFirst().first?.hasSuffix("/Team/p1 wins: 5 -> 6") == true, "\(lines)")
        #expect(lines.last?.hasPrefix("delete Team x-coredata://") == true && lines.last?.hasSuffix("/Team/p2") == true, "\(lines)")
        #expect(!console.errors.contains("no persistent history"))
    }

    @Test("a store that does not exist is an error, before any waiting")
    func missingStore() {
        let run = Inspector.run(["watch", "/nonexistent/store.sqlite", "--model", Inspector.worldCupModel, "--timeout", "30"])
        #expect(run.status == 1)
        #expect(run.errors == "ocd: error: no store at /nonexistent/store.sqlite (Core Data error 260)\n")
    }
}

/// Polls a condition, failing after a generous time limit.
enum WatchWaiting {
    /// `state` describes what was seen instead, for the failure's message.
    static func until(_ condition: () -> Bool, seconds: Double = patience, state: () -> String = { "" }) async throws {
        guard try await eventually(within: seconds, every: .milliseconds(20), condition) else {
            Issue.record("condition not met within \(seconds) s; \(state())")
            throw CancellationError()
        }
    }
}

/// Another writer on a World Cup store: its own coordinator and context.
final class WorldCupWriter {
    private let coordinator: NSPersistentStoreCoordinator
    private let store: NSPersistentStore
    private let context: NSManagedObjectContext

    /// With `history`, the store records persistent history.
    init(_ url: URL, history: Bool = false) throws {
        let model = try NSManagedObjectModel.load(contentsOf: URL(fileURLWithPath: Inspector.worldCupModel))
        coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        store = try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url,
                                                   options: history ? [NSPersistentHistoryTrackingKey: true as NSNumber] : nil)
        context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        context.persistentStoreCoordinator = coordinator
    }

    func insert(_ name: String, wins: Int32) throws {
        try context.performAndWait {
            let team = NSEntityDescription.insertNewObject(forEntityName: "Team", into: context)
            team.setValue(name, forKey: "teamName")
            team.setValue(wins, forKey: "wins")
            try context.save()
        }
    }

    func setWins(of name: String, to wins: Int32) throws {
        try context.performAndWait {
            try team(named: name).setValue(wins, forKey: "wins")
            try context.save()
        }
    }

    func delete(_ name: String) throws {
        try context.performAndWait {
            context.delete(try team(named: name))
            try context.save()
        }
    }

    private func team(named name: String) throws -> NSManagedObject {
        let request = NSFetchRequest<NSManagedObject>(entityName: "Team")
        request.predicate = NSPredicate(format: "teamName == %@", name)
        return try #require(try context.fetch(request).first)
    }

    func close() {
        try? coordinator.remove(store)
    }
}
