import Foundation

/// How a store made with one model version becomes a store of another: a list of entity mappings.
///
/// Load one that Xcode's mapping editor wrote (`NSMappingModel(contentsOf:)`, or found by source and
/// destination model with `NSMappingModel(from:forSourceModel:destinationModel:)`), or infer one
/// from the two models (`inferredMappingModel(forSourceModel:destinationModel:)`).
/// Unchecked Sendable: not locked: built first, then used by one migration at a time.
open class NSMappingModel: NSObject, @unchecked Sendable {
    /// The entity mappings, in the order a migration runs them.
    open var entityMappings: [NSEntityMapping]! = []

    /// The version name of the source model the file was made for ("Model v2"), when known.
    var sourceModelName: String?
    /// The version name of the destination model the file was made for, when known.
    var destinationModelName: String?
    /// True for a mapping inferred from the models (every expression a plain copy), which the
    /// SQLite store can run in place.
    var isInferred = false

    /// Creates an empty mapping model.
    public override init() {}

    /// Loads a mapping model from Xcode's `.xcmappingmodel` folder or its `xcmapping.xml`; nil (with
    /// the reason logged) when it can't be read.
    public convenience init?(contentsOf url: URL?) {
        guard let url else { return nil }
        do {
            let loaded = try XcodeMappingModelLoader.load(from: url)
            self.init()
            adopt(loaded)
        } catch {
            CoreDataLog.logger.error("NSMappingModel(contentsOf:) failed: \(error)")
            return nil
        }
    }

    /// Finds, among the mapping models in the bundles (the main bundle and all loaded bundles when
    /// nil), the one made for this source and destination model; nil when there is none.
    public convenience init?(from bundles: [Bundle]?, forSourceModel sourceModel: NSManagedObjectModel?, destinationModel: NSManagedObjectModel?) {
        guard let sourceModel, let destinationModel,
              let found = ModelFileSearch.mappingModel(in: ModelFileSearch.directories(of: bundles), from: sourceModel, to: destinationModel) else { return nil }
        self.init()
        adopt(found)
    }

    /// Takes over the mappings and model names of a mapping model read from a file.
    private func adopt(_ other: NSMappingModel) {
        entityMappings = other.entityMappings
        sourceModelName = other.sourceModelName
        destinationModelName = other.destinationModelName
    }

    /// The mapping Core Data infers between two model versions (lightweight migration): entities and
    /// properties are matched by name or renaming identifier; throws `NSInferredMappingModelError`
    /// (134190) for a change it can't infer.
    open class func inferredMappingModel(forSourceModel sourceModel: NSManagedObjectModel, destinationModel: NSManagedObjectModel) throws -> NSMappingModel {
        try MappingInference(source: sourceModel, destination: destinationModel).mappingModel()
    }

    /// The entity mappings by name.
    open var entityMappingsByName: [String: NSEntityMapping] {
        Dictionary((entityMappings ?? []).compactMap { mapping in mapping.name.map { ($0, mapping) } }, uniquingKeysWith: { first, _ in first })
    }

    /// The entity mappings, one per line.
    open override var description: String {
        "<NSMappingModel>\n" + (entityMappings ?? []).map { "  \($0)" }.joined(separator: "\n")
    }

    /// Whether this mapping was made for these two models: by version name when the file names them
    /// and the models were loaded from files, otherwise by the entities its mappings name.
    func matches(source: NSManagedObjectModel, destination: NSManagedObjectModel) -> Bool {
        if let name = sourceModelName, let version = source.versionName, name != version { return false }
        if let name = destinationModelName, let version = destination.versionName, name != version { return false }
        for mapping in entityMappings ?? [] {
            if let name = mapping.sourceEntityName {
                guard let entity = source.entitiesByName[name] else { return false }
                if let hash = mapping.sourceEntityVersionHash, hash != entity.versionHash { return false }
            }
            if let name = mapping.destinationEntityName {
                guard let entity = destination.entitiesByName[name] else { return false }
                if let hash = mapping.destinationEntityVersionHash, hash != entity.versionHash { return false }
            }
        }
        return true
    }

    /// Fills in the expressions Xcode marks "autogenerate" and the entities' version hashes, now
    /// that the models are known.
    ///
    /// - An attribute takes `$source.<name>` when the source entity has a property of that name.
    /// - A relationship takes the destination instances of the source instances it names: through the
    ///   entity mapping the file names (`destinationInstancesForEntityMappingNamed:sourceInstances:`),
    ///   or else through whichever mapping migrates the source relationship's destination
    ///   (`destinationInstancesForSourceRelationshipNamed:sourceInstances:`).
    func resolveGeneratedExpressions(source: NSManagedObjectModel, destination: NSManagedObjectModel) {
        let manager = NSExpression(forVariable: NSMigrationManagerKey)
        let sourceObject = NSExpression(forVariable: NSMigrationSourceObjectKey)
        for mapping in entityMappings ?? [] {
            let sourceEntity = mapping.sourceEntityName.flatMap { source.entitiesByName[$0] }
            if let sourceEntity { mapping.sourceEntityVersionHash = sourceEntity.versionHash }
            if let name = mapping.destinationEntityName, let entity = destination.entitiesByName[name] {
                mapping.destinationEntityVersionHash = entity.versionHash
            }
            for property in mapping.attributeMappings ?? [] where property.valueExpression == nil {
                guard property.generation != nil, let name = property.name, sourceEntity?.propertiesByName[name] != nil else { continue }
                property.valueExpression = NSExpression(forKeyPath: name, operand: sourceObject)
                property.generation = nil
            }
            for property in mapping.relationshipMappings ?? [] where property.valueExpression == nil {
                guard let generation = property.generation, let name = property.name else { continue }
                let hasSourceRelationship = sourceEntity?.relationshipsByName[name] != nil
                let instances: NSExpression? = generation.sourceKeyPath.flatMap { (keyPath: String) -> NSExpression? in
                    do {
                        return try NSExpression.parse(format: keyPath)
                    } catch {
                        CoreDataLog.logger.error("The source key path \(keyPath) of the relationship mapping \(name) can't be parsed: \(error)")
                        return nil
                    }
                }
                    ?? (hasSourceRelationship ? NSExpression(forKeyPath: name, operand: sourceObject) : nil)
                guard let instances else { continue }
                if let mappingName = generation.sourceMappingName {
                    property.valueExpression = NSExpression(forFunction: manager, selectorName: "destinationInstancesForEntityMappingNamed:sourceInstances:",
                                                            arguments: [NSExpression(forConstantValue: mappingName), instances])
                } else if hasSourceRelationship {
                    property.valueExpression = NSExpression(forFunction: manager, selectorName: "destinationInstancesForSourceRelationshipNamed:sourceInstances:",
                                                            arguments: [NSExpression(forConstantValue: name), instances])
                }
                property.generation = nil
            }
        }
    }
}
