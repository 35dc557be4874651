import Foundation
import OpenCoreData

/// What `ocd model` reports about a model: entities with their properties and version hashes,
/// fetch request templates and configurations.
struct ModelSummary {
    let path: String
    let model: NSManagedObjectModel

    /// Entities sorted by name.
    private var entities: [NSEntityDescription] {
        model.entities.sorted { ($0.name ?? "") < ($1.name ?? "") }
    }

    // MARK: JSON

    /// The summary as JSON.
    var json: JSONValue {
        .object([
            ("path", .string(path)),
            ("versionIdentifiers", .array(model.versionIdentifiers.map { JSONValue(ValueText.plain($0.base)) }.sorted { "\($0)" < "\($1)" })),
            ("entities", .array(entities.map(Self.json(of:)))),
            ("fetchRequestTemplates", .array(templates.map { name, request in
                .object([("name", .string(name)), ("entity", JSONValue(request.entityName)), ("predicate", JSONValue(request.predicate?.predicateFormat))])
            })),
            ("configurations", .array(model.configurations.map { name in
                .object([("name", .string(name)), ("entities", .array((model.entities(forConfigurationName: name) ?? []).compactMap(\.name).sorted().map(JSONValue.string)))])
            })),
        ])
    }

    private static func json(of entity: NSEntityDescription) -> JSONValue {
        .object([
            ("name", JSONValue(entity.name)),
            ("className", JSONValue(entity.managedObjectClassName)),
            ("parent", JSONValue(entity.superentity?.name)),
            ("abstract", .bool(entity.isAbstract)),
            ("subentities", .array(entity.subentities.compactMap(\.name).sorted().map(JSONValue.string))),
            ("versionHash", .string(entity.versionHash.base64EncodedString())),
            ("attributes", .array(attributes(of: entity).map { attribute in
                .object([
                    ("name", .string(attribute.name)),
                    ("type", .string(attribute.attributeType.xcodeName)),
                    ("optional", .bool(attribute.isOptional)),
                    ("transient", .bool(attribute.isTransient)),
                    ("derivation", JSONValue((attribute as? NSDerivedAttributeDescription)?.derivationExpression?.description)),
                    ("default", attribute.defaultValue.map { ValueText.json($0) } ?? .null),
                ])
            })),
            ("relationships", .array(relationships(of: entity).map { relationship in
                .object([
                    ("name", .string(relationship.name)),
                    ("destination", JSONValue(relationship.destinationEntity?.name)),
                    ("toMany", .bool(relationship.isToMany)),
                    ("ordered", .bool(relationship.isOrdered)),
                    ("optional", .bool(relationship.isOptional)),
                    ("inverse", JSONValue(relationship.inverseRelationship?.name)),
                    ("deleteRule", .string(deleteRuleName(relationship.deleteRule))),
                ])
            })),
        ])
    }

    // MARK: Text

    /// The summary as text, one block per entity.
    var text: String {
        var out = "Model \(path)\n"
        for entity in entities {
            var facts = ["class \(entity.managedObjectClassName ?? "NSManagedObject")"]
            if let parent = entity.superentity?.name { facts.append("parent \(parent)") }
            if entity.isAbstract { facts.append("abstract") }
            out += "\nEntity \(entity.name ?? "?") (\(facts.joined(separator: ", ")))\n"
            out += "  version hash: \(entity.versionHash.base64EncodedString())\n"
            let attributes = Self.attributes(of: entity)
            if !attributes.isEmpty {
                out += "  attributes:\n"
                out += TextTable(header: [], rows: attributes.map { attribute in
                    [attribute.name, attribute.attributeType.xcodeName,
                     [attribute.isOptional ? "optional" : "required", attribute.isTransient ? "transient" : nil,
                      (attribute as? NSDerivedAttributeDescription)?.derivationExpression.map { "derived \($0.description)" }].compactMap { $0 }.joined(separator: ", "),
                     attribute.defaultValue.map { "default \(ValueText.plain($0))" } ?? ""]
                }).render(indent: "    ")
            }
            let relationships = Self.relationships(of: entity)
            if !relationships.isEmpty {
                out += "  relationships:\n"
                out += TextTable(header: [], rows: relationships.map { relationship in
                    [relationship.name, "-> \(relationship.destinationEntity?.name ?? "?")",
                     [relationship.isToMany ? "to-many" : "to-one", relationship.isOrdered ? "ordered" : nil].compactMap { $0 }.joined(separator: ", "),
                     "inverse \(relationship.inverseRelationship?.name ?? "none")",
                     "delete rule \(Self.deleteRuleName(relationship.deleteRule))"]
                }).render(indent: "    ")
            }
        }
        if !templates.isEmpty {
            out += "\nFetch request templates:\n"
            out += TextTable(header: [], rows: templates.map { name, request in
                [name, request.entityName ?? "?", request.predicate.map { "where \($0.predicateFormat)" } ?? "(all)"]
            }).render(indent: "  ")
        }
        if !model.configurations.isEmpty {
            out += "\nConfigurations:\n"
            out += TextTable(header: [], rows: model.configurations.map { name in
                [name, (model.entities(forConfigurationName: name) ?? []).compactMap(\.name).sorted().joined(separator: ", ")]
            }).render(indent: "  ")
        }
        return out
    }

    // MARK: Parts

    private var templates: [(String, NSFetchRequest<NSFetchRequestResult>)] {
        model.fetchRequestTemplatesByName.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// The attributes an entity declares (inherited ones are listed under its parent).
    private static func attributes(of entity: NSEntityDescription) -> [NSAttributeDescription] {
        entity.declaredProperties.compactMap { $0 as? NSAttributeDescription }
    }

    /// The relationships an entity declares.
    private static func relationships(of entity: NSEntityDescription) -> [NSRelationshipDescription] {
        entity.declaredProperties.compactMap { $0 as? NSRelationshipDescription }
    }

    /// Xcode's name of a delete rule.
    static func deleteRuleName(_ rule: NSDeleteRule) -> String {
        switch rule {
        case .noActionDeleteRule: "No Action"
        case .nullifyDeleteRule: "Nullify"
        case .cascadeDeleteRule: "Cascade"
        case .denyDeleteRule: "Deny"
        }
    }
}
