import Foundation
import OpenCoreData
import OpenCoreDataPostgreSQL

/// A team, as the "NSFetchedResultsController" tutorial's model declares it.
public final class Team: NSManagedObject {
    @Managed public var teamName: String?
    @Managed public var qualifyingZone: String?
    @Managed public var imageName: String?
    @Managed public var wins: Int32
    @Managed public var losses: Int32
}

/// The World Cup app: a container over a SQLite store, the one-time import of the 32 teams, the
/// listing grouped by zone and the commands that change the teams. Every change is saved. The
/// commands run on the view context's queue, whatever thread calls them.
public struct WorldCupApp {
    /// The Core Data stack.
    public let container: NSPersistentContainer
    /// The view context every command works in.
    public var context: NSManagedObjectContext { container.viewContext }
    /// The zones whose two-word names `add` recognizes without quotes.
    static let zones = ["Africa", "Asia", "Europe", "North, Central America & Caribbean", "North America", "South America", "Oceania"]
    /// The commands, for `help`.
    public static let usage = "Commands: list | win <team> | add <team> <zone> | delete <team> | quit"

    /// Opens (or creates) the store; nil uses `NSPersistentContainer.defaultDirectoryURL()`.
    ///
    /// Every save records persistent history, so that a program watching the same store (the web
    /// table, say) learns what changed; with `observesRemoteChanges` the coordinator also posts
    /// `NSPersistentStoreRemoteChange` when another process commits to the file.
    ///
    /// A `postgres://` URL opens a PostgreSQL store instead, which several servers can share; it
    /// records no history, and its remote change notifications carry the saved objects' IDs.
    public init(storeURL: URL?, observesRemoteChanges: Bool = false) throws {
        container = NSPersistentContainer(name: "WorldCup")
        let description = container.persistentStoreDescriptions[0]
        if let storeURL { description.url = storeURL }
        if let scheme = storeURL?.scheme?.lowercased(), scheme == "postgres" || scheme == "postgresql" {
            description.type = NSPostgreSQLStoreType
        } else {
            description.setOption(true as NSNumber, forKey: NSPersistentHistoryTrackingKey)
        }
        if observesRemoteChanges {
            description.setOption(true as NSNumber, forKey: NSPersistentStoreRemoteChangeNotificationPostOptionKey)
        }
        var loadError: Error?
        container.loadPersistentStores { _, error in loadError = error }
        if let loadError { throw loadError }
    }

    /// The store file in use.
    public var storeURL: URL? { container.persistentStoreCoordinator.persistentStores.first?.url }

    /// Imports the teams of seed.json when the store has none; returns how many were imported.
    @discardableResult
    public func importSeedIfNeeded() throws -> Int {
        try context.performAndWait { try importSeedOnQueue() }
    }

    private func importSeedOnQueue() throws -> Int {
        guard try context.count(for: NSFetchRequest<Team>(entityName: "Team")) == 0 else { return 0 }
        guard let url = Bundle.module.url(forResource: "seed", withExtension: "json") else { return 0 }
        let entries = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [[String: Any]] ?? []
        for entry in entries {
            let team = Team(context: context)
            team.teamName = entry["teamName"] as? String
            team.qualifyingZone = entry["qualifyingZone"] as? String
            team.imageName = entry["imageName"] as? String
            team.wins = Int32(entry["wins"] as? Int ?? 0)
        }
        try context.save()
        return entries.count
    }

    /// The tutorial's request: all teams sorted by zone, wins descending, then name.
    public static func teamsRequest() -> NSFetchRequest<Team> {
        let request = NSFetchRequest<Team>(entityName: "Team")
        request.sortDescriptors = [
            NSSortDescriptor(key: "qualifyingZone", ascending: true),
            NSSortDescriptor(key: "wins", ascending: false),
            NSSortDescriptor(key: "teamName", ascending: true),
        ]
        return request
    }

    /// The teams in sections by zone: sorted by zone, wins descending, then name. Call it on the
    /// main queue (the view context's), where the teams may be read.
    public func sections() throws -> [(zone: String, teams: [Team])] {
        let request = Self.teamsRequest()
        var result: [(zone: String, teams: [Team])] = []
        for team in try context.fetch(request) {
            let zone = team.qualifyingZone ?? "?"
            if result.last?.zone == zone { result[result.count - 1].teams.append(team) } else { result.append((zone, [team])) }
        }
        return result
    }

    /// The listing the `list` command prints.
    public func listing() throws -> String {
        try context.performAndWait { try listingOnQueue() }
    }

    private func listingOnQueue() throws -> String {
        var lines: [String] = []
        for section in try sections() {
            lines.append("")
            lines.append(section.zone)
            for team in section.teams {
                let name = (team.teamName ?? "?").padding(toLength: 24, withPad: " ", startingAt: 0)
                let flag = (team.imageName ?? "").padding(toLength: 24, withPad: " ", startingAt: 0)
                lines.append("  \(name) \(flag) wins: \(team.wins)")
            }
        }
        return lines.joined(separator: "\n")
    }

    /// The team with a name (case-insensitive), if any.
    public func team(named name: String) throws -> Team? {
        try Self.team(named: name, in: context)
    }

    /// The team with a name (case-insensitive) in a context, if any; call it on the context's queue.
    public static func team(named name: String, in context: NSManagedObjectContext) throws -> Team? {
        let request = NSFetchRequest<Team>(entityName: "Team")
        request.predicate = NSPredicate(format: "teamName ==[c] %@", name)
        return try context.fetch(request).first
    }

    /// Inserts a team with no wins, and a flag image name made from its name, into a context
    /// (unsaved); call it on the context's queue.
    @discardableResult
    public static func insertTeam(named name: String, zone: String, into context: NSManagedObjectContext) -> Team {
        let team = Team(context: context)
        team.teamName = name
        team.qualifyingZone = zone
        team.imageName = name.lowercased().replacingOccurrences(of: " ", with: "-") + "-flag"
        return team
    }

    /// Runs one command line; returns what to print and whether to quit.
    public func execute(_ line: String) throws -> (output: String, quit: Bool) {
        try context.performAndWait { try executeOnQueue(line) }
    }

    private func executeOnQueue(_ line: String) throws -> (output: String, quit: Bool) {
        let words = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        guard let command = words.first?.lowercased() else { return ("", false) }
        let rest = words.dropFirst().joined(separator: " ")
        switch command {
        case "quit", "exit":
            return ("", true)
        case "list":
            return (try listingOnQueue(), false)
        case "win":
            guard let team = try team(named: rest) else { return ("No team named \(rest).", false) }
            team.wins += 1
            try context.save()
            return ("\(team.teamName ?? rest) now has \(team.wins) wins.", false)
        case "add":
            let (name, zone) = Self.splitTeamAndZone(Array(words.dropFirst()))
            guard !name.isEmpty, !zone.isEmpty else { return ("Usage: add <team> <zone>", false) }
            guard try team(named: name) == nil else { return ("\(name) already exists.", false) }
            Self.insertTeam(named: name, zone: zone, into: context)
            try context.save()
            return ("Added \(name) in \(zone).", false)
        case "delete":
            guard let team = try team(named: rest) else { return ("No team named \(rest).", false) }
            context.delete(team)
            try context.save()
            return ("Deleted \(rest).", false)
        case "help":
            return (Self.usage, false)
        default:
            return ("Unknown command \(command). Type help.", false)
        }
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
