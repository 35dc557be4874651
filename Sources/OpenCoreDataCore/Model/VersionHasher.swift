import Foundation

/// Computes Core Data's version hashes: the fingerprints of entities and properties that stores
/// record in their metadata and that decide whether a model can open a store.
///
/// The hashes equal those Apple's Core Data and Xcode's model compiler record (checked against
/// Apple-written stores and compiled models in the tests). Each is a SHA-256 over the schema-
/// relevant facts of a description, as bytes: strings as raw UTF-8 with no length or terminator
/// (a nil or empty string adds nothing), integers little-endian.
///
/// - Property base: name, 2-byte flags (optional 1, transient 2), version hash modifier.
/// - Attribute: the base's hash, the type's raw value (4 bytes), a byte 1 for external binary
///   storage and a byte 1 for keeping the value in history after deletion.
/// - Derived attribute: the derivation's format and its filter's, without the base.
/// - Relationship: the base's hash, destination name, inverse name (left out when there is none
///   or the relationship is its own inverse), maxCount and minCount (4 bytes each), `01 00` when
///   ordered.
/// - Entity: name, a byte for abstract, the superentity's hash, the hashes of every stored
///   property (inherited ones included) in name order, the version hash modifier, and the
///   entity's uniqueness constraints, each joined with ".", sorted.
///
/// Class names, user info, default values, delete rules, indexes, renaming identifiers,
/// configurations and fetch requests are not hashed: changing them needs no migration.
enum VersionHasher {
    static func hash(of entity: NSEntityDescription) -> Data {
        var bytes = Array((entity.name ?? "").utf8)
        bytes.append(entity.isAbstract ? 1 : 0)
        if let superentity = entity.superentity { bytes += hash(of: superentity) }
        let stored = entity.properties.filter { !$0.isTransient && !($0 is NSFetchedPropertyDescription) }
        var byName: [String: NSPropertyDescription] = [:]
        for property in stored { byName[property.name] = property }
        for name in byName.keys.sorted(by: utf16Precedes) { bytes += hash(of: byName[name]!) }
        bytes += (entity.versionHashModifier ?? "").utf8
        let constraints = entity.uniquenessConstraints.map { constraint in
            constraint.map { element in (element as? NSPropertyDescription)?.name ?? (element as? String) ?? "\(element)" }.joined(separator: ".")
        }
        for constraint in constraints.filter({ !$0.isEmpty }).sorted(by: utf16Precedes) { bytes += constraint.utf8 }
        return digest(bytes)
    }

    static func hash(of property: NSPropertyDescription) -> Data {
        switch property {
        case let derived as NSDerivedAttributeDescription:
            return digest(Array(derivationFormat(derived.derivationExpression).utf8))
        case let attribute as NSAttributeDescription:
            var bytes = baseHash(of: attribute)
            append(UInt32(truncatingIfNeeded: attribute.attributeType.rawValue), to: &bytes)
            if attribute.allowsExternalBinaryDataStorage { bytes.append(1) }
            if attribute.preservesValueInHistoryOnDeletion { bytes.append(1) }
            return digest(bytes)
        case let relationship as NSRelationshipDescription:
            var bytes = baseHash(of: relationship)
            bytes += relationship.destinationName.utf8
            if let inverse = relationship.inverseNameForHashing { bytes += inverse.utf8 }
            append(UInt32(truncatingIfNeeded: min(relationship.maxCount, Int(UInt32.max))), to: &bytes)
            append(UInt32(truncatingIfNeeded: min(relationship.minCount, Int(UInt32.max))), to: &bytes)
            if relationship.isOrdered { bytes += [1, 0] }
            return digest(bytes)
        default:
            return digest(baseHash(of: property))
        }
    }

    /// `NSStoreModelVersionHashesDigest`: base64 of a SHA-512 over each entity's name and hash,
    /// in name order.
    static func hashesDigest(_ hashes: [String: Data]) -> String {
        var bytes: [UInt8] = []
        for name in hashes.keys.sorted(by: utf16Precedes) { bytes += name.utf8; bytes += hashes[name]! }
        return Data(SHA512Digest.hash(bytes)).base64EncodedString()
    }

    /// `NSStoreModelVersionChecksumKey` (the model's `versionChecksum`): base64 of a SHA-256 over
    /// the entity hashes in entity-name order.
    static func checksum(_ hashes: [String: Data]) -> String {
        var bytes: [UInt8] = []
        for name in hashes.keys.sorted(by: utf16Precedes) { bytes += hashes[name]! }
        return Data(SHA256Digest.hash(bytes)).base64EncodedString()
    }

    /// Orders names as Core Data does: by UTF-16 code units, case-sensitively.
    static func utf16Precedes(_ lhs: String, _ rhs: String) -> Bool {
        lhs.utf16.lexicographicallyPrecedes(rhs.utf16)
    }

    /// The text a derivation is hashed as: the expression's format, with a trailing `.@count` or
    /// `.@sum.x` key path spelled as the function Core Data parses it into.
    static func derivationFormat(_ expression: NSExpression?) -> String {
        guard let expression else { return "" }
        if case .keyPath(nil, let path, _) = expression.node {
            let components = path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            if let operation = components.firstIndex(where: { $0.hasPrefix("@") }), operation > 0 {
                let before = components[..<operation].joined(separator: ".")
                let after = components[(operation + 1)...]
                let operand = ([before] + after).joined(separator: ".")
                switch components[operation] {
                case "@count" where after.isEmpty: return "count:(\(before))"
                case "@sum", "@total": return "sum:(\(operand))"
                default: break
                }
            }
        }
        return expression.description
    }

    private static func baseHash(of property: NSPropertyDescription) -> [UInt8] {
        var bytes = Array(property.name.utf8)
        let flags: UInt16 = (property.isOptional ? 1 : 0) | (property.isTransient ? 2 : 0)
        bytes += [UInt8(truncatingIfNeeded: flags), UInt8(truncatingIfNeeded: flags >> 8)]
        bytes += (property.versionHashModifier ?? "").utf8
        return SHA256Digest.hash(bytes)
    }

    private static func append(_ value: UInt32, to bytes: inout [UInt8]) {
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    private static func digest(_ bytes: [UInt8]) -> Data { Data(SHA256Digest.hash(bytes)) }
}

extension NSRelationshipDescription {
    /// The destination entity's name, also once a model built in code is gone.
    var destinationName: String { destinationEntity?.name ?? destinationEntityName ?? "" }

    /// The inverse's name as hashed: none when there is no inverse or the relationship is its own.
    var inverseNameForHashing: String? {
        let inverse = inverseRelationship?.name ?? inverseName
        guard let inverse, !inverse.isEmpty else { return nil }
        if inverse == name, destinationName == (entity?.name ?? "") { return nil }
        return inverse
    }
}
