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

    /// Loads one relationship of several objects; returns the destinations, for the next step.
    private func prefetch(_ relationship: NSRelationshipDescription, for sources: [NSManagedObject], parent: ParentStore) throws -> [NSManagedObject] {
        // Sources need their own rows first (to know their to-one targets).
        let unloaded = sources.filter { $0.committedValues == nil && !$0.isInserted }.map(\.objectID)
        if !unloaded.isEmpty {
            let rows = try parent.loadRows(unloaded)
            for source in sources where source.committedValues == nil {
                guard let row = rows[source.objectID.key] else { continue }
                source.committedValues = row.values
                source.values = row.values
                source.storeVersion = row.version
            }
        }
        var destinations: [NSManagedObject] = []
        if relationship.isToMany {
            let needing = sources.filter { !$0.isInserted && !($0.values.indices.contains(relationship.slot) && $0.values[relationship.slot] is RelationshipSet) }
            let members = try parent.loadToManyIDs(needing.map(\.objectID), relationship: relationship)
            for source in needing {
                let ids = members[source.objectID.key] ?? []
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
        let missing = destinations.filter { $0.committedValues == nil && !$0.isInserted }.map(\.objectID)
        if !missing.isEmpty {
            let rows = try parent.loadRows(missing)
            for destination in destinations where destination.committedValues == nil {
                guard let row = rows[destination.objectID.key] else { continue }
                destination.committedValues = row.values
                destination.values = row.values
                destination.storeVersion = row.version
            }
        }
        return destinations
    }
}
