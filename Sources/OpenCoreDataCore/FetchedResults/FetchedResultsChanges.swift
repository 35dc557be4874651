import Foundation

/// The changes between two layouts, expressed as UITableView batch updates need them.
///
/// Objects that did not change keep their relative order (the results are sorted and their keys
/// did not change). A changed object that survives is an `.update` when its place among the
/// unchanged objects, its section and its order relative to other updated objects stay the same,
/// and a `.move` otherwise. A move whose old and new index paths are equal is reported as a delete
/// and an insert, since a table view rejects a move onto its own index path; so is a move out of a
/// deleted section or into an inserted one. Objects of a deleted section are also reported as
/// deleted rows, which a table view accepts alongside the section delete.
struct FetchedResultsChanges {
    struct ObjectChange {
        let object: NSManagedObject
        let type: NSFetchedResultsChangeType
        let old: IndexPath?
        let new: IndexPath?
    }

    var deletedSections: [(Int, FetchedResultsSection)] = []
    var insertedSections: [(Int, FetchedResultsSection)] = []
    var objects: [ObjectChange] = []

    var isEmpty: Bool { deletedSections.isEmpty && insertedSections.isEmpty && objects.isEmpty }

    init(from old: FetchedResultsLayout, to new: FetchedResultsLayout, changed: Set<ObjectIdentifier>) {
        let oldNames = Set(old.sections.map(\.name))
        let newNames = Set(new.sections.map(\.name))
        for (index, section) in old.sections.enumerated() where !newNames.contains(section.name) { deletedSections.append((index, section)) }
        for (index, section) in new.sections.enumerated() where !oldNames.contains(section.name) { insertedSections.append((index, section)) }

        // Deletions and insertions.
        for object in old.objects where new.paths[ObjectIdentifier(object)] == nil {
            objects.append(ObjectChange(object: object, type: .delete, old: old.paths[ObjectIdentifier(object)], new: nil))
        }
        for object in new.objects where old.paths[ObjectIdentifier(object)] == nil {
            objects.append(ObjectChange(object: object, type: .insert, old: nil, new: new.paths[ObjectIdentifier(object)]))
        }

        // Survivors that changed: update in place, or move.
        let stable = { (object: NSManagedObject) -> Bool in
            !changed.contains(ObjectIdentifier(object)) && old.paths[ObjectIdentifier(object)] != nil
        }
        // How many unchanged survivors precede each position, in each layout.
        func stableRanks(_ layout: FetchedResultsLayout, present: (NSManagedObject) -> Bool) -> [ObjectIdentifier: Int] {
            var ranks: [ObjectIdentifier: Int] = [:]
            var count = 0
            for object in layout.objects {
                if stable(object) && present(object) { count += 1 } else { ranks[ObjectIdentifier(object)] = count }
            }
            return ranks
        }
        let survivesInNew = { (object: NSManagedObject) -> Bool in new.paths[ObjectIdentifier(object)] != nil }
        let survivesInOld = { (object: NSManagedObject) -> Bool in old.paths[ObjectIdentifier(object)] != nil }
        let oldRanks = stableRanks(old, present: survivesInNew)
        let newRanks = stableRanks(new, present: survivesInOld)
        var candidates: [NSManagedObject] = []
        var moved: Set<ObjectIdentifier> = []
        for object in new.objects where changed.contains(ObjectIdentifier(object)) {
            let id = ObjectIdentifier(object)
            guard let oldPath = old.paths[id], let newPath = new.paths[id] else { continue }
            let sameSection = old.sections[oldPath.section].name == new.sections[newPath.section].name
            if sameSection && oldRanks[id] == newRanks[id] { candidates.append(object) } else { moved.insert(id) }
        }
        // Updated objects sharing a place must also keep their order among themselves.
        let candidateIDs = Set(candidates.map { ObjectIdentifier($0) })
        let oldOrder = old.objects.filter { candidateIDs.contains(ObjectIdentifier($0)) }
        var groupsOld: [String: [ObjectIdentifier]] = [:]
        var groupsNew: [String: [ObjectIdentifier]] = [:]
        for object in oldOrder { groupsOld["\(oldRanks[ObjectIdentifier(object)]!)", default: []].append(ObjectIdentifier(object)) }
        for object in candidates { groupsNew["\(newRanks[ObjectIdentifier(object)]!)", default: []].append(ObjectIdentifier(object)) }
        for (key, ids) in groupsNew where groupsOld[key] != ids { moved.formUnion(ids) }

        for object in new.objects where changed.contains(ObjectIdentifier(object)) {
            let id = ObjectIdentifier(object)
            guard let oldPath = old.paths[id], let newPath = new.paths[id] else { continue }
            if !moved.contains(id) {
                objects.append(ObjectChange(object: object, type: .update, old: oldPath, new: newPath))
            } else if oldPath != newPath && newNames.contains(old.sections[oldPath.section].name) && oldNames.contains(new.sections[newPath.section].name) {
                objects.append(ObjectChange(object: object, type: .move, old: oldPath, new: newPath))
            } else {
                objects.append(ObjectChange(object: object, type: .delete, old: oldPath, new: nil))
                objects.append(ObjectChange(object: object, type: .insert, old: nil, new: newPath))
            }
        }
    }
}
