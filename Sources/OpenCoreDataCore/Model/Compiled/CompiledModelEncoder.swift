import Foundation

/// Writes a model as a compiled Core Data model: the keyed archive of a `.mom` file, also what a
/// SQLite store keeps in `Z_MODELCACHE`.
///
/// The archive has the classes, keys and key-presence rules of the archives Xcode's model compiler
/// writes, so that it decodes to the same tree (the tests compare them). Where Xcode's samples
/// show no encoding (validation rules, external binary storage, history preservation), nothing is
/// written and those settings are not kept: `docs/Differences.md` lists them.
struct CompiledModelEncoder {
    /// The two places compiled models are kept, whose archives differ in a few collection classes.
    enum Flavor {
        /// A `.mom` file, as Xcode's model compiler writes it.
        case modelFile
        /// A SQLite store's `Z_MODELCACHE`, as Core Data writes it at run time: entities in a
        /// known-keys dictionary, no empty subentity dictionaries, mutable identifier sets.
        case storeCache
    }

    private let flavor: Flavor
    private var writer = KeyedArchiveWriter()
    private var entityUIDs: [ObjectIdentifier: UInt64] = [:]
    private var propertyUIDs: [ObjectIdentifier: UInt64] = [:]
    private var modelUID: UInt64 = 0
    private var selfExpression: PropertyListValue?
    private var emptyUserInfo: PropertyListValue?

    /// Why a model can't be archived: an expression kind a model file can't hold.
    struct UnsupportedExpression: Error, CustomStringConvertible {
        let description: String
    }

    private init(flavor: Flavor) {
        self.flavor = flavor
    }

    /// The archive of a model.
    static func archive(_ model: NSManagedObjectModel, as flavor: Flavor = .modelFile) throws -> [UInt8] {
        var encoder = CompiledModelEncoder(flavor: flavor)
        return try encoder.encode(model)
    }

    private mutating func encode(_ model: NSManagedObjectModel) throws -> [UInt8] {
        model.freeze()
        modelUID = writer.reserve()
        let entities = model.entities.sorted { VersionHasher.utf16Precedes($0.name ?? "", $1.name ?? "") }
        // Reserve every entity and property first: they refer to each other in any order.
        for entity in entities {
            entityUIDs[ObjectIdentifier(entity)] = writer.reserve()
            for property in entity.declaredProperties { propertyUIDs[ObjectIdentifier(property)] = writer.reserve() }
        }
        let entries = entities.map { ($0.name ?? "", PropertyListValue.uid(entityUIDs[ObjectIdentifier($0)]!)) }
        let entitiesByName = flavor == .modelFile ? writer.dictionary(entries, className: "NSMutableDictionary") : knownKeysDictionary(entries)
        for entity in entities { try encodeEntity(entity) }
        var fields: [(String, PropertyListValue)] = [("NSEntities", entitiesByName)]
        let templates = model.fetchRequestTemplatesByName.sorted { $0.key < $1.key }
        fields.append(("NSFetchRequestTemplates", templates.isEmpty ? KeyedArchiveWriter.null
            : writer.dictionary(try templates.map { ($0.key, try fetchRequest($0.value, entity: model.entitiesByName[$0.value.entityName ?? $0.value.templateEntityName ?? ""])) }, className: "NSMutableDictionary")))
        let configurations = model.configurations
        if !configurations.isEmpty {
            fields.append(("NSConfigurations", writer.dictionary(configurations.map { name in
                let members = (model.entities(forConfigurationName: name) ?? []).compactMap { entityUIDs[ObjectIdentifier($0)] }.map(PropertyListValue.uid)
                return (name, writer.array(members, className: "NSSet"))
            }, className: "NSMutableDictionary")))
        }
        let identifiers = model.versionIdentifiers.compactMap { $0.base as? String }.sorted()
        fields.append(("NSVersionIdentifiers", writer.array(identifiers.map { writer.string($0) }, className: flavor == .modelFile ? "NSSet" : "NSMutableSet")))
        writer.fill(modelUID, classChain: ["NSManagedObjectModel", "NSObject"], fields: fields)
        return writer.finish(root: .uid(modelUID))
    }

    /// Core Data's known-keys dictionary: keys in a mapping object, values in slot order.
    private mutating func knownKeysDictionary(_ entries: [(String, PropertyListValue)]) -> PropertyListValue {
        let keys = writer.array(entries.map { writer.string($0.0) })
        let mapping = writer.object(["NSKnownKeysMappingStrategy1", "NSKnownKeysMappingStrategy", "NSObject"], [
            ("keys", keys), ("length", .integer(Int64(entries.count))), ("version", .integer(1)),
        ])
        return writer.object(["NSKnownKeysDictionary1", "NSKnownKeysDictionary", "NSMutableDictionary", "NSDictionary", "NSObject"], [
            ("searchMapping", mapping), ("values", writer.array(entries.map(\.1))),
            ("emptyToken", writer.string("__empty_slot_token_4c24_98dc_ac1e_b773__")), ("version", .integer(1)),
        ])
    }

    // MARK: Entities

    private mutating func encodeEntity(_ entity: NSEntityDescription) throws {
        let uid = entityUIDs[ObjectIdentifier(entity)]!
        let name = entity.name ?? ""
        let properties = entity.declaredProperties.sorted { $0.name < $1.name }
        for property in properties { try encodeProperty(property, of: uid) }
        var fields: [(String, PropertyListValue)] = [
            ("NSEntityName", writer.string(name)),
            ("NSClassNameForEntity", writer.string(entity.managedObjectClassName ?? "NSManagedObject")),
            ("NSRenamingIdentifier", flavor == .modelFile ? writer.string(entity.renamingIdentifier ?? name)
                : writer.object(KeyedArchiveWriter.chain("NSMutableString"), [("NS.string", .string(entity.renamingIdentifier ?? name))])),
            ("NSVersionHashModifier", writer.string(entity.versionHashModifier)),
            ("NSManagedObjectModel", .uid(modelUID)),
            ("NSSuperentity", entity.superentity.flatMap { entityUIDs[ObjectIdentifier($0)] }.map(PropertyListValue.uid) ?? KeyedArchiveWriter.null),
            ("NSSubentities", flavor == .storeCache && entity.subentities.isEmpty ? KeyedArchiveWriter.null
                : writer.dictionary(entity.subentities.sorted { ($0.name ?? "") < ($1.name ?? "") }.map { ($0.name ?? "", .uid(entityUIDs[ObjectIdentifier($0)]!)) },
                                    className: "NSMutableDictionary")),
            ("NSProperties", writer.dictionary(properties.map { ($0.name, .uid(propertyUIDs[ObjectIdentifier($0)]!)) }, className: "NSMutableDictionary")),
            ("NSUserInfo", entityUserInfo(entity.userInfo)),
        ]
        if entity.isAbstract { fields.append(("NSIsAbstract", .bool(true))) }
        let constraints = entity.uniquenessConstraints.map { constraint in
            constraint.map { element in (element as? NSPropertyDescription)?.name ?? (element as? String) ?? "\(element)" }
        }
        if !constraints.isEmpty {
            fields.append(("NSUniqueTuples", writer.array(constraints.map { names in writer.array(names.map { writer.string($0) }, className: "NSMutableArray") },
                                                          className: "NSMutableArray")))
        }
        if !entity.indexes.isEmpty {
            let indexes = try entity.indexes.map { try fetchIndex($0, entity: uid) }
            fields.append(("NSFetchIndexDescriptions", writer.array(indexes, className: "NSMutableArray")))
            fields.append(("NSCompoundIndexes", writer.array([], className: "NSMutableArray")))
        }
        writer.fill(uid, classChain: ["NSEntityDescription", "NSObject"], fields: fields)
    }

    /// Entities always carry user info; an empty one is shared, as Xcode's compiler does.
    private mutating func entityUserInfo(_ info: [AnyHashable: Any]?) -> PropertyListValue {
        if let info, !info.isEmpty { return userInfo(info) }
        if let emptyUserInfo { return emptyUserInfo }
        let empty = writer.dictionary([])
        emptyUserInfo = empty
        return empty
    }

    private mutating func userInfo(_ info: [AnyHashable: Any]) -> PropertyListValue {
        let entries = info.compactMap { entry in (entry.key.base as? String).map { ($0, entry.value) } }.sorted { $0.0 < $1.0 }
        return writer.dictionary(entries.map { ($0.0, writer.value($0.1)) })
    }

    private mutating func fetchIndex(_ index: NSFetchIndexDescription, entity: UInt64) throws -> PropertyListValue {
        let uid = writer.reserve()
        let elements = index.elements.map { element in
            writer.object(["NSFetchIndexElementDescription", "NSObject"], [
                ("NSPropertyName", writer.string(element.propertyName ?? element.property?.name)),
                ("NSFetchIndexElementType", .integer(element.collationType == .rTree ? 1 : 0)),
                ("NSAscending", .bool(element.isAscending)),
                ("NSFetchIndexDescription", .uid(uid)),
            ])
        }
        writer.fill(uid, classChain: ["NSFetchIndexDescription", "NSObject"], fields: [
            ("NSIndexName", writer.string(index.name)),
            ("NSIndexElements", writer.array(elements)),
            ("NSEntity", .uid(entity)),
            ("NSPartialIndexPredicate", try index.partialIndexPredicate.map { try predicate($0) } ?? KeyedArchiveWriter.null),
        ])
        return .uid(uid)
    }

    // MARK: Properties

    /// `_P`, the packed flags Xcode's compiler writes beside the explicit keys.
    private static func packedFlags(_ property: NSPropertyDescription, readOnly: Bool) -> Int64 {
        var flags: Int64 = 0xB1
        if property.isOptional { flags |= 0x02 }
        if readOnly { flags |= 0x04 }
        if property.isTransient { flags |= 0x08 }
        if property.userInfo?.isEmpty ?? true { flags |= 0x40 }
        if (property as? NSRelationshipDescription)?.isOrdered == true { flags |= 0x400 }
        return flags
    }

    private mutating func encodeProperty(_ property: NSPropertyDescription, of entity: UInt64) throws {
        let uid = propertyUIDs[ObjectIdentifier(property)]!
        let readOnly = property is NSDerivedAttributeDescription || property is NSFetchedPropertyDescription
        var fields: [(String, PropertyListValue)] = [
            ("NSPropertyName", writer.string(property.name)),
            ("NSRenamingIdentifier", writer.string(property.renamingIdentifier ?? property.name)),
            ("NSEntity", .uid(entity)),
            ("_P", .integer(Self.packedFlags(property, readOnly: readOnly))),
        ]
        if property.isOptional { fields.append(("NSIsOptional", .bool(true))) }
        if property.isTransient || property is NSFetchedPropertyDescription { fields.append(("NSIsTransient", .bool(true))) }
        if readOnly { fields.append(("NSIsReadOnly", .bool(true))) }
        if property.isIndexed { fields.append(("NSIsIndexed", .bool(true))) }
        if let info = property.userInfo, !info.isEmpty { fields.append(("NSUserInfo", userInfo(info))) }
        if let modifier = property.versionHashModifier { fields.append(("NSVersionHashModifier", writer.string(modifier))) }
        let classChain: [String]
        switch property {
        case let attribute as NSAttributeDescription:
            fields += [
                ("NSAttributeType", .integer(Int64(attribute.attributeType.rawValue))),
                ("NSAttributeValueClassName", writer.string(Self.valueClassName(attribute))),
                ("NSDefaultValue", writer.value(attribute.defaultValue)),
                ("NSValueTransformerName", writer.string(attribute.valueTransformerName)),
                ("NSFlagsKey", .integer(0)),
            ]
            if let derived = attribute as? NSDerivedAttributeDescription {
                fields.append(("NSDerivationExpression", try derived.derivationExpression.map { try derivation($0) } ?? KeyedArchiveWriter.null))
                fields.append(("NSFilteringPredicate", KeyedArchiveWriter.null))
                classChain = ["NSDerivedAttributeDescription", "NSAttributeDescription", "NSPropertyDescription", "NSObject"]
            } else {
                classChain = ["NSAttributeDescription", "NSPropertyDescription", "NSObject"]
            }
        case let relationship as NSRelationshipDescription:
            fields += [
                ("NSDestinationEntity", relationship.destinationEntity.flatMap { entityUIDs[ObjectIdentifier($0)] }.map(PropertyListValue.uid) ?? KeyedArchiveWriter.null),
                ("_NSDestinationEntityName", writer.string(relationship.destinationName)),
                ("NSInverseRelationship", relationship.inverseRelationship.flatMap { propertyUIDs[ObjectIdentifier($0)] }.map(PropertyListValue.uid) ?? KeyedArchiveWriter.null),
                ("_NSInverseRelationshipName", writer.string(relationship.inverseRelationship?.name ?? relationship.inverseName)),
                ("NSMinCount", .integer(Int64(relationship.minCount))),
                ("NSMaxCount", .integer(Int64(relationship.maxCount))),
                ("NSDeleteRule", .integer(Int64(relationship.deleteRule.rawValue))),
            ]
            if relationship.isOrdered { fields.append(("NSIsOrdered", .bool(true))) }
            classChain = ["NSRelationshipDescription", "NSPropertyDescription", "NSObject"]
        case let fetched as NSFetchedPropertyDescription:
            let request = fetched.fetchRequest
            let target = request.flatMap { $0.entityName ?? $0.templateEntityName }
            let targetEntity = target.flatMap { fetched.entity?.managedObjectModel?.entitiesByName[$0] }
            fields.append(("NSFetchRequest", try request.map { try fetchRequest($0, entity: targetEntity) } ?? KeyedArchiveWriter.null))
            fields.append(("_NSFetchRequestEntityName", writer.string(target)))
            classChain = ["NSFetchedPropertyDescription", "NSPropertyDescription", "NSObject"]
        default:
            classChain = ["NSPropertyDescription", "NSObject"]
        }
        writer.fill(uid, classChain: classChain, fields: fields)
    }

    /// The class name Core Data records for an attribute's values: a transformable's custom
    /// class (none when it has none), else the type's.
    private static func valueClassName(_ attribute: NSAttributeDescription) -> String? {
        attribute.attributeType == .transformableAttributeType ? attribute.customValueClassName : attribute.attributeType.valueClassName
    }

    // MARK: Fetch requests, predicates, expressions

    private mutating func fetchRequest(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription?) throws -> PropertyListValue {
        var flags: Int64 = 0
        if request.returnsDistinctResults { flags |= 0x01 }
        if request.includesSubentities { flags |= 0x02 }
        if request.includesPropertyValues { flags |= 0x04 }
        if request.returnsObjectsAsFaults { flags |= 0x08 }
        if request.includesPendingChanges { flags |= 0x10 }
        let sorts = (request.sortDescriptors ?? []).map { sort in
            writer.object(["NSSortDescriptor", "NSObject"], [
                ("NSKey", writer.string(sort.key)), ("NSAscending", .bool(sort.ascending)),
                ("NSSelector", writer.string(sort.selector.map { NSStringFromSelector($0) } ?? "compare:")),
            ])
        }
        return writer.object(["NSFetchRequest", "NSPersistentStoreRequest", "NSObject"], [
            ("NSEntity", entity.flatMap { entityUIDs[ObjectIdentifier($0)] }.map(PropertyListValue.uid) ?? KeyedArchiveWriter.null),
            ("NSPredicate", try request.predicate.map { try predicate($0) } ?? KeyedArchiveWriter.null),
            ("NSSortDescriptors", sorts.isEmpty ? KeyedArchiveWriter.null : writer.array(sorts)),
            ("NSValuesToFetch", KeyedArchiveWriter.null),
            ("NSValuesToGroupBy", KeyedArchiveWriter.null),
            ("NSHavingPredicate", KeyedArchiveWriter.null),
            ("NSRelationshipKeyPathsForPrefetching", KeyedArchiveWriter.null),
            ("NSFetchLimit", .integer(Int64(request.fetchLimit))),
            ("NSFetchOffset", .integer(Int64(request.fetchOffset))),
            ("NSBatchSize", .integer(Int64(request.fetchBatchSize))),
            ("NSAllocationType", .integer(0)),
            ("NSResultType", .integer(Int64(request.resultType.rawValue))),
            ("NSFetchRequestFlags", .integer(flags)),
            ("NSHasFetchRequestFlags", .bool(true)),
        ])
    }

    private mutating func predicate(_ predicate: NSPredicate) throws -> PropertyListValue {
        if let compound = predicate as? NSCompoundPredicate {
            let subpredicates = try compound.subpredicates.compactMap { $0 as? NSPredicate }.map { try self.predicate($0) }
            return writer.object(["NSCompoundPredicate", "NSPredicate", "NSObject"], [
                ("NSCompoundPredicateType", .integer(Int64(compound.compoundPredicateType.rawValue))),
                ("NSSubpredicates", writer.array(subpredicates)),
            ])
        }
        if let comparison = predicate as? NSComparisonPredicate {
            let left = try expression(comparison.leftExpression)
            let right = try expression(comparison.rightExpression)
            let type = comparison.predicateOperatorType
            let operatorClass = type == .equalTo || type == .notEqualTo ? "NSEqualityPredicateOperator" : Self.operatorClass(type)
            let comparisonOperator = writer.object([operatorClass, "NSPredicateOperator", "NSObject"], [
                ("NSOperatorType", .integer(Int64(type == .notEqualTo ? NSComparisonPredicate.Operator.equalTo.rawValue : type.rawValue))),
                ("NSModifier", .integer(Int64(comparison.comparisonPredicateModifier.rawValue))),
                ("NSOptions", .integer(Int64(comparison.options.rawValue))),
                ("NSNegate", .bool(type == .notEqualTo)),
            ])
            return writer.object(["NSComparisonPredicate", "NSPredicate", "NSObject"], [
                ("NSLeftExpression", left), ("NSRightExpression", right), ("NSPredicateOperator", comparisonOperator),
            ])
        }
        switch predicate.predicateFormat {
        case "TRUEPREDICATE": return writer.object(["NSTruePredicate", "NSPredicate", "NSObject"], [])
        case "FALSEPREDICATE": return writer.object(["NSFalsePredicate", "NSPredicate", "NSObject"], [])
        default: throw UnsupportedExpression(description: "the predicate \(predicate.predicateFormat) can't be stored in a model file")
        }
    }

    private static func operatorClass(_ type: NSComparisonPredicate.Operator) -> String {
        switch type {
        case .lessThan, .lessThanOrEqualTo, .greaterThan, .greaterThanOrEqualTo: "NSNumericPredicateOperator"
        case .matches, .like, .beginsWith, .endsWith: "NSStringPredicateOperator"
        case .in, .contains: "NSInPredicateOperator"
        case .between: "NSBetweenPredicateOperator"
        default: "NSPredicateOperator"
        }
    }

    /// A derivation as the compiler archives it: `x.@count` as the function `count:(x)`.
    private mutating func derivation(_ expression: NSExpression) throws -> PropertyListValue {
        if case .keyPath(nil, let path, _) = expression.node, path.hasSuffix(".@count") {
            let keyPath = NSExpression(forKeyPath: String(path.dropLast(7)))
            return function("count:", arguments: [try self.expression(keyPath)], argumentsClass: "NSArray")
        }
        return try self.expression(expression)
    }

    private mutating func function(_ name: String, arguments: [PropertyListValue], argumentsClass: String = "NSMutableArray") -> PropertyListValue {
        let operand = writer.object(["NSConstantValueExpression", "NSExpression", "NSObject"], [
            ("NSExpressionType", .integer(0)), ("NSConstantValueClassName", writer.string("_NSPredicateUtilities")),
        ])
        return writer.object(["NSFunctionExpression", "NSExpression", "NSObject"], [
            ("NSExpressionType", .integer(4)), ("NSOperand", operand), ("NSSelectorName", writer.string(name)),
            ("NSArguments", writer.array(arguments, className: argumentsClass)),
        ])
    }

    private mutating func evaluatedObject() -> PropertyListValue {
        if let selfExpression { return selfExpression }
        let made = writer.object(["NSSelfExpression", "NSExpression", "NSObject"], [("NSExpressionType", .integer(1))])
        selfExpression = made
        return made
    }

    private mutating func expression(_ expression: NSExpression) throws -> PropertyListValue {
        switch expression.node {
        case .constant(let value):
            return writer.object(["NSConstantValueExpression", "NSExpression", "NSObject"], [
                ("NSExpressionType", .integer(0)), ("NSConstantValue", writer.value(value)),
            ])
        case .evaluatedObject:
            return evaluatedObject()
        case .variable(let name):
            return writer.object(["NSVariableExpression", "NSExpression", "NSObject"], [("NSExpressionType", .integer(2)), ("NSVariable", writer.string(name))])
        case .keyPath(let operand, let path, _):
            let specifier = writer.object(["NSKeyPathSpecifierExpression", "NSExpression", "NSObject"], [
                ("NSExpressionType", .integer(10)), ("NSKeyPath", writer.string(path)),
            ])
            let start = try operand.map { try self.expression($0) } ?? evaluatedObject()
            return writer.object(["NSKeyPathExpression", "NSFunctionExpression", "NSExpression", "NSObject"], [
                ("NSExpressionType", .integer(3)), ("NSOperand", start),
                ("NSSelectorName", writer.string(path.contains(".") ? "valueForKeyPath:" : "valueForKey:")),
                ("NSArguments", writer.array([specifier], className: "NSMutableArray")),
            ])
        case .function(let name, let receiver, let arguments):
            let encoded = try arguments.map { try self.expression($0) }
            guard let receiver else { return function(name, arguments: encoded) }
            return writer.object(["NSFunctionExpression", "NSExpression", "NSObject"], [
                ("NSExpressionType", .integer(4)), ("NSOperand", try self.expression(receiver)), ("NSSelectorName", writer.string(name)),
                ("NSArguments", writer.array(encoded, className: "NSMutableArray")),
            ])
        case .aggregate(let elements):
            return writer.object(["NSAggregateExpression", "NSExpression", "NSObject"], [
                ("NSExpressionType", .integer(14)), ("NSCollection", writer.array(try elements.map { try self.expression($0) })),
            ])
        default:
            throw UnsupportedExpression(description: "the expression \(expression) (a subquery, block, set operation or conditional) can't be stored in a compiled model here")
        }
    }
}
