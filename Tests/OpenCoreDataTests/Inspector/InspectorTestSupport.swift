import Foundation
import OCDInspectorKit
import OpenCoreData

/// Runs `ocd` commands in-process and builds the stores they inspect.
enum Inspector {
    /// What one run of `ocd` produced.
    struct Run {
        let status: Int32
        let output: String
        let errors: String
    }

    /// Runs `ocd` with `arguments` on a capturing console.
    static func run(_ arguments: [String], terminal: Bool = false) -> Run {
        let console = Console.capturing(errorIsTerminal: terminal)
        let status = OCDCommand.run(arguments: arguments, console: console)
        return Run(status: status, output: console.output, errors: console.errors)
    }

    /// The path of a fixture file or folder.
    static func fixture(_ path: String) -> String {
        TestSupport.fixtures.appendingPathComponent(path).path
    }

    /// The World Cup model bundle.
    static var worldCupModel: String { TestSupport.modelURL("worldcup", "WorldCup").path }

    /// The Failed Banks store written by Apple's Core Data, copied into `directory`.
    static func copyFailedBanksStore(into directory: URL) throws -> URL {
        let copy = directory.appendingPathComponent("FailedBanksCD.sqlite")
        try FileManager.default.copyItem(at: TestSupport.fixtures.appendingPathComponent("failedbanks/FailedBanksCD.sqlite"), to: copy)
        return copy
    }

    /// A World Cup store written by OpenCoreData (WAL mode) holding `teams` (name, zone, wins), in `directory`.
    static func makeWorldCupStore(in directory: URL, teams: [(String, String, Int32)]) throws -> URL {
        let url = directory.appendingPathComponent("WorldCup.sqlite")
        let model = try NSManagedObjectModel.load(contentsOf: URL(fileURLWithPath: worldCupModel))
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        let store = try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url)
        let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        context.persistentStoreCoordinator = coordinator
        try context.performAndWait {
            for (name, zone, wins) in teams {
                let team = NSEntityDescription.insertNewObject(forEntityName: "Team", into: context)
                team.setValue(name, forKey: "teamName")
                team.setValue(zone, forKey: "qualifyingZone")
                team.setValue(wins, forKey: "wins")
            }
            try context.save()
        }
        try coordinator.remove(store)
        return url
    }

    /// The names of the files in `directory`, sorted.
    static func listing(_ directory: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
    }

    /// Parses JSON output.
    static func json(_ text: String) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(text.utf8))
    }
}
