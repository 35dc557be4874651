import Foundation

/// Checks that every key path of a predicate names properties of the entity, before any store runs it.
enum PredicateValidation {
    static func validate(_ predicate: NSPredicate, for entity: NSEntityDescription) throws {
        if let error = predicate.formatError { throw error }
        if let compound = predicate as? NSCompoundPredicate {
            for sub in compound.predicates { try validate(sub, for: entity) }
        } else if let comparison = predicate as? NSComparisonPredicate {
            try validate(comparison.leftExpression, for: entity)
            try validate(comparison.rightExpression, for: entity)
        }
    }

    static func validate(_ expression: NSExpression, for entity: NSEntityDescription) throws {
        if let error = expression.formatError { throw error }
        switch expression.node {
        case .keyPath(let operand, let path, _):
            guard operand == nil || operand?.expressionType == .evaluatedObject else { return }
            try validateKeyPath(path, from: entity, allowToMany: true)
        case .function(_, let receiver, let arguments):
            if let receiver { try validate(receiver, for: entity) }
            for argument in arguments { try validate(argument, for: entity) }
        case .aggregate(let items):
            for item in items { try validate(item, for: entity) }
        case .subquery(let collection, _, _):
            try validate(collection, for: entity)
        default:
            break
        }
    }

    /// Walks a dotted key path from an entity; collection operators are skipped. Returns the
    /// property it ends at (nil for `self`).
    @discardableResult
    static func validateKeyPath(_ keyPath: String, from entity: NSEntityDescription, allowToMany: Bool) throws -> NSPropertyDescription? {
        var current: NSEntityDescription? = entity
        var last: NSPropertyDescription?
        let components = keyPath.split(separator: ".").map(String.init)
        for (index, component) in components.enumerated() {
            if component.hasPrefix("@") || component == "self" || component == "SELF" { continue }
            guard let entity = current else {
                throw CoreDataError.make(.coreData, "keypath \(keyPath) continues past an attribute at '\(component)'.", userInfo: ["keyPath": keyPath])
            }
            // `entity`: the object's entity description, which `entity == %@` compares.
            if index == components.count - 1, entity.namesEntityDescription(component) { return nil }
            guard let property = entity.frozenPropertiesByName[component] else {
                throw SQLFetchBuilder.unknownKey(component, entity: entity, keyPath: keyPath)
            }
            last = property
            if let relationship = property as? NSRelationshipDescription {
                if relationship.isToMany && !allowToMany {
                    throw CoreDataError.make(.coreData, "to-many key not allowed here: \(keyPath) goes through the to-many relationship \(component).", userInfo: ["keyPath": keyPath])
                }
                current = relationship.destinationEntity
            } else {
                current = nil
            }
        }
        return last
    }
}
