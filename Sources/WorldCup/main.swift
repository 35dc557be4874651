// worldcup: the World Cup teams of the "NSFetchedResultsController" tutorial, in a terminal.
//
// Usage: swift run worldcup [--store PATH]
// Commands (one per line): list | win <team> | add <team> <zone> | delete <team> | help | quit
import Foundation
import OpenCoreData

/// A team, as the tutorial's model declares it.
final class Team: NSManagedObject {
    @Managed var teamName: String?
    @Managed var qualifyingZone: String?
    @Managed var imageName: String?
    @Managed var wins: Int32
    @Managed var losses: Int32
}

/// The app: a container over the store, the import of the seed data, and the commands.
struct WorldCupApp {
    let container: NSPersistentContainer
    var context: NSManagedObjectContext { container.viewContext }
    static let zones = ["Africa", "Asia", "Europe", "North America", "South America", "Oceania"]

    init(storeURL: URL?) throws {
        container = NSPersistentContainer(name: "WorldCup")
        if let storeURL { container.persistentStoreDescriptions[0].url = storeURL }
        var loadError: Error?
        container.loadPersistentStores { _, error in loadError = error }
        if let loadError { throw loadError }
    }

    /// Imports the 32 teams of seed.json when the store has none.
    func importSeedIfNeeded() throws {
        guard try context.count(for: NSFetchRequest<Team>(entityName: "Team")) == 0 else { return }
        guard let url = Bundle.module.url(forResource: "seed", withExtension: "json") else { return }
        let entries = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [[String: Any]] ?? []
        for entry in entries {
            let team = Team(context: context)
            team.teamName = entry["teamName"] as? String
            team.qualifyingZone = entry["qualifyingZone"] as? String
            team.imageName = entry["imageName"] as? String
            team.wins = Int32(entry["wins"] as? Int ?? 0)
        }
        try context.save()
        print("Imported \(entries.count) teams.")
    }

    /// The teams in sections by zone: sorted by zone, wins descending, then name.
    func sections() throws -> [(zone: String, teams: [Team])] {
        let request = NSFetchRequest<Team>(entityName: "Team")
        request.sortDescriptors = [
            NSSortDescriptor(key: "qualifyingZone", ascending: true),
            NSSortDescriptor(key: "wins", ascending: false),
            NSSortDescriptor(key: "teamName", ascending: true),
        ]
        var result: [(zone: String, teams: [Team])] = []
        for team in try context.fetch(request) {
            let zone = team.qualifyingZone ?? "?"
            if result.last?.zone == zone { result[result.count - 1].teams.append(team) } else { result.append((zone, [team])) }
        }
        return result
    }

    func list() throws {
        for section in try sections() {
            print("\n\(section.zone)")
            for team in section.teams {
                let name = team.teamName ?? "?"
                print("  \(name.padding(toLength: 24, withPad: " ", startingAt: 0)) \(team.imageName ?? "")".padding(toLength: 50, withPad: " ", startingAt: 0) + " wins: \(team.wins)")
            }
        }
    }

    func team(named name: String) throws -> Team? {
        let request = NSFetchRequest<Team>(entityName: "Team")
        request.predicate = NSPredicate(format: "teamName ==[c] %@", name)
        return try context.fetch(request).first
    }

    /// Runs one command line; returns false to quit.
    func run(_ line: String) throws -> Bool {
        let words = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        guard let command = words.first?.lowercased() else { return true }
        let rest = words.dropFirst().joined(separator: " ")
        switch command {
        case "quit", "exit":
            return false
        case "list":
            try list()
        case "win":
            guard let team = try team(named: rest) else { print("No team named \(rest)."); return true }
            team.wins += 1
            try context.save()
            print("\(team.teamName ?? rest) now has \(team.wins) wins.")
        case "add":
            let (name, zone) = Self.splitTeamAndZone(Array(words.dropFirst()))
            guard !name.isEmpty, !zone.isEmpty else { print("Usage: add <team> <zone>"); return true }
            guard try team(named: name) == nil else { print("\(name) already exists."); return true }
            let team = Team(context: context)
            team.teamName = name
            team.qualifyingZone = zone
            team.imageName = name.lowercased().replacingOccurrences(of: " ", with: "-") + "-flag"
            try context.save()
            print("Added \(name) in \(zone).")
        case "delete":
            guard let team = try team(named: rest) else { print("No team named \(rest)."); return true }
            context.delete(team)
            try context.save()
            print("Deleted \(rest).")
        case "help":
            print("Commands: list | win <team> | add <team> <zone> | delete <team> | quit")
        default:
            print("Unknown command \(command). Type help.")
        }
        return true
    }

    /// Splits `add` arguments into a team and a zone; a known two-word zone or a quoted zone is kept whole.
    static func splitTeamAndZone(_ words: [String]) -> (String, String) {
        let joined = words.joined(separator: " ")
        if joined.contains("\"") {
            let parts = joined.split(separator: "\"").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            if parts.count == 2 { return (parts[0], parts[1]) }
        }
        guard words.count >= 2 else { return ("", "") }
        for zone in zones where joined.lowercased().hasSuffix(" " + zone.lowercased()) {
            return (String(joined.dropLast(zone.count + 1)), zone)
        }
        return (words.dropLast().joined(separator: " "), words.last!)
    }
}

var storeURL: URL?
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--store":
        guard let path = arguments.next() else { print("--store needs a path"); exit(2) }
        storeURL = URL(fileURLWithPath: path)
    case "--help", "-h":
        print("Usage: worldcup [--store PATH]\nCommands: list | win <team> | add <team> <zone> | delete <team> | quit")
        exit(0)
    default:
        print("Unknown option \(argument). Usage: worldcup [--store PATH]")
        exit(2)
    }
}

do {
    let app = try WorldCupApp(storeURL: storeURL)
    try app.importSeedIfNeeded()
    print("World Cup store: \(app.container.persistentStoreCoordinator.persistentStores.first?.url?.path ?? "?")")
    try app.list()
    print("\nCommands: list | win <team> | add <team> <zone> | delete <team> | quit")
    while true {
        print("> ", terminator: "")
        FileHandle.standardOutput.synchronizeFile()
        guard let line = readLine() else { break }
        do {
            if try !app.run(line) { break }
        } catch {
            print("Error: \(error.localizedDescription)")
        }
    }
} catch {
    print("worldcup: \(error.localizedDescription)")
    exit(1)
}
