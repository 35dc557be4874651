import Foundation

/// Computes the version hashes that decide whether a store's schema matches a model.
///
/// OpenCoreData's hash covers what changes the stored schema: names, inheritance, attribute types,
/// optionality, transience, relationship shape and the version hash modifiers. It is a SHA-256 of a
/// canonical text, so it is stable across runs and platforms. Apple's hashes use a private
/// encoding, so a store written by Apple is checked against the model by its schema instead
/// (see `SQLiteSchema`).
enum VersionHasher {
    static func hash(of entity: NSEntityDescription) -> Data {
        var text = "entity:\(entity.name ?? "")|abstract:\(entity.isAbstract)|super:\(entity.superentity?.name ?? "")|mod:\(entity.versionHashModifier ?? "")"
        for property in entity.properties.sorted(by: { $0.name < $1.name }) where !property.isTransient {
            text += "|" + canonicalText(of: property)
        }
        return Data(SHA256Digest.hash(Array(text.utf8)))
    }

    static func hash(of property: NSPropertyDescription) -> Data {
        Data(SHA256Digest.hash(Array(canonicalText(of: property).utf8)))
    }

    private static func canonicalText(of property: NSPropertyDescription) -> String {
        var text = "\(property.name):opt=\(property.isOptional):tr=\(property.isTransient):mod=\(property.versionHashModifier ?? "")"
        if let attribute = property as? NSAttributeDescription {
            text += ":type=\(attribute.attributeType.rawValue)"
        } else if let relationship = property as? NSRelationshipDescription {
            text += ":dest=\(relationship.destinationEntity?.name ?? relationship.destinationEntityName ?? ""):many=\(relationship.isToMany):ord=\(relationship.isOrdered)"
            text += ":inv=\(relationship.inverseRelationship?.name ?? relationship.inverseName ?? "")"
        }
        return text
    }
}
