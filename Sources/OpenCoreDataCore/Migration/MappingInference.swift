import Foundation

/// Infers the mapping between two model versions, as lightweight migration does.
///
/// An entity or property of the destination matches the source one named by its renaming
/// identifier, or else the one with its name. Unmatched destination entities get an add mapping,
/// unmatched source entities a remove mapping; unmatched destination properties keep their
/// default values. An attribute whose type changed is copied when the value converts (between the
/// numeric types, Boolean and String); any other type change can't be inferred (134190).
struct MappingInference {
    let source: NSManagedObjectModel
    let destination: NSManagedObjectModel

    /// The inferred mapping model, with one mapping per entity of either model.
    func mappingModel() throws -> NSMappingModel {
        source.freeze()
        destination.freeze()
        let model = NSMappingModel()
        var mappings: [NSEntityMapping] = []
        var matchedSources = Set<String>()
        for entity in destination.entities.sorted(by: { ($0.name ?? "") < ($1.name ?? "") }) {
            guard let name = entity.name else { continue }
            let sourceEntity = Self.match(entity.renamingIdentifier, name, in: source.entitiesByName)
            let mapping = NSEntityMapping()
            mapping.destinationEntityName = name
            mapping.destinationEntityVersionHash = entity.versionHash
            guard let sourceEntity, let sourceName = sourceEntity.name else {
                mapping.name = "Add\(name)"
                mapping.mappingType = .addEntityMappingType
                mappings.append(mapping)
                continue
            }
            matchedSources.insert(sourceName)
            mapping.name = "\(sourceName)To\(name)"
            mapping.sourceEntityName = sourceName
            mapping.sourceEntityVersionHash = sourceEntity.versionHash
            mapping.sourceExpression = Self.sourceExpression(entityName: sourceName)
            mapping.attributeMappings = try attributeMappings(from: sourceEntity, to: entity)
            mapping.relationshipMappings = relationshipMappings(from: sourceEntity, to: entity)
            let unchanged = sourceName == name && sourceEntity.versionHash == entity.versionHash
            mapping.mappingType = unchanged ? .copyEntityMappingType : .transformEntityMappingType
            mappings.append(mapping)
        }
        for entity in source.entities.sorted(by: { ($0.name ?? "") < ($1.name ?? "") }) {
            guard let name = entity.name, !matchedSources.contains(name) else { continue }
            let mapping = NSEntityMapping()
            mapping.name = "Remove\(name)"
            mapping.mappingType = .removeEntityMappingType
            mapping.sourceEntityName = name
            mapping.sourceEntityVersionHash = entity.versionHash
            mappings.append(mapping)
        }
        model.entityMappings = mappings
        model.isInferred = true
        return model
    }

    /// `FUNCTION($manager, "fetchRequestForSourceEntityNamed:predicateString:", name, "TRUEPREDICATE")`.
    static func sourceExpression(entityName: String) -> NSExpression {
        NSExpression(forFunction: NSExpression(forVariable: NSMigrationManagerKey), selectorName: "fetchRequestForSourceEntityNamed:predicateString:",
                     arguments: [NSExpression(forConstantValue: entityName), NSExpression(forConstantValue: "TRUEPREDICATE")])
    }

    /// The element of `candidates` named by a renaming identifier, or else by the name.
    static func match<T>(_ renamingIdentifier: String?, _ name: String, in candidates: [String: T]) -> T? {
        if let renamingIdentifier, let found = candidates[renamingIdentifier] { return found }
        return candidates[name]
    }

    private func attributeMappings(from sourceEntity: NSEntityDescription, to entity: NSEntityDescription) throws -> [NSPropertyMapping] {
        var result: [NSPropertyMapping] = []
        for attribute in entity.attributesByName.values.sorted(by: { $0.name < $1.name }) where !attribute.isTransient {
            guard let sourceAttribute = Self.match(attribute.renamingIdentifier, attribute.name, in: sourceEntity.attributesByName),
                  !sourceAttribute.isTransient else {
                result.append(NSPropertyMapping(name: attribute.name, valueExpression: nil))
                continue
            }
            guard Self.converts(sourceAttribute.attributeType, to: attribute.attributeType) else {
                throw CoreDataError.make(.inferredMappingModel,
                    "Can't infer a mapping for \(entity.name ?? "?").\(attribute.name): its type changed from \(sourceAttribute.attributeType) to \(attribute.attributeType), which lightweight migration can't convert. Provide a mapping model.")
            }
            result.append(NSPropertyMapping(name: attribute.name, valueExpression: NSExpression(forKeyPath: sourceAttribute.name, operand: NSExpression(forVariable: NSMigrationSourceObjectKey))))
        }
        return result
    }

    private func relationshipMappings(from sourceEntity: NSEntityDescription, to entity: NSEntityDescription) -> [NSPropertyMapping] {
        entity.relationshipsByName.values.sorted(by: { $0.name < $1.name }).filter { !$0.isTransient }.map { relationship in
            guard let sourceRelationship = Self.match(relationship.renamingIdentifier, relationship.name, in: sourceEntity.relationshipsByName) else {
                return NSPropertyMapping(name: relationship.name, valueExpression: nil)
            }
            let instances = NSExpression(forKeyPath: sourceRelationship.name, operand: NSExpression(forVariable: NSMigrationSourceObjectKey))
            return NSPropertyMapping(name: relationship.name, valueExpression: NSExpression(
                forFunction: NSExpression(forVariable: NSMigrationManagerKey), selectorName: "destinationInstancesForSourceRelationshipNamed:sourceInstances:",
                arguments: [NSExpression(forConstantValue: sourceRelationship.name), instances]))
        }
    }

    /// Whether lightweight migration converts a stored value of one attribute type to another.
    static func converts(_ from: NSAttributeType, to: NSAttributeType) -> Bool {
        if from == to { return true }
        let scalar: Set<NSAttributeType> = [.integer16AttributeType, .integer32AttributeType, .integer64AttributeType, .decimalAttributeType,
                                            .doubleAttributeType, .floatAttributeType, .booleanAttributeType, .stringAttributeType]
        return scalar.contains(from) && scalar.contains(to)
    }
}

extension NSPropertyMapping {
    /// The source property this mapping copies unchanged, when its expression is a plain copy
    /// (`$source.<name>`, or the destination instances of `$source.<name>` for a relationship);
    /// nil otherwise.
    var copiedSourcePropertyName: String? {
        guard let expression = valueExpression else { return nil }
        if case .keyPath(let operand?, let path, let components) = expression.node, components.count == 1,
           case .variable(NSMigrationSourceObjectKey) = operand.node {
            return path
        }
        if case .function("destinationInstancesForSourceRelationshipNamed:sourceInstances:", let receiver?, let arguments) = expression.node,
           case .variable(NSMigrationManagerKey) = receiver.node, arguments.count == 2,
           case .constant(let name as String) = arguments[0].node,
           case .keyPath(let operand?, name, _) = arguments[1].node, case .variable(NSMigrationSourceObjectKey) = operand.node {
            return name
        }
        return nil
    }
}
