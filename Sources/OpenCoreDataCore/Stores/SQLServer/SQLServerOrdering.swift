import Foundation

/// Sort descriptors a server can apply in `ORDER BY` with the evaluator's order: each sorts by a
/// stored integer, floating-point, date or Boolean attribute of the entity itself, with `compare:`
/// (nil sorts first ascending and last descending, as `ValueComparison.sortCompare` does); ties
/// go by `Z_PK`, the order the evaluator's stable sort leaves them in. Strings, key paths through
/// relationships, other selectors and comparators are sorted in Swift.
enum SQLServerOrdering {
    /// The `ORDER BY` list for the descriptors (`Z_PK` alone for none), or nil when one of them
    /// needs Swift.
    static func clause(for descriptors: [NSSortDescriptor], entity: NSEntityDescription, columns: [Int: String]) -> String? {
        var terms: [String] = []
        for descriptor in descriptors {
            guard descriptor.comparator == nil, descriptor.selector == nil || descriptor.selector?.name == "compare:",
                  let key = descriptor.key, !key.contains("."),
                  let attribute = entity.frozenPropertiesByName[key] as? NSAttributeDescription, !attribute.isTransient,
                  let column = columns[attribute.slot] else { return nil }
            switch attribute.attributeType {
            case .integer16AttributeType, .integer32AttributeType, .integer64AttributeType, .doubleAttributeType, .floatAttributeType,
                 .dateAttributeType, .booleanAttributeType:
                terms.append(descriptor.ascending ? "\(column) ASC NULLS FIRST" : "\(column) DESC NULLS LAST")
            default:
                return nil
            }
        }
        return (terms + ["Z_PK"]).joined(separator: ", ")
    }
}
