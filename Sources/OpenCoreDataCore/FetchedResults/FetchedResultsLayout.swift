import Foundation

/// The ordered objects of a controller and their sections, with each object's index path.
///
/// Invariant: `sections` partition `objects` in order; an object's index path is (its section's
/// index, its position in the section).
struct FetchedResultsLayout {
    let objects: [NSManagedObject]
    let sections: [FetchedResultsSection]
    let paths: [ObjectIdentifier: IndexPath]


    /// Splits ordered objects into sections by the section key path; throws 134060 when a section
    /// name comes back after another one (the sort does not group by section).
    init(objects: [NSManagedObject], sectionNameKeyPath: String?, indexTitle: (String) -> String?,
         knownNames: [ObjectKey: String] = [:]) throws {
        var sections: [FetchedResultsSection] = []
        var paths: [ObjectIdentifier: IndexPath] = [:]
        paths.reserveCapacity(objects.count)
        guard let keyPath = sectionNameKeyPath else {
            for (row, object) in objects.enumerated() { paths[ObjectIdentifier(object)] = IndexPath(row: row, section: 0) }
            sections = objects.isEmpty ? [] : [FetchedResultsSection(name: "", indexTitle: nil, members: objects)]
            self.init(objects: objects, sections: sections, paths: paths)
            return
        }
        var seen: Set<String> = []
        var currentName: String?
        var currentMembers: [NSManagedObject] = []
        for (index, object) in objects.enumerated() {
            // Names read ahead (a batched fetch) avoid firing the object's fault.
            let name = knownNames[object.objectID.key] ?? Self.sectionName(of: object, keyPath: keyPath)
            if currentName != name {
                if let finished = currentName {
                    sections.append(FetchedResultsSection(name: finished, indexTitle: indexTitle(finished), members: currentMembers))
                    currentMembers = []
                }
                guard seen.insert(name).inserted else {
                    throw CoreDataError.make(.coreData, "The fetched object at index \(index) has an out of order section name '\(name)'. Objects must be sorted by section name.",
                                             userInfo: ["index": index, "sectionName": name])
                }
                currentName = name
            }
            paths[ObjectIdentifier(object)] = IndexPath(row: currentMembers.count, section: sections.count)
            currentMembers.append(object)
        }
        if let finished = currentName {
            sections.append(FetchedResultsSection(name: finished, indexTitle: indexTitle(finished), members: currentMembers))
        }
        self.init(objects: objects, sections: sections, paths: paths)
    }

    private init(objects: [NSManagedObject], sections: [FetchedResultsSection], paths: [ObjectIdentifier: IndexPath]) {
        self.objects = objects
        self.sections = sections
        self.paths = paths
    }

    /// The section name of an object: its value at the key path as text, "" for nil.
    static func sectionName(of object: NSManagedObject, keyPath: String) -> String {
        sectionName(from: object.value(forKeyPath: keyPath))
    }

    /// A section key path's value as a section name.
    static func sectionName(from value: Any?) -> String {
        switch value {
        case nil, is NSNull: return ""
        case let string as String: return string
        case let value?: return "\(value)"
        }
    }

    /// The default index title: the capitalized first letter.
    static func defaultIndexTitle(_ name: String) -> String? {
        name.first.map { String($0).uppercased() }
    }
}
