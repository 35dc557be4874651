import Foundation

/// The entity hashes that stores written by OpenCoreData before it computed Apple's recorded
/// (metadata marker `OpenCoreDataStoreVersion` 1): a SHA-256 of a canonical text. They are only
/// compared when such a store is opened, which then records Apple's hashes (`VersionHasher`).
enum LegacyVersionHasher {
    static func hash(of entity: NSEntityDescription) -> Data {
        var text = "entity:\(entity.name ?? "")|abstract:\(entity.isAbstract)|super:\(entity.superentity?.name ?? "")|mod:\(entity.versionHashModifier ?? "")"
        for property in entity.properties.sorted(by: { $0.name < $1.name }) where !property.isTransient {
            text += "|" + canonicalText(of: property)
        }
        return Data(SHA256Digest.hash(Array(text.utf8)))
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
