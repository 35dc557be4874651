import Foundation
import OpenCoreData
import WorldCupKit

/// The fetched results controller's delegate: it records the section and row changes of one
/// batch, in the order the controller reports them, and hands the finished batch on.
///
/// The controller calls it on its context's queue; `onBatch` runs there too.
final class TableBatchRecorder: NSFetchedResultsControllerDelegate {
    private var changes: [TableChange] = []
    private let onBatch: ([TableChange]) -> Void

    /// Creates a recorder that passes each finished batch to `onBatch`.
    init(onBatch: @escaping ([TableChange]) -> Void) {
        self.onBatch = onBatch
    }

    func controllerWillChangeContent(_ controller: NSFetchedResultsController<NSFetchRequestResult>) {
        changes = []
    }

    func controller(_ controller: NSFetchedResultsController<NSFetchRequestResult>, didChange sectionInfo: NSFetchedResultsSectionInfo,
                    atSectionIndex sectionIndex: Int, for type: NSFetchedResultsChangeType) {
        switch type {
        case .insert: changes.append(.insertSection(section: sectionIndex, name: sectionInfo.name))
        case .delete: changes.append(.deleteSection(section: sectionIndex, name: sectionInfo.name))
        case .move, .update: break // Core Data reports sections only as inserted or deleted.
        }
    }

    func controller(_ controller: NSFetchedResultsController<NSFetchRequestResult>, didChange anObject: Any, at indexPath: IndexPath?,
                    for type: NSFetchedResultsChangeType, newIndexPath: IndexPath?) {
        guard let team = anObject as? Team else { return }
        switch (type, indexPath, newIndexPath) {
        case (.insert, _, let new?): changes.append(.insertRow(at: RowPath(new), row: TeamRow(team)))
        case (.delete, let old?, _): changes.append(.deleteRow(at: RowPath(old), id: TeamRow.id(of: team)))
        case (.move, let old?, let new?): changes.append(.moveRow(from: RowPath(old), to: RowPath(new), row: TeamRow(team)))
        case (.update, let old?, _): changes.append(.reloadRow(at: RowPath(old), row: TeamRow(team)))
        default: break // The controller always gives the paths its change type needs.
        }
    }

    func controllerDidChangeContent(_ controller: NSFetchedResultsController<NSFetchRequestResult>) {
        let batch = changes
        changes = []
        if !batch.isEmpty { onBatch(batch) }
    }
}

extension TeamRow {
    /// The row of a team; call it on the team's context queue.
    init(_ team: Team) {
        self.init(id: Self.id(of: team), name: team.teamName ?? "", zone: team.qualifyingZone ?? "",
                  flag: team.imageName ?? "", wins: Int(team.wins))
    }

    /// The ID the page uses for a team: its object ID's URI.
    static func id(of team: Team) -> String { team.objectID.uriRepresentation().absoluteString }
}

extension TableSection {
    /// The sections of a controller, as the page shows them.
    static func sections(of controller: NSFetchedResultsController<Team>) -> [TableSection] {
        (controller.sections ?? []).map { section in
            TableSection(name: section.name, rows: (section.objects ?? []).compactMap { ($0 as? Team).map(TeamRow.init) })
        }
    }
}
