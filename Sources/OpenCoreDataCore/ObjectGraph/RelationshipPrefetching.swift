import Foundation
import OrderedCollections

/// `relationshipKeyPathsForPrefetching`: after a fetch, each relationship on each key path is
/// loaded for all fetched objects at once, one query per relationship instead of one per object.
extension NSManagedObjectContext {
    func prefetch(_ keyPaths: [String], for objects: [NSManagedObject]) throws {
        guard let parent = parentStore else { return }
        for keyPath in keyPaths {
            var level = objects
            for key in keyPath.split(separator: ".").map(String.init) {
                guard let first = level.first, let relationship = first.entity.frozenRelationshipsByName[key] else { break }
                level = try prefetch(relationship, for: level, parent: parent)
            }
        }
    }

    /// Gives the faults among `objects` that have no data yet their rows, in one query per store and hierarchy.
    func fillFaults(_ objects: [NSManagedObject], parent: ParentStore) throws {
        let missing = objects.filter { $0.committedValues == nil && !$0.isInserted }
        guard !missing.isEmpty else { return }
        let rows = try asRequester { try parent.loadRows(missing.map(\.objectID)) }
        for object in missing where object.committedValues == nil {
            guard let row = rows[object.objectKey] else { continue }
            object.takeStoredRow(row)
        }
    }

    /// Loads one relationship of several objects; returns the destinations, for the next step.
    private func prefetch(_ relationship: NSRelationshipDescription, for sources: [NSManagedObject], parent: ParentStore) throws -> [NSManagedObject] {
        // Sources need their own rows first (to know their to-one targets).
        try fillFaults(sources, parent: parent)
        var destinations: [NSManagedObject] = []
        if relationship.isToMany {
            let needing = sources.filter { !$0.isInserted && !($0.values.indices.contains(relationship.slot) && $0.values[relationship.slot] is RelationshipSet) }
            let members = try asRequester { try parent.loadToManyIDs(needing.map(\.objectID), relationship: relationship) }
            for source in needing {
                let ids = members[source.objectKey] ?? []
                let set = RelationshipSet(members: OrderedSet(ids.map { object(with: $0) }), committedIDs: ids)
                if source.values.count == source.entity.slotKeys.count { source.values[relationship.slot] = set }
                destinations += set.members
            }
        } else {
            for source in sources where source.values.indices.contains(relationship.slot) {
                if let id = source.toOneDestinationID(relationship) { destinations.append(object(with: id)) }
            }
        }
        // Destinations' rows, in one query per entity hierarchy.
        try fillFaults(destinations, parent: parent)
        return destinations
    }
}
