import Foundation

/// Builds a model from a compiled Core Data model: the keyed archive that Xcode's model compiler
/// writes as a `.mom` file and that SQLite stores keep in `Z_MODELCACHE`.
///
/// The archive holds the model's object graph (`NSManagedObjectModel` → `NSEntities` →
/// `NSProperties` …) with predicates and expressions archived as objects. Names are resolved and
/// linked as for a model read from Xcode's XML, so both give equal models with equal hashes.
struct CompiledModelDecoder {
    private let archive: KeyedArchive

    init(_ archive: KeyedArchive) {
        self.archive = archive
    }

    /// Decodes the model of a compiled archive.
    static func model(from bytes: [UInt8]) throws -> NSManagedObjectModel {
        try CompiledModelDecoder(KeyedArchive(bytes)).model()
    }

    private typealias FormatError = KeyedArchive.FormatError

    func model() throws -> NSManagedObjectModel {
        let root = try archive.rootObject()
        guard root.className == "NSManagedObjectModel" else { throw FormatError(description: "the root is a \(root.className), not a model") }
        let model = NSManagedObjectModel()
        var entities: [NSEntityDescription] = []
        var namesByIndex: [Int: String] = [:]
        for entry in try archive.entries("NSEntities", of: root) {
            guard let archived = try archive.object(entry.value), archived.className == "NSEntityDescription" else {
                throw FormatError(description: "an entity that is not an NSEntityDescription")
            }
            let entity = try self.entity(archived)
            namesByIndex[archived.index] = entity.name
            entities.append(entity)
        }
        entities.sort { VersionHasher.utf16Precedes($0.name ?? "", $1.name ?? "") }
        let identifiers = try archive.elements("NSVersionIdentifiers", of: root).compactMap { try archive.value($0) as? AnyHashable }
        model.versionIdentifiers = Set(identifiers)
        for entry in try archive.entries("NSConfigurations", of: root) {
            guard let name = try archive.string(entry.key) else { continue }
            let members = try archive.elements(entry.value).map { member -> String in
                guard let entity = try archive.object(member), let name = namesByIndex[entity.index] else {
                    throw FormatError(description: "configuration \(name) names an entity the model lacks")
                }
                return name
            }
            model.setEntityNames(members.sorted(), forConfigurationName: name)
        }
        model.entities = entities
        for entry in try archive.entries("NSFetchRequestTemplates", of: root) {
            guard let name = try archive.string(entry.key), let archived = try archive.object(entry.value) else { continue }
            model.setFetchRequestTemplate(try fetchRequest(archived, entityNames: namesByIndex), forName: name)
        }
        if let chain = model.inheritanceCycle() {
            throw FormatError(description: "entity \(chain[0]) inherits from itself (\(chain.joined(separator: " → ")))")
        }
        model.linkByName()
        for entity in model.entities {
            for case let relationship as NSRelationshipDescription in entity.declaredProperties where relationship.destinationEntity == nil {
                throw FormatError(description: "relationship \(entity.name ?? "?").\(relationship.name) has no destination entity")
            }
        }
        return model
    }

    // MARK: Entities and properties

    private func entity(_ archived: KeyedArchive.Object) throws -> NSEntityDescription {
        let entity = NSEntityDescription()
        guard let name = try archive.string("NSEntityName", of: archived), !name.isEmpty else { throw FormatError(description: "an entity without a name") }
        entity.name = name
        entity.managedObjectClassName = try archive.string("NSClassNameForEntity", of: archived) ?? "NSManagedObject"
        entity.isAbstract = try archive.bool("NSIsAbstract", of: archived)
        entity.versionHashModifier = try archive.string("NSVersionHashModifier", of: archived)
        entity.renamingIdentifier = Self.renaming(try archive.string("NSRenamingIdentifier", of: archived), name: name)
        entity.userInfo = try userInfo(archived)
        if let superentity = try archive.object("NSSuperentity", of: archived) {
            entity.superentityName = try archive.string("NSEntityName", of: superentity)
        }
        var properties: [NSPropertyDescription] = []
        for entry in try archive.entries("NSProperties", of: archived) {
            guard let property = try archive.object(entry.value) else { continue }
            properties.append(try self.property(property))
        }
        // Xcode's order: attributes, relationships, fetched properties, each by name.
        func rank(_ property: NSPropertyDescription) -> Int {
            property is NSFetchedPropertyDescription ? 2 : property is NSRelationshipDescription ? 1 : 0
        }
        entity.properties = properties.sorted { (rank($0), $0.name) < (rank($1), $1.name) }
        for tuple in try archive.elements("NSUniqueTuples", of: archived) {
            let constraint = try archive.elements(tuple).map { element -> String in
                // Ignored: an element that isn't a string is a property object, read next.
                if let name = try? archive.string(element) { return name }
                guard let property = try archive.object(element), let name = try archive.string("NSPropertyName", of: property) else {
                    throw FormatError(description: "a uniqueness constraint element of \(name) is not a property name")
                }
                return name
            }
            entity.uniquenessConstraints.append(constraint)
        }
        for element in try archive.elements("NSFetchIndexDescriptions", of: archived) {
            guard let index = try archive.object(element) else { continue }
            entity.indexes.append(try fetchIndex(index))
        }
        return entity
    }

    private func property(_ archived: KeyedArchive.Object) throws -> NSPropertyDescription {
        let property: NSPropertyDescription
        switch archived.className {
        case "NSAttributeDescription", "NSDerivedAttributeDescription":
            property = try attribute(archived)
        case "NSRelationshipDescription":
            let relationship = NSRelationshipDescription()
            relationship.minCount = try archive.integer("NSMinCount", of: archived)
            relationship.maxCount = try archive.integer("NSMaxCount", of: archived)
            relationship.isOrdered = try archive.bool("NSIsOrdered", of: archived)
            guard let rule = NSDeleteRule(rawValue: UInt(clamping: try archive.integer("NSDeleteRule", of: archived))) else {
                throw FormatError(description: "unknown delete rule")
            }
            relationship.deleteRule = rule
            if let destination = try archive.object("NSDestinationEntity", of: archived) {
                relationship.destinationEntityName = try archive.string("NSEntityName", of: destination)
            } else {
                relationship.destinationEntityName = try archive.string("_NSDestinationEntityName", of: archived)
            }
            if let inverse = try archive.object("NSInverseRelationship", of: archived) {
                relationship.inverseName = try archive.string("NSPropertyName", of: inverse)
            } else {
                relationship.inverseName = try archive.string("_NSInverseRelationshipName", of: archived)
            }
            property = relationship
        case "NSFetchedPropertyDescription":
            let fetched = NSFetchedPropertyDescription()
            if let request = try archive.object("NSFetchRequest", of: archived) {
                let template = try fetchRequest(request, entityNames: [:])
                if template.templateEntityName == nil { template.templateEntityName = try archive.string("_NSFetchRequestEntityName", of: archived) }
                fetched.fetchRequest = template
            }
            property = fetched
        default:
            throw FormatError(description: "unknown property class \(archived.className)")
        }
        guard let name = try archive.string("NSPropertyName", of: archived), !name.isEmpty else { throw FormatError(description: "a property without a name") }
        property.name = name
        property.isOptional = try archive.bool("NSIsOptional", of: archived)
        property.isTransient = try archive.bool("NSIsTransient", of: archived)
        property.isIndexed = try archive.bool("NSIsIndexed", of: archived)
        property.renamingIdentifier = Self.renaming(try archive.string("NSRenamingIdentifier", of: archived), name: name)
        property.versionHashModifier = try archive.string("NSVersionHashModifier", of: archived)
        property.userInfo = try userInfo(archived)
        return property
    }

    private func attribute(_ archived: KeyedArchive.Object) throws -> NSAttributeDescription {
        let attribute: NSAttributeDescription
        if archived.className == "NSDerivedAttributeDescription" {
            let derived = NSDerivedAttributeDescription()
            if let expression = try archive.object("NSDerivationExpression", of: archived) {
                derived.derivationExpression = Self.derivationKeyPath(try self.expression(expression, depth: 0))
            }
            attribute = derived
        } else {
            attribute = NSAttributeDescription()
        }
        let rawType = try archive.integer("NSAttributeType", of: archived)
        guard let type = NSAttributeType(rawValue: UInt(clamping: rawType)) else { throw FormatError(description: "unknown attribute type \(rawType)") }
        attribute.attributeType = type
        attribute.valueTransformerName = try archive.string("NSValueTransformerName", of: archived)
        if type == .transformableAttributeType, let className = try archive.string("NSAttributeValueClassName", of: archived) {
            attribute.attributeValueClassName = className
        }
        let flags = try archive.integer("NSFlagsKey", of: archived)
        attribute.allowsExternalBinaryDataStorage = flags & 1 != 0
        attribute.preservesValueInHistoryOnDeletion = try archive.bool("NSPreservesValueInHistoryOnDeletion", of: archived) || flags & 4 != 0
        if let value = try archive.value(archived.fields["NSDefaultValue"]) {
            attribute.defaultValue = Self.typedDefault(value, for: type)
        }
        return attribute
    }

    /// A default value in the Swift type the attribute's values have (archives hold `NSNumber`s).
    private static func typedDefault(_ value: Any, for type: NSAttributeType) -> Any {
        guard let number = value as? NSNumber else { return value }
        return AttributeValueCoding.convert(number, for: type) ?? value
    }

    /// Derivations archived as `count:(path)` and `sum:(path.x)` read back as the key paths
    /// Xcode's editor shows (`path.@count`, `path.@sum.x`), which is how derivations are stored.
    private static func derivationKeyPath(_ expression: NSExpression) -> NSExpression {
        guard case .function(let name, nil, let arguments) = expression.node, arguments.count == 1,
              case .keyPath(nil, let path, _) = arguments[0].node else { return expression }
        switch name {
        case "count:": return NSExpression(forKeyPath: path + ".@count")
        case "sum:":
            guard let dot = path.lastIndex(of: ".") else { return expression }
            return NSExpression(forKeyPath: path[..<dot] + ".@sum" + path[dot...])
        default: return expression
        }
    }

    /// The compiler records each name as its own renaming identifier; only a different one (an
    /// element ID set in Xcode) is a renaming identifier as the XML has it.
    private static func renaming(_ identifier: String?, name: String) -> String? {
        identifier == name ? nil : identifier
    }

    private func userInfo(_ archived: KeyedArchive.Object) throws -> [AnyHashable: Any]? {
        guard archived.has("NSUserInfo") else { return nil }
        var info: [AnyHashable: Any] = [:]
        for entry in try archive.entries("NSUserInfo", of: archived) {
            guard let key = try archive.value(entry.key) as? AnyHashable else { continue }
            info[key] = try archive.value(entry.value) ?? NSNull()
        }
        return info
    }

    private func fetchIndex(_ archived: KeyedArchive.Object) throws -> NSFetchIndexDescription {
        var elements: [NSFetchIndexElementDescription] = []
        for raw in try archive.elements("NSIndexElements", of: archived) {
            guard let element = try archive.object(raw) else { continue }
            // Ignored: a name that isn't a string is looked for in NSProperty next.
            var propertyName = try? archive.string("NSPropertyName", of: element)
            if propertyName == nil, let property = try archive.object("NSProperty", of: element) {
                propertyName = try archive.string("NSPropertyName", of: property)
            }
            let type = try archive.integer("NSFetchIndexElementType", of: element)
            elements.append(NSFetchIndexElementDescription(propertyName: propertyName ?? "", ascending: try archive.bool("NSAscending", of: element),
                                                           collationType: type == 1 ? .rTree : .binary))
        }
        let index = NSFetchIndexDescription(name: try archive.string("NSIndexName", of: archived) ?? "", elements: elements)
        if let predicate = try archive.object("NSPartialIndexPredicate", of: archived) {
            index.partialIndexPredicate = try self.predicate(predicate, depth: 0)
        }
        return index
    }

    // MARK: Fetch requests, predicates, expressions

    /// `NSFetchRequestFlags` bits as Xcode's compiler sets them.
    private enum FetchFlag {
        static let distinct = 1
        static let subentities = 2
        static let propertyValues = 4
        static let faults = 8
        static let pendingChanges = 16
    }

    private func fetchRequest(_ archived: KeyedArchive.Object, entityNames: [Int: String]) throws -> NSFetchRequest<NSFetchRequestResult> {
        let request = NSFetchRequest<NSFetchRequestResult>()
        if let entity = try archive.object("NSEntity", of: archived) {
            let name = try archive.string("NSEntityName", of: entity)
            request.templateEntityName = entityNames[entity.index] ?? name
        }
        if let predicate = try archive.object("NSPredicate", of: archived) {
            request.predicate = try self.predicate(predicate, depth: 0)
        }
        request.resultType = NSFetchRequestResultType(rawValue: UInt(clamping: try archive.integer("NSResultType", of: archived)))
        request.fetchLimit = max(0, try archive.integer("NSFetchLimit", of: archived))
        request.fetchOffset = max(0, try archive.integer("NSFetchOffset", of: archived))
        request.fetchBatchSize = max(0, try archive.integer("NSBatchSize", of: archived))
        if try archive.bool("NSHasFetchRequestFlags", of: archived) {
            let flags = try archive.integer("NSFetchRequestFlags", of: archived)
            request.returnsDistinctResults = flags & FetchFlag.distinct != 0
            request.includesSubentities = flags & FetchFlag.subentities != 0
            request.includesPropertyValues = flags & FetchFlag.propertyValues != 0
            request.returnsObjectsAsFaults = flags & FetchFlag.faults != 0
            request.includesPendingChanges = flags & FetchFlag.pendingChanges != 0
        }
        var sorts: [NSSortDescriptor] = []
        for raw in try archive.elements("NSSortDescriptors", of: archived) {
            guard let sort = try archive.object(raw) else { continue }
            let selector = try archive.string("NSSelector", of: sort)
            sorts.append(NSSortDescriptor(key: try archive.string("NSKey", of: sort), ascending: try archive.bool("NSAscending", of: sort),
                                          selector: selector.map { Selector($0) }))
        }
        if !sorts.isEmpty { request.sortDescriptors = sorts }
        return request
    }

    private static let maximumDepth = 200

    private func predicate(_ archived: KeyedArchive.Object, depth: Int) throws -> NSPredicate {
        guard depth < Self.maximumDepth else { throw FormatError(description: "a predicate nested too deeply") }
        switch archived.className {
        case "NSTruePredicate": return NSPredicate(value: true)
        case "NSFalsePredicate": return NSPredicate(value: false)
        case "NSCompoundPredicate":
            let subpredicates = try archive.elements("NSSubpredicates", of: archived).map { raw -> NSPredicate in
                guard let sub = try archive.object(raw) else { throw FormatError(description: "a null subpredicate") }
                return try predicate(sub, depth: depth + 1)
            }
            guard let type = NSCompoundPredicate.LogicalType(rawValue: UInt(clamping: try archive.integer("NSCompoundPredicateType", of: archived))) else {
                throw FormatError(description: "unknown compound predicate type")
            }
            return NSCompoundPredicate(type: type, subpredicates: subpredicates)
        case "NSComparisonPredicate":
            guard let left = try archive.object("NSLeftExpression", of: archived), let right = try archive.object("NSRightExpression", of: archived),
                  let comparison = try archive.object("NSPredicateOperator", of: archived) else {
                throw FormatError(description: "a comparison without both sides and an operator")
            }
            var operatorType = try archive.integer("NSOperatorType", of: comparison)
            if operatorType == 4, try archive.bool("NSNegate", of: comparison) { operatorType = 5 }
            guard let type = NSComparisonPredicate.Operator(rawValue: UInt(clamping: operatorType)),
                  let modifier = NSComparisonPredicate.Modifier(rawValue: UInt(clamping: try archive.integer("NSModifier", of: comparison))) else {
                throw FormatError(description: "unknown comparison operator \(operatorType)")
            }
            let options = NSComparisonPredicate.Options(rawValue: UInt(clamping: try archive.integer("NSOptions", of: comparison)))
            return NSComparisonPredicate(leftExpression: try expression(left, depth: depth + 1), rightExpression: try expression(right, depth: depth + 1),
                                         modifier: modifier, type: type, options: options)
        default:
            throw FormatError(description: "unsupported predicate class \(archived.className)")
        }
    }

    private func expression(_ archived: KeyedArchive.Object, depth: Int) throws -> NSExpression {
        guard depth < Self.maximumDepth else { throw FormatError(description: "an expression nested too deeply") }
        func arguments() throws -> [NSExpression] {
            try archive.elements("NSArguments", of: archived).map { raw in
                guard let argument = try archive.object(raw) else { return NSExpression(forConstantValue: nil) }
                return try expression(argument, depth: depth + 1)
            }
        }
        switch archived.className {
        case "NSSelfExpression":
            return NSExpression.expressionForEvaluatedObject()
        case "NSConstantValueExpression":
            return NSExpression(forConstantValue: try archive.value(archived.fields["NSConstantValue"]))
        case "NSVariableExpression":
            return NSExpression(forVariable: try archive.string("NSVariable", of: archived) ?? "")
        case "NSKeyPathSpecifierExpression":
            return NSExpression(forKeyPath: try archive.string("NSKeyPath", of: archived) ?? "")
        case "NSKeyPathExpression":
            let parts = try arguments()
            guard parts.count == 1, case .keyPath(nil, let path, _) = parts[0].node,
                  let operand = try archive.object("NSOperand", of: archived) else {
                throw FormatError(description: "a key path expression without one key path")
            }
            return NSExpression(forKeyPath: path, operand: try expression(operand, depth: depth + 1))
        case "NSFunctionExpression":
            guard let name = try archive.string("NSSelectorName", of: archived) else { throw FormatError(description: "a function without a name") }
            let operand = try archive.object("NSOperand", of: archived)
            let isBuiltin = operand == nil || (operand?.className == "NSConstantValueExpression" && !(operand?.has("NSConstantValue") ?? false))
            if isBuiltin { return NSExpression(forFunction: name, arguments: try arguments()) }
            return NSExpression(forFunction: try expression(operand!, depth: depth + 1), selectorName: name, arguments: try arguments())
        case "NSAggregateExpression":
            let elements = try archive.elements("NSCollection", of: archived).map { raw -> NSExpression in
                guard let element = try archive.object(raw) else { return NSExpression(forConstantValue: nil) }
                return try expression(element, depth: depth + 1)
            }
            return NSExpression(forAggregate: elements)
        default:
            throw FormatError(description: "unsupported expression class \(archived.className)")
        }
    }
}
