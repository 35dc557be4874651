import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// Reads the XML that Xcode's mapping-model editor writes (`<name>.xcmappingmodel/xcmapping.xml`).
///
/// The file is a Core Data XML store of Xcode's own entities: one `XDDEVMAPPINGMODEL` object that
/// lists its `XDDEVENTITYMAPPING`s, each listing `XDDEVATTRIBUTEMAPPING`s and
/// `XDDEVRELATIONSHIPMAPPING`s by id. Objects that no mapping lists (Xcode leaves deleted ones
/// behind) are ignored. Xcode writes no expression for a mapping marked "autogenerate": those
/// are derived from the models when the mapping model is matched to them
/// (`NSMappingModel.resolveGeneratedExpressions`).
enum XcodeMappingModelLoader {
    /// One `<object>` of the file: its attributes by name and its relationships' id lists.
    struct StoredObject {
        var type: String
        var attributes: [String: String] = [:]
        var relationships: [String: [String]] = [:]
    }

    /// Loads a `.xcmappingmodel` folder or its `xcmapping.xml` file.
    static func load(from url: URL) throws -> NSMappingModel {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw CoreDataError.make(.fileReadNoSuchFile, "No mapping model at \(url.path).", url: url)
        }
        let file = isDirectory.boolValue ? url.appendingPathComponent("xcmapping.xml") : url
        guard let data = FileManager.default.contents(atPath: file.path) else {
            throw CoreDataError.make(.fileReadNoSuchFile, "No mapping model file at \(file.path).", url: file)
        }
        return try parse(data, file: file)
    }

    /// Builds a mapping model from the file's XML.
    static func parse(_ data: Data, file: URL) throws -> NSMappingModel {
        let reader = StoredObjectReader()
        let parser = XMLParser(data: data)
        parser.delegate = reader
        guard parser.parse(), reader.sawDatabase else {
            let reason = parser.parserError.map { String(describing: $0) } ?? "no <database> element"
            throw CoreDataError.make(.fileReadCorruptFile, "Malformed mapping model XML in \(file.path) at line \(parser.lineNumber): \(reason)", url: file, line: parser.lineNumber)
        }
        let objects = reader.objects
        guard let root = objects.values.first(where: { $0.type == "XDDEVMAPPINGMODEL" }) else {
            throw CoreDataError.make(.fileReadCorruptFile, "\(file.path) is not a Core Data mapping model: it has no mapping-model object.", url: file)
        }
        let model = NSMappingModel()
        model.sourceModelName = versionName(root.attributes["sourcemodelpath"])
        model.destinationModelName = versionName(root.attributes["destinationmodelpath"])
        let entityObjects = (root.relationships["entitymappings"] ?? []).compactMap { objects[$0] }
            .sorted { Int($0.attributes["mappingnumber"] ?? "") ?? 0 < Int($1.attributes["mappingnumber"] ?? "") ?? 0 }
        var mappings: [NSEntityMapping] = []
        for object in entityObjects {
            mappings.append(try entityMapping(object, objects: objects, file: file))
        }
        model.entityMappings = mappings
        return model
    }

    /// "UnCloudNotes/Model.xcdatamodeld/Model v2.xcdatamodel" → "Model v2".
    private static func versionName(_ path: String?) -> String? {
        guard let path, !path.isEmpty else { return nil }
        let last = (path as NSString).lastPathComponent
        return last.hasSuffix(".xcdatamodel") ? String(last.dropLast(".xcdatamodel".count)) : last
    }

    private static func entityMapping(_ object: StoredObject, objects: [String: StoredObject], file: URL) throws -> NSEntityMapping {
        let a = object.attributes
        let mapping = NSEntityMapping()
        mapping.sourceEntityName = a["sourcename"].flatMap { $0.isEmpty ? nil : $0 }
        mapping.destinationEntityName = a["destinationname"].flatMap { $0.isEmpty ? nil : $0 }
        mapping.name = a["name"] ?? "\(mapping.sourceEntityName ?? "")To\(mapping.destinationEntityName ?? "")"
        mapping.mappingType = mappingType(a["mappingtypename"], source: mapping.sourceEntityName, destination: mapping.destinationEntityName)
        mapping.entityMigrationPolicyClassName = a["migrationpolicyclassname"].flatMap { $0.isEmpty ? nil : $0 }
        if let filter = a["sourcefilterpredicatestring"], !filter.isEmpty {
            do {
                mapping.sourceFilterPredicate = try NSPredicate.parse(format: filter)
            } catch {
                throw CoreDataError.make(.fileReadCorruptFile, "\(file.path): entity mapping \(mapping.name ?? "?") has an invalid source filter \"\(filter)\": \(error)", url: file)
            }
        }
        let generates = a["autogenerateexpression"] == "1"
        mapping.attributeMappings = try (object.relationships["attributemappings"] ?? []).compactMap { objects[$0] }
            .map { try propertyMapping($0, entityGenerates: generates, file: file) }.sorted { ($0.name ?? "") < ($1.name ?? "") }
        mapping.relationshipMappings = try (object.relationships["relationshipmappings"] ?? []).compactMap { objects[$0] }
            .map { try propertyMapping($0, entityGenerates: generates, file: file) }.sorted { ($0.name ?? "") < ($1.name ?? "") }
        return mapping
    }

    private static func mappingType(_ name: String?, source: String?, destination: String?) -> NSEntityMappingType {
        switch name?.lowercased() {
        case "add": .addEntityMappingType
        case "remove": .removeEntityMappingType
        case "copy": .copyEntityMappingType
        case "transform": .transformEntityMappingType
        case "custom": .customEntityMappingType
        default:
            source == nil ? .addEntityMappingType : destination == nil ? .removeEntityMappingType : .customEntityMappingType
        }
    }

    /// A property mapping; one without an expression is generated when it or its entity mapping
    /// is marked "autogenerate" (Xcode marks attribute mappings only through their entity mapping).
    private static func propertyMapping(_ object: StoredObject, entityGenerates: Bool, file: URL) throws -> NSPropertyMapping {
        let a = object.attributes
        let mapping = NSPropertyMapping(name: a["name"], valueExpression: nil)
        if let text = a["valueexpressionstring"] ?? a["valueexpression"], !text.isEmpty {
            do {
                mapping.valueExpression = try NSExpression.parse(format: text)
            } catch {
                throw CoreDataError.make(.fileReadCorruptFile, "\(file.path): property mapping \(a["name"] ?? "?") has an invalid value expression \"\(text)\": \(error)", url: file)
            }
        } else if a["autogenerateexpression"] == "1" || (entityGenerates && a["autogenerateexpression"] == nil) {
            mapping.generation = .init(sourceMappingName: a["sourcemappingname"].flatMap { $0.isEmpty ? nil : $0 },
                                       sourceKeyPath: a["sourcekeypath"].flatMap { $0.isEmpty ? nil : $0 })
        }
        return mapping
    }
}

/// The XML delegate that collects the file's objects by id.
private final class StoredObjectReader: NSObject, XMLParserDelegate {
    var objects: [String: XcodeMappingModelLoader.StoredObject] = [:]
    var sawDatabase = false
    private var currentID: String?
    private var currentAttribute: String?
    private var text = ""

    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
        switch name {
        case "database": sawDatabase = true
        case "object":
            guard let id = attributes["id"], let type = attributes["type"] else { return }
            currentID = id
            objects[id] = .init(type: type)
        case "attribute" where currentID != nil:
            currentAttribute = attributes["name"]
            text = ""
        case "relationship" where currentID != nil:
            if let relationship = attributes["name"] {
                objects[currentID!]?.relationships[relationship] = (attributes["idrefs"] ?? "").split(separator: " ").map(String.init)
            }
        default: break
        }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        if currentAttribute != nil { text += string }
    }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        switch name {
        case "attribute":
            if let id = currentID, let attribute = currentAttribute { objects[id]?.attributes[attribute] = text }
            currentAttribute = nil
        case "object": currentID = nil
        default: break
        }
    }
}
