import Foundation

/// What a derived attribute computes, read from its `derivationExpression` in one of the forms
/// Core Data supports for derived attributes:
///
/// | form | example | `kind` |
/// | --- | --- | --- |
/// | a to-one key path ending in an attribute | `name`, `author.name` | `.copy` |
/// | a string function of such a key path | `canonical:(name)`, `lowercase:(author.name)`, `uppercase:(name)` | `.canonical`, `.lowercase`, `.uppercase` |
/// | the count of a to-many relationship | `books.@count` | `.count` |
/// | the sum of an attribute over a to-many relationship | `books.@sum.pages` | `.sum` |
/// | the time of the save | `now()` | `.now` |
///
/// Invariants: `.copy` and the string functions have `attribute` set (a string attribute for the
/// functions) and `path` holding the to-one relationships before it; `.count` and `.sum` have
/// `toMany` set and an empty `path`, `.sum` also the summed attribute of the destination; `.now`
/// has neither.
struct AttributeDerivation {
    enum Kind: Equatable {
        case copy, lowercase, uppercase, canonical, count, sum, now
    }

    let kind: Kind
    /// The to-one relationships followed from the object, in order.
    let path: [NSRelationshipDescription]
    /// The attribute read at the end of `path`, or summed over the destinations of `toMany`.
    let attribute: NSAttributeDescription?
    /// The to-many relationship counted or summed over.
    let toMany: NSRelationshipDescription?

    /// Reads the derivation of `derived` on `entity` (whose model is frozen); throws 134020
    /// (`NSPersistentStoreIncompatibleSchemaError`) naming the attribute when the expression is
    /// missing or of a form no store can derive.
    static func make(for derived: NSDerivedAttributeDescription, in entity: NSEntityDescription) throws -> AttributeDerivation {
        func unsupported(_ why: String) -> NSError {
            CoreDataError.make(.incompatibleSchema,
                "The derived attribute \(entity.name ?? "?").\(derived.name) can't be derived: \(why). Use a to-one key path (name, author.name), canonical:, lowercase: or uppercase: of one, relationship.@count, relationship.@sum.attribute, or now().",
                userInfo: ["NSAffectedStoresErrorKey": [] as [Any], "attribute": derived.name])
        }
        guard let expression = derived.derivationExpression else { throw unsupported("it has no derivation expression") }
        if let error = expression.formatError { throw unsupported("its expression doesn't parse (\(error.message))") }
        switch expression.node {
        case .function(let name, nil, let arguments):
            if name == BuiltinFunction.now.rawValue, arguments.isEmpty {
                return AttributeDerivation(kind: .now, path: [], attribute: nil, toMany: nil)
            }
            let functions: [String: Kind] = [BuiltinFunction.canonical.rawValue: .canonical,
                                             BuiltinFunction.lowercase.rawValue: .lowercase,
                                             BuiltinFunction.uppercase.rawValue: .uppercase]
            guard let kind = functions[name], arguments.count == 1, case .keyPath(nil, let keyPath, _) = arguments[0].node else {
                throw unsupported("\(expression) is not one of the supported functions of a key path")
            }
            let (path, attribute) = try toOnePath(keyPath, from: entity, unsupported)
            guard attribute.attributeType == .stringAttributeType else {
                throw unsupported("\(name) needs a string attribute, and \(attribute.name) is \(attribute.attributeType.xcodeName)")
            }
            return AttributeDerivation(kind: kind, path: path, attribute: attribute, toMany: nil)
        case .keyPath(nil, let keyPath, _):
            let components = keyPath.split(separator: ".").map(String.init)
            guard let operation = components.firstIndex(where: { $0.hasPrefix("@") }) else {
                let (path, attribute) = try toOnePath(keyPath, from: entity, unsupported)
                return AttributeDerivation(kind: .copy, path: path, attribute: attribute, toMany: nil)
            }
            guard operation == 1, let relationship = entity.frozenRelationshipsByName[components[0]], relationship.isToMany,
                  relationship.inverseRelationship != nil, let destination = relationship.destinationEntity else {
                throw unsupported("\(keyPath) must start with one to-many relationship (with an inverse) of \(entity.name ?? "?")")
            }
            switch components[1] {
            case "@count" where components.count == 2:
                return AttributeDerivation(kind: .count, path: [], attribute: nil, toMany: relationship)
            case "@sum" where components.count == 3:
                guard let summed = destination.frozenPropertiesByName[components[2]] as? NSAttributeDescription, !summed.isTransient,
                      summed.attributeType.isNumeric else {
                    throw unsupported("\(components[2]) is not a stored number attribute of \(destination.name ?? "?")")
                }
                return AttributeDerivation(kind: .sum, path: [], attribute: summed, toMany: relationship)
            default:
                throw unsupported("\(keyPath) uses an operation other than @count or @sum.attribute")
            }
        default:
            throw unsupported("\(expression) is not a key path or a supported function")
        }
    }

    /// The to-one relationships and the final stored attribute of a dotted key path.
    private static func toOnePath(_ keyPath: String, from entity: NSEntityDescription, _ unsupported: (String) -> NSError) throws -> ([NSRelationshipDescription], NSAttributeDescription) {
        var components = keyPath.split(separator: ".").map(String.init)
        let last = components.removeLast()
        var current = entity
        var path: [NSRelationshipDescription] = []
        for name in components {
            guard let relationship = current.frozenRelationshipsByName[name], !relationship.isToMany, let next = relationship.destinationEntity else {
                throw unsupported("\(name) in \(keyPath) is not a to-one relationship of \(current.name ?? "?")")
            }
            path.append(relationship)
            current = next
        }
        guard let attribute = current.frozenPropertiesByName[last] as? NSAttributeDescription, !attribute.isTransient,
              !(attribute is NSDerivedAttributeDescription) else {
            throw unsupported("\(last) is not a stored, underived attribute of \(current.name ?? "?")")
        }
        return (path, attribute)
    }
}
