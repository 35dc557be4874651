import Foundation
import OpenCoreData
import WorldCupKit

/// The World Cup table every page shows: a fetched results controller over the teams (sections by
/// zone; zone, wins descending, name) in a private-queue context, and the writes the pages ask
/// for. Each batch of the controller's changes goes to every subscribed page as a `TableMessage`.
///
/// Every access to the context, the controller and the recorded state runs in the context's
/// `perform` or `performAndWait`, which is what makes the `@unchecked Sendable` sound.
public final class LiveTeamTable: @unchecked Sendable {
    /// The private-queue context the controller watches and every write goes through.
    public let context: NSManagedObjectContext
    private let controller: NSFetchedResultsController<Team>
    private let fanOut = MessageFanOut()
    private var recorder: TableBatchRecorder?
    private var remoteChanges: RemoteChangeMerger?
    private var version = 0

    /// Starts the controller over a container's store; throws when the first fetch fails. When the
    /// store posts `NSPersistentStoreRemoteChange` (and records history), commits of other
    /// processes reach the pages too, and the history is pruned: what is older than
    /// `historyRetention` seconds, at most once per `historyPruneInterval` (see `RemoteChangeMerger`).
    public init(container: NSPersistentContainer, historyRetention: TimeInterval = 300, historyPruneInterval: TimeInterval = 60) throws {
        context = container.newBackgroundContext()
        context.name = "worldcup-web"
        context.transactionAuthor = "worldcup-web"
        context.automaticallyMergesChangesFromParent = true
        controller = NSFetchedResultsController(fetchRequest: WorldCupApp.teamsRequest(), managedObjectContext: context,
                                                sectionNameKeyPath: "qualifyingZone", cacheName: nil)
        try context.performAndWait {
            let recorder = TableBatchRecorder { [unowned self] changes in
                version += 1
                fanOut.send(.batch(version: version, changes: changes))
            }
            self.recorder = recorder
            controller.delegate = recorder
            // Watch before the fetch, so that no commit falls between the two.
            remoteChanges = RemoteChangeMerger(context: context, retention: historyRetention, pruneInterval: historyPruneInterval) { error in
                CoreDataLog.logger.error("worldcup-web: can't read or prune the store's history: \(error.localizedDescription)")
            }
            try controller.performFetch()
        }
    }

    /// The messages for one page: the whole table first, then every batch of changes.
    public func subscribe() async -> AsyncStream<TableMessage> {
        await context.perform { [self] in
            fanOut.subscribe(startingWith: .state(version: version, sections: TableSection.sections(of: controller)))
        }
    }

    /// The table as it is now.
    public func currentSections() async -> [TableSection] {
        await context.perform { [self] in TableSection.sections(of: controller) }
    }

    /// How many pages are subscribed.
    public var subscriberCount: Int { fanOut.count }

    /// Adds a win to a team, as the tutorial's `didSelectRow` does, and saves.
    public func addWin(teamID: String) async throws {
        try await write { [self] in
            let team = try team(withID: teamID)
            team.wins += 1
        }
    }

    /// Adds a team with no wins in a zone (a new zone makes a new section) and saves.
    public func addTeam(name rawName: String, zone rawZone: String) async throws {
        let name = rawName.trimmingCharacters(in: .whitespacesAndNewlines)
        let zone = rawZone.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !name.isEmpty, !zone.isEmpty else { throw WebRequestError.badRequest("A team needs a name and a zone.") }
        try await write { [self] in
            guard try WorldCupApp.team(named: name, in: context) == nil else {
                throw WebRequestError.badRequest("\(name) already exists.")
            }
            let team = WorldCupApp.insertTeam(named: name, zone: zone, into: context)
            // A permanent ID before the controller reports the insert, so the page gets the ID
            // the team keeps.
            try context.obtainPermanentIDs(for: [team])
        }
    }

    /// Deletes a team and saves.
    public func deleteTeam(teamID: String) async throws {
        try await write { [self] in
            context.delete(try team(withID: teamID))
        }
    }

    /// Ends every page's stream (the server is stopping).
    public func disconnectAll() {
        fanOut.finishAll()
    }

    /// Runs a change on the context's queue and saves it; on failure the context is rolled back.
    private func write(_ change: @escaping @Sendable () throws -> Void) async throws {
        try await context.perform { [self] in
            do {
                try change()
                try context.save()
            } catch {
                context.rollback()
                throw error
            }
            // The save stands whatever the pruning does (its errors are logged).
            remoteChanges?.pruneIfDue()
        }
    }

    /// The team a page names by its object ID's URI.
    private func team(withID id: String) throws -> Team {
        guard let url = URL(string: id), let objectID = context.persistentStoreCoordinator?.managedObjectID(forURIRepresentation: url),
              let team = try? context.existingObject(with: objectID) as? Team else {
            throw WebRequestError.notFound("No team with ID \(id).")
        }
        return team
    }
}
