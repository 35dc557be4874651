import Foundation

/// Uniqueness constraints (`NSEntityDescription.uniquenessConstraints`) as a store checks them in a
/// save's transaction: an inserted object may not share a constraint's values with another
/// inserted object or with a stored row of the entity that declares the constraint (or its
/// subentities). Each store supplies its column values and its query for a stored row.
enum UniquenessChecking {
    /// One constraint: the declaring entity and the constrained properties.
    struct Constraint {
        let entity: NSEntityDescription
        let properties: [NSPropertyDescription]
    }

    /// The inserted records that violate a uniqueness constraint, grouped by constraint and
    /// values. `value` gives a record's value of a property as the store stores it; `stored`
    /// finds the stored object of the constraint's entity holding those values.
    static func violations<Value: Hashable>(_ inserted: [SaveRecord], entities: [NSEntityDescription],
                                            value: (SaveRecord, NSPropertyDescription) -> Value,
                                            stored: (Constraint, [Value]) throws -> NSManagedObjectID?) rethrows -> [StoreConstraintConflicts.Violation] {
        guard entities.contains(where: { !$0.uniquenessConstraints.isEmpty }) else { return [] }
        var groups: [[AnyHashable]: (Constraint, [Value], [SaveRecord])] = [:]
        var order: [[AnyHashable]] = []
        for record in inserted {
            for (index, constraint) in constraints(of: record.entity).enumerated() {
                let values = constraint.properties.map { value(record, $0) }
                let key = [AnyHashable(ObjectIdentifier(constraint.entity)), AnyHashable(index)] + values.map { AnyHashable($0) }
                if groups[key] == nil { order.append(key); groups[key] = (constraint, values, []) }
                groups[key]?.2.append(record)
            }
        }
        var violations: [StoreConstraintConflicts.Violation] = []
        for key in order {
            guard let (constraint, values, records) = groups[key] else { continue }
            let storedID = try stored(constraint, values)
            guard storedID != nil || records.count > 1 else { continue }
            violations.append(.init(constraint: constraint.properties.map(\.name), objectIDs: records.map(\.objectID), storedObjectID: storedID))
        }
        return violations
    }

    /// The constraints that apply to an entity's objects: its own and its superentities'.
    static func constraints(of entity: NSEntityDescription) -> [Constraint] {
        var result: [Constraint] = []
        var current: NSEntityDescription? = entity
        while let declaring = current {
            result += declaring.uniquenessConstraintProperties.map { Constraint(entity: declaring, properties: $0) }
            current = declaring.superentity
        }
        return result
    }
}
