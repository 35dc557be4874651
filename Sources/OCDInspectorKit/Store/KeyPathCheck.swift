import OpenCoreData

/// Checks the key paths `ocd fetch` reads and sorts by before they reach the object graph, so
/// that a typo is a clear error rather than a trap.
enum KeyPathCheck {
    /// Throws unless every component but the last is a to-one relationship and the last is a
    /// property (or `objectID`).
    static func validate(_ keyPath: String, in entity: NSEntityDescription, use: String) throws {
        var current = entity
        let components = keyPath.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        for (index, component) in components.enumerated() {
            let isLast = index == components.count - 1
            if isLast && component == "objectID" { return }
            guard let property = current.propertiesByName[component] else {
                let known = current.propertiesByName.keys.sorted().joined(separator: ", ")
                throw InspectorError("\(use) '\(keyPath)': \(current.name ?? "?") has no property '\(component)' (its properties: \(known))")
            }
            if isLast { return }
            guard let relationship = property as? NSRelationshipDescription, !relationship.isToMany,
                  let destination = relationship.destinationEntity else {
                throw InspectorError("\(use) '\(keyPath)': '\(component)' of \(current.name ?? "?") is not a to-one relationship, so the key path can't continue past it")
            }
            current = destination
        }
    }
}
