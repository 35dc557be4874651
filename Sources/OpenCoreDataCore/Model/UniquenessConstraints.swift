import Foundation

extension NSEntityDescription {
    /// The entity's own `uniquenessConstraints` as properties (names or property descriptions
    /// resolved); a constraint naming a property the entity lacks is left out.
    var uniquenessConstraintProperties: [[NSPropertyDescription]] {
        uniquenessConstraints.compactMap { items in
            let properties = items.compactMap { item -> NSPropertyDescription? in
                frozenPropertiesByName[(item as? NSPropertyDescription)?.name ?? (item as? String) ?? ""]
            }
            return properties.isEmpty || properties.count != items.count ? nil : properties
        }
    }
}
