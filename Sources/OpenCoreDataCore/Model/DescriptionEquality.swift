import Foundation

/// What makes two entity or property descriptions equal, as `isEqual(_:)` answers for them.
///
/// Apple's descriptions compare by value: two loads of one model version give entities and
/// properties that are equal, so `model1.entitiesByName == model2.entitiesByName` holds. Here two
/// descriptions are equal when they are of the same class and say the same thing: the schema that
/// the version hash covers, and what it leaves out but a program sees (class names, default values,
/// delete rules, counts, transformers, renaming identifiers, derivations, fetched-property
/// requests). User info and validation predicates are not compared.
enum DescriptionEquality {
    /// Whether two entities describe the same entity.
    static func equal(_ lhs: NSEntityDescription, _ rhs: NSEntityDescription) -> Bool {
        guard type(of: lhs) == type(of: rhs), lhs.name == rhs.name else { return false }
        return text(of: lhs) == text(of: rhs)
    }

    /// Whether two properties describe the same property.
    static func equal(_ lhs: NSPropertyDescription, _ rhs: NSPropertyDescription) -> Bool {
        guard type(of: lhs) == type(of: rhs), lhs.name == rhs.name else { return false }
        return text(of: lhs) == text(of: rhs)
    }

    private static func text(of entity: NSEntityDescription) -> String {
        var text = "\(entity.name ?? "")|class=\(entity.managedObjectClassName ?? "")|abstract=\(entity.isAbstract)"
        text += "|super=\(entity.superentity?.name ?? "")|subs=\(entity.subentities.compactMap(\.name).sorted())"
        text += "|mod=\(entity.versionHashModifier ?? "")|renamed=\(entity.renamingIdentifier ?? "")"
        text += "|unique=\(entity.uniquenessConstraints.map { $0.map(constraintName) })"
        for property in entity.properties.sorted(by: { $0.name < $1.name }) {
            text += "|" + self.text(of: property)
        }
        return text
    }

    private static func constraintName(_ element: Any) -> String {
        (element as? NSPropertyDescription)?.name ?? "\(element)"
    }

    private static func text(of property: NSPropertyDescription) -> String {
        var text = "\(property.name):opt=\(property.isOptional):tr=\(property.isTransient):idx=\(property.isIndexed)"
        text += ":mod=\(property.versionHashModifier ?? ""):renamed=\(property.renamingIdentifier ?? "")"
        if let derived = property as? NSDerivedAttributeDescription {
            text += ":derived=\(derived.derivationExpression.map { "\($0)" } ?? "")"
        }
        if let attribute = property as? NSAttributeDescription {
            text += ":type=\(attribute.attributeType.rawValue):default=\(attribute.defaultValue.map { "\($0)" } ?? "nil")"
            text += ":transformer=\(attribute.valueTransformerName ?? ""):external=\(attribute.allowsExternalBinaryDataStorage)"
            text += ":history=\(attribute.preservesValueInHistoryOnDeletion)"
        } else if let relationship = property as? NSRelationshipDescription {
            text += ":dest=\(relationship.destinationEntity?.name ?? relationship.destinationEntityName ?? "")"
            text += ":inv=\(relationship.inverseRelationship?.name ?? relationship.inverseName ?? "")"
            text += ":count=\(relationship.minCount)...\(relationship.maxCount):rule=\(relationship.deleteRule.rawValue):ord=\(relationship.isOrdered)"
        } else if let fetched = property as? NSFetchedPropertyDescription {
            let request = fetched.fetchRequest
            text += ":fetch=\(request?.entityName ?? ""):\(request?.predicate.map { "\($0)" } ?? "")"
        }
        return text
    }
}
