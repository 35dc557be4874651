import Foundation

/// A schema: the entities a store holds, their configurations and the fetch request templates.
///
/// A model is mutable while it is being built; the first coordinator that uses it freezes it, after
/// which changing it traps, as Core Data raises.
open class NSManagedObjectModel: NSObject, NSCopying, @unchecked Sendable {
    private var storedEntities: [NSEntityDescription] = []
    private var configurationMembers: [String: [String]] = [:]
    private var templates: [String: NSFetchRequest<NSFetchRequestResult>] = [:]
    private let freezeLock = NSLock()
    private(set) var isFrozen = false
    private var frozenEntitiesByName: [String: NSEntityDescription] = [:]
    /// Whether any entity has a derived attribute (set when frozen): saves skip reading derived
    /// values back when none has.
    private(set) var hasDerivedAttributes = false
    /// Once frozen: the entity each class asked about represents (see `EntityClassRegistry`).
    let entitiesByClass = LockedValue<[ObjectIdentifier: NSEntityDescription]>([:])

    /// Identifiers of this model version (Xcode's "model version identifier").
    public var versionIdentifiers: Set<AnyHashable> = []
    /// Localized names of entities and properties (kept for API compatibility).
    public var localizationDictionary: [String: String]?

    /// The model file the model was loaded from, if any: an Xcode `contents` file or a compiled
    /// `.mom` (for finding its other versions and mapping models when a store needs migrating).
    var sourceURL: URL?

    /// The model's version name ("Model v2" for `Model.xcdatamodeld/Model v2.xcdatamodel` or
    /// `Model.momd/Model v2.mom`), when it was loaded from a model file.
    var versionName: String? {
        if let file = sourceURL, file.pathExtension == "mom" { return file.deletingPathExtension().lastPathComponent }
        guard let folder = sourceURL?.deletingLastPathComponent(), folder.pathExtension == "xcdatamodel" else { return nil }
        return folder.deletingPathExtension().lastPathComponent
    }

    /// The `.xcdatamodeld` or `.momd` bundle holding this version, when it was loaded from one.
    var versionBundleURL: URL? {
        if let file = sourceURL, file.pathExtension == "mom" {
            let bundle = file.deletingLastPathComponent()
            return bundle.pathExtension == "momd" ? bundle : nil
        }
        guard let bundle = sourceURL?.deletingLastPathComponent().deletingLastPathComponent(), bundle.pathExtension == "xcdatamodeld" else { return nil }
        return bundle
    }

    /// Creates an empty model.
    public override init() {}

    /// Loads a model from a compiled model (a `.momd` folder's current version or a `.mom` file, as
    /// Xcode builds them into an app) or from Xcode's source (a `.xcdatamodeld` bundle's current
    /// version, a `.xcdatamodel` folder or a `contents` file). Returns nil and logs the reason when
    /// it can't.
    public convenience init?(contentsOf url: URL) {
        do {
            let loaded = try Self.load(contentsOf: url)
            self.init()
            adopt(loaded)
        } catch {
            CoreDataLog.logger.error("NSManagedObjectModel(contentsOf:) failed: \(error)")
            return nil
        }
    }

    /// Loads a model as `init(contentsOf:)` does, throwing an error that names the file (and the
    /// line, for Xcode's XML) on failure.
    public static func load(contentsOf url: URL) throws -> NSManagedObjectModel {
        if CompiledModelLoader.isCompiledModel(url) { return try CompiledModelLoader.load(from: url) }
        return try XcodeModelLoader.load(from: url)
    }

    /// Loads a model from the bytes of a `contents` file; `file` only names it in errors. For the
    /// fuzzers and tests of this package, which feed the loader without files.
    package static func load(contentsXML data: Data, file: URL) throws -> NSManagedObjectModel {
        try XcodeModelLoader.load(xml: data, file: file)
    }

    /// Loads a model from the bytes of a compiled model (a `.mom`, or with `compressed` a store's
    /// `Z_MODELCACHE` content); `file` only names it in errors. For the fuzzers and tests.
    package static func load(compiledModel data: Data, compressed: Bool, file: URL) throws -> NSManagedObjectModel {
        try CompiledModelLoader.decode(Array(data), compressed: compressed, file: file)
    }

    /// Merges several models into one; nil when two of them have entities of the same name.
    public convenience init?(byMerging models: [NSManagedObjectModel]?) {
        let names = (models ?? []).flatMap { $0.storedEntities.compactMap(\.name) }
        guard Set(names).count == names.count else {
            CoreDataLog.logger.error("Models with entities of the same name can't be merged (\(names.sorted().joined(separator: ", "))).")
            return nil
        }
        self.init()
        for model in models ?? [] {
            // A copy: an entity belongs to one model, and the merged models stay as they were.
            let copy = model.copy() as! NSManagedObjectModel
            storedEntities += copy.storedEntities
            configurationMembers.merge(copy.configurationMembers) { $0 + $1 }
            templates.merge(copy.templates) { first, _ in first }
        }
        for entity in storedEntities { entity.managedObjectModel = self }
    }

    /// Merges several models into one when the result can open a store with this metadata
    /// (its entity version hashes match); nil otherwise.
    public convenience init?(byMerging models: [NSManagedObjectModel]?, forStoreMetadata metadata: [String: Any]) {
        self.init(byMerging: models)
        guard isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata) else { return nil }
    }

    private func adopt(_ other: NSManagedObjectModel) {
        storedEntities = other.storedEntities
        sourceURL = other.sourceURL
        configurationMembers = other.configurationMembers
        templates = other.templates
        versionIdentifiers = other.versionIdentifiers
        for entity in storedEntities { entity.managedObjectModel = self }
    }

    /// A model that can be changed, with copies of the entities (linked to each other as these
    /// are), the configurations, fetch request templates and version identifiers; a copy of a
    /// model in use is not frozen (`NSCopying`).
    open func copy(with zone: NSZone? = nil) -> Any {
        let copy = NSManagedObjectModel()
        let originals = storedEntities
        let copies = originals.map { $0.copy() as! NSEntityDescription }
        var copyOf: [ObjectIdentifier: NSEntityDescription] = [:]
        for (original, entity) in zip(originals, copies) { copyOf[ObjectIdentifier(original)] = entity }
        for (original, entity) in zip(originals, copies) where !original.subentities.isEmpty {
            entity.subentities = original.subentities.compactMap { copyOf[ObjectIdentifier($0)] }
        }
        let byName = Dictionary(copies.compactMap { entity in entity.name.map { ($0, entity) } }, uniquingKeysWith: { first, _ in first })
        for entity in copies {
            for case let relationship as NSRelationshipDescription in entity.declaredProperties {
                let destination = relationship.destinationEntity.flatMap { copyOf[ObjectIdentifier($0)] }
                    ?? relationship.destinationEntityName.flatMap { byName[$0] }
                guard let destination else { continue }
                let inverseName = relationship.inverseName
                relationship.destinationEntity = destination
                // An inverse the copies don't have is kept by name, not as the original's relationship.
                relationship.inverseRelationship = inverseName.flatMap { destination.relationshipsByName[$0] }
                relationship.inverseName = inverseName
            }
        }
        copy.entities = copies
        copy.configurationMembers = configurationMembers
        for (name, template) in templates {
            let request = template.copied()
            if let entityName = template.entity?.name, let entity = byName[entityName] { request.entity = entity }
            copy.templates[name] = request
        }
        copy.versionIdentifiers = versionIdentifiers
        copy.localizationDictionary = localizationDictionary
        copy.sourceURL = sourceURL
        return copy
    }

    // MARK: Entities

    /// The model's entities.
    public var entities: [NSEntityDescription] {
        get { storedEntities }
        set {
            coreDataPrecondition(!isFrozen, "Can't modify a model that a persistent store coordinator is using.")
            storedEntities = newValue
            for entity in newValue { entity.managedObjectModel = self }
        }
    }

    /// The model's entities by name.
    public var entitiesByName: [String: NSEntityDescription] {
        if isFrozen { return frozenEntitiesByName }
        return Dictionary(storedEntities.compactMap { entity in entity.name.map { ($0, entity) } }, uniquingKeysWith: { first, _ in first })
    }

    // MARK: Configurations

    /// The names of the model's configurations.
    public var configurations: [String] { configurationMembers.keys.sorted() }

    /// The entities of a configuration; all entities for nil or the default configuration "PF_DEFAULT_CONFIGURATION_NAME".
    public func entities(forConfigurationName configuration: String?) -> [NSEntityDescription]? {
        guard let configuration, configuration != "PF_DEFAULT_CONFIGURATION_NAME", configuration != "Default" else { return storedEntities }
        guard let names = configurationMembers[configuration] else { return nil }
        let byName = entitiesByName
        return names.compactMap { byName[$0] }
    }

    /// Sets the entities of a configuration.
    public func setEntities(_ entities: [NSEntityDescription], forConfigurationName configuration: String) {
        coreDataPrecondition(!isFrozen, "Can't modify a model that a persistent store coordinator is using.")
        configurationMembers[configuration] = entities.compactMap(\.name)
    }

    func setEntityNames(_ names: [String], forConfigurationName configuration: String) {
        configurationMembers[configuration] = names
    }

    // MARK: Fetch request templates

    /// The fetch request templates by name.
    public var fetchRequestTemplatesByName: [String: NSFetchRequest<NSFetchRequestResult>] { templates }

    /// The template with a name, or nil.
    public func fetchRequestTemplate(forName name: String) -> NSFetchRequest<NSFetchRequestResult>? {
        templates[name]
    }

    /// Stores a template under a name (nil removes it).
    public func setFetchRequestTemplate(_ fetchRequest: NSFetchRequest<NSFetchRequestResult>?, forName name: String) {
        templates[name] = fetchRequest
    }

    /// A copy of a template with its `$VARIABLES` replaced; nil for an unknown name.
    public func fetchRequestFromTemplate(withName name: String, substitutionVariables variables: [String: Any]) -> NSFetchRequest<NSFetchRequestResult>? {
        guard let template = templates[name] else { return nil }
        let request = template.copied()
        request.predicate = template.predicate?.withSubstitutionVariables(variables)
        return request
    }

    // MARK: Versioning

    /// Each entity's version hash by name.
    public var entityVersionHashesByName: [String: Data] {
        Dictionary(storedEntities.compactMap { entity in entity.name.map { ($0, entity.versionHash) } }, uniquingKeysWith: { first, _ in first })
    }

    /// A checksum of the entities' version hashes (base64 of a SHA-256), as stores record under
    /// `NSStoreModelVersionChecksumKey`.
    public var versionChecksum: String {
        VersionHasher.checksum(entityVersionHashesByName)
    }

    /// Whether a store with this metadata can be opened with this model and configuration, by Core
    /// Data's rule: the same entities with the same version hashes (names only for stores whose
    /// hashes predate the current recipe).
    public func isConfiguration(withName configuration: String?, compatibleWithStoreMetadata metadata: [String: Any]) -> Bool {
        freeze()
        guard let entities = self.entities(forConfigurationName: configuration) else { return false }
        return StoreModelMatching.isCompatible(entities, with: metadata)
    }

    // MARK: Freezing

    /// Links entities by name, numbers them and computes run-time caches. Idempotent.
    func freeze() {
        freezeLock.lock()
        defer { freezeLock.unlock() }
        guard !isFrozen else { return }
        linkByName()
        let byName = entitiesByName
        // Number entities as stores do: roots by name, each followed by its subentities by name.
        var number = 0
        func visit(_ entity: NSEntityDescription) {
            number += 1
            entity.entityNumber = number
            entity.freeze()
            for child in entity.subentities.sorted(by: { ($0.name ?? "") < ($1.name ?? "") }) { visit(child) }
        }
        for root in storedEntities.filter({ $0.superentity == nil }).sorted(by: { ($0.name ?? "") < ($1.name ?? "") }) {
            visit(root)
        }
        frozenEntitiesByName = byName
        hasDerivedAttributes = storedEntities.contains { !$0.derivedSlots.isEmpty }
        isFrozen = true
    }

    /// The first chain of superentity names (recorded while loading a model file, before linking)
    /// that leads an entity back to itself, such as `[A, B, A]`; nil when there is none. Linking
    /// such a model would make every walk up its hierarchy loop for ever.
    func inheritanceCycle() -> [String]? {
        let parents = Dictionary(storedEntities.compactMap { entity in entity.name.map { ($0, entity.superentityName) } }, uniquingKeysWith: { first, _ in first })
        for entity in storedEntities {
            guard let name = entity.name else { continue }
            var chain = [name]
            var next = parents[name] ?? nil
            while let parent = next {
                chain.append(parent)
                if parent == name { return chain }
                if chain.count > parents.count + 1 { break }
                next = parents[parent] ?? nil
            }
        }
        return nil
    }

    /// Resolves the names recorded while loading a model file into object links.
    func linkByName() {
        let byName = entitiesByName
        for entity in storedEntities {
            if let parentName = entity.superentityName, let parent = byName[parentName], entity.superentity == nil {
                parent.subentities = parent.subentities + [entity]
            }
        }
        for entity in storedEntities {
            for case let relationship as NSRelationshipDescription in entity.declaredProperties {
                if relationship.destinationEntity == nil, let destination = relationship.destinationEntityName {
                    relationship.destinationEntity = byName[destination]
                }
                if relationship.inverseRelationship == nil, let inverse = relationship.inverseName {
                    relationship.inverseRelationship = relationship.destinationEntity?.propertiesByName[inverse] as? NSRelationshipDescription
                }
                // Names outlive the weak links, so hashes stay the same once the model is gone.
                if let destination = relationship.destinationEntity?.name { relationship.destinationEntityName = destination }
                if let inverse = relationship.inverseRelationship?.name { relationship.inverseName = inverse }
            }
            for index in entity.indexes {
                for element in index.elements where element.property == nil {
                    element.property = element.propertyName.flatMap { entity.propertiesByName[$0] }
                }
            }
        }
    }

    /// The entity with a `Z_ENT` number, once frozen.
    func entity(number: Int) -> NSEntityDescription? {
        storedEntities.first { $0.entityNumber == number }
    }

    open override var description: String {
        "(NSManagedObjectModel) entities: \(storedEntities.compactMap(\.name).sorted().joined(separator: ", "))"
    }

    /// Whether another model has equal entities (see `NSEntityDescription.isEqual(_:)`), the same
    /// configurations and version identifiers: two loads of one model version are equal.
    open override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? NSManagedObjectModel else { return false }
        if self === other { return true }
        return entitiesByName == other.entitiesByName && versionIdentifiers == other.versionIdentifiers
            && configurations == other.configurations
            && configurations.allSatisfy { Set(entities(forConfigurationName: $0)?.compactMap(\.name) ?? []) == Set(other.entities(forConfigurationName: $0)?.compactMap(\.name) ?? []) }
    }

    /// A hash consistent with `isEqual(_:)`: the entity names'.
    open override var hash: Int { Set(entitiesByName.keys).hashValue }
}
