import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// Reads the XML that Xcode's model editor writes (`<name>.xcdatamodeld/<version>.xcdatamodel/contents`).
enum XcodeModelLoader {
    /// Loads a `.xcdatamodeld` bundle (its current version), a `.xcdatamodel` folder or a `contents` file.
    static func load(from url: URL) throws -> NSManagedObjectModel {
        let contentsURL = try resolveContentsFile(url)
        guard let data = FileManager.default.contents(atPath: contentsURL.path) else {
            throw CoreDataError.make(.fileReadNoSuchFile, "No model file at \(contentsURL.path).", url: contentsURL)
        }
        return try load(xml: data, file: contentsURL)
    }

    /// Builds a model from the XML of a `contents` file; `contentsURL` names it in errors.
    static func load(xml data: Data, file contentsURL: URL) throws -> NSManagedObjectModel {
        // Xcode writes UTF-8 with no processing instruction but the XML declaration. Foundation's
        // XMLParser on Linux traps on some invalid UTF-8 and on a processing instruction without
        // data (`<?x?>`), so neither reaches it (both found by fuzzing).
        guard let text = String(validating: data, as: UTF8.self) else {
            throw CoreDataError.make(.fileReadCorruptFile, "\(contentsURL.path) is not a Core Data model: it is not UTF-8 text.", url: contentsURL, line: 1)
        }
        if let instruction = processingInstruction(in: text) {
            throw CoreDataError.make(.fileReadCorruptFile, "\(contentsURL.path) is not a Core Data model: it has a processing instruction at line \(instruction).",
                                     url: contentsURL, line: instruction)
        }
        let reader = ModelXMLReader(file: contentsURL)
        let parser = XMLParser(data: data)
        parser.delegate = reader
        let parsed = parser.parse()
        if let error = reader.error { throw error }
        if !parsed {
            let message = parser.parserError.map { String(describing: $0) } ?? "malformed XML"
            throw CoreDataError.make(
                .fileReadCorruptFile,
                "Malformed model XML in \(contentsURL.path) at line \(parser.lineNumber), column \(parser.columnNumber): \(message)",
                url: contentsURL, line: parser.lineNumber
            )
        }
        if let xmlError = reader.xmlError {
            throw CoreDataError.make(.fileReadCorruptFile, "Malformed model XML in \(contentsURL.path) at line \(xmlError.line): \(xmlError.message)", url: contentsURL, line: xmlError.line)
        }
        if reader.sawModelElement && !reader.sawModelEnd {
            throw CoreDataError.make(.fileReadCorruptFile, "Malformed model XML in \(contentsURL.path) at line \(parser.lineNumber): the <model> element is not closed.", url: contentsURL, line: parser.lineNumber)
        }
        guard reader.sawModelElement else {
            throw CoreDataError.make(.fileReadCorruptFile, "\(contentsURL.path) is not a Core Data model: no <model> element.", url: contentsURL, line: 1)
        }
        let model = reader.model
        model.sourceURL = contentsURL
        try validateInheritance(model, file: contentsURL)
        model.linkByName()
        try validateLinks(model, file: contentsURL)
        return model
    }

    /// The line of the first `<?` that doesn't open the XML declaration at the start, if any.
    static func processingInstruction(in text: String) -> Int? {
        var rest = Substring(text)
        if rest.hasPrefix("\u{FEFF}") { rest = rest.dropFirst() }
        rest = rest.drop { $0.isWhitespace }
        if rest.hasPrefix("<?xml"), let after = rest.dropFirst(5).first, after.isWhitespace {
            rest = rest.dropFirst(5)
        }
        guard let found = rest.range(of: "<?") else { return nil }
        return text[..<found.lowerBound].reduce(1) { $1 == "\n" ? $0 + 1 : $0 }
    }

    /// Finds the `contents` XML behind a bundle, folder or file URL.
    static func resolveContentsFile(_ url: URL) throws -> URL {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw CoreDataError.make(.fileReadNoSuchFile, "No model at \(url.path).", url: url)
        }
        guard isDirectory.boolValue else { return url }
        if url.pathExtension == "xcdatamodeld" {
            return try resolveContentsFile(url.appendingPathComponent(try currentVersionName(in: url)))
        }
        return url.appendingPathComponent("contents")
    }

    /// The current version's folder name in a `.xcdatamodeld` bundle.
    static func currentVersionName(in bundle: URL) throws -> String {
        let marker = bundle.appendingPathComponent(".xccurrentversion")
        if let data = FileManager.default.contents(atPath: marker.path),
           // Ignored: an unreadable marker falls back to the only version, or the error below.
           let plist = try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any],
           let name = plist["_XCCurrentVersionName"] as? String {
            return name
        }
        let versions = try FileManager.default.contentsOfDirectory(atPath: bundle.path)
            .filter { $0.hasSuffix(".xcdatamodel") }.sorted()
        if versions.count == 1 { return versions[0] }
        throw CoreDataError.make(.fileReadCorruptFile, "\(bundle.path) has \(versions.count) model versions and no .xccurrentversion naming the current one.", url: bundle)
    }

    /// All versions in a `.xcdatamodeld` bundle by folder name, for migration.
    static func loadAllVersions(in bundle: URL) throws -> [String: NSManagedObjectModel] {
        let names = try FileManager.default.contentsOfDirectory(atPath: bundle.path).filter { $0.hasSuffix(".xcdatamodel") }
        var result: [String: NSManagedObjectModel] = [:]
        for name in names { result[name] = try load(from: bundle.appendingPathComponent(name)) }
        return result
    }

    /// Rejects an entity that is its own ancestor (`parentEntity` naming itself, or a cycle), which
    /// would send every walk up the hierarchy round for ever.
    private static func validateInheritance(_ model: NSManagedObjectModel, file: URL) throws {
        if let chain = model.inheritanceCycle() {
            throw CoreDataError.make(.fileReadCorruptFile, "\(file.path): entity \(chain[0]) inherits from itself (\(chain.joined(separator: " → "))).", url: file)
        }
    }

    private static func validateLinks(_ model: NSManagedObjectModel, file: URL) throws {
        let byName = model.entitiesByName
        for entity in model.entities {
            if let parent = entity.superentityName, byName[parent] == nil {
                throw CoreDataError.make(.fileReadCorruptFile, "\(file.path): entity \(entity.name ?? "?") has unknown parent entity \(parent).", url: file)
            }
            for case let relationship as NSRelationshipDescription in entity.declaredProperties where relationship.destinationEntity == nil {
                throw CoreDataError.make(.fileReadCorruptFile, "\(file.path): relationship \(entity.name ?? "?").\(relationship.name) has unknown destination \(relationship.destinationEntityName ?? "(none)").", url: file)
            }
        }
    }
}

/// The XML delegate that builds a model element by element.
private final class ModelXMLReader: NSObject, XMLParserDelegate {
    let file: URL
    let model = NSManagedObjectModel()
    var error: Error?
    var sawModelElement = false
    var sawModelEnd = false
    var xmlError: (line: Int, message: String)?

    private var entities: [NSEntityDescription] = []
    private var currentEntity: NSEntityDescription?
    private var currentProperties: [NSPropertyDescription] = []
    private var currentProperty: NSPropertyDescription?
    private var currentIndex: NSFetchIndexDescription?
    private var currentConstraint: [String]?
    private var currentConfiguration: (name: String, members: [String])?
    private var userInfo: [AnyHashable: Any]?
    private var insideElements = false

    init(file: URL) { self.file = file }

    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
        guard error == nil else { return }
        do {
            try start(name, attributes, line: parser.lineNumber)
        } catch let failure {
            error = failure
            parser.abortParsing()
        }
    }

    func parser(_ parser: XMLParser, parseErrorOccurred parseError: Error) {
        if xmlError == nil { xmlError = (parser.lineNumber, "\(parseError)") }
    }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        guard error == nil else { return }
        switch name {
        case "entity":
            if let entity = currentEntity {
                // As Core Data's compiler does: a property that is the whole of a fetch index is indexed.
                for index in entity.indexes where index.elements.count == 1 {
                    currentProperties.first { $0.name == index.elements[0].propertyName }?.isIndexed = true
                }
                entity.properties = currentProperties
                entities.append(entity)
            }
            currentEntity = nil
            currentProperties = []
        case "attribute", "relationship", "fetchedProperty":
            currentProperty = nil
        case "userInfo":
            if let property = currentProperty { property.userInfo = userInfo } else { currentEntity?.userInfo = userInfo }
            userInfo = nil
        case "fetchIndex":
            if let index = currentIndex { currentEntity?.indexes.append(index) }
            currentIndex = nil
        case "uniquenessConstraint":
            if let constraint = currentConstraint { currentEntity?.uniquenessConstraints.append(constraint) }
            currentConstraint = nil
        case "configuration":
            if let configuration = currentConfiguration {
                model.setEntityNames(configuration.members, forConfigurationName: configuration.name)
            }
            currentConfiguration = nil
        case "elements":
            insideElements = false
        case "model":
            sawModelEnd = true
            model.entities = entities
        default:
            break
        }
    }

    private func fail(_ message: String, line: Int) -> Error {
        CoreDataError.make(.fileReadCorruptFile, "\(file.path):\(line): \(message)", url: file, line: line)
    }

    private func start(_ name: String, _ a: [String: String], line: Int) throws {
        switch name {
        case "model":
            sawModelElement = true
            if let identifier = a["userDefinedModelVersionIdentifier"] { model.versionIdentifiers = [identifier] }
        case "compositeAttribute":
            throw fail("composite attributes (<compositeAttribute \(a["name"] ?? "")>, Xcode 15) are not supported", line: line)
        case "entity" where !insideElements:
            guard let entityName = a["name"], !entityName.isEmpty else { throw fail("<entity> without a name", line: line) }
            let entity = NSEntityDescription()
            entity.name = entityName
            entity.managedObjectClassName = a["representedClassName"] ?? "NSManagedObject"
            entity.isAbstract = a["isAbstract"] == "YES"
            entity.superentityName = a["parentEntity"]
            entity.versionHashModifier = a["versionHashModifier"]
            entity.renamingIdentifier = a["elementID"]
            currentEntity = entity
        case "attribute":
            guard currentEntity != nil else { throw fail("<attribute> outside an <entity>", line: line) }
            currentProperty = try makeAttribute(a, line: line)
            currentProperties.append(currentProperty!)
        case "relationship":
            guard currentEntity != nil else { throw fail("<relationship> outside an <entity>", line: line) }
            guard let relationshipName = a["name"], !relationshipName.isEmpty else { throw fail("<relationship> without a name", line: line) }
            let relationship = NSRelationshipDescription()
            relationship.name = relationshipName
            applyCommon(relationship, a)
            let toMany = a["toMany"] == "YES"
            relationship.maxCount = Int(a["maxCount"] ?? "") ?? (toMany ? 0 : 1)
            relationship.minCount = Int(a["minCount"] ?? "") ?? 0
            if toMany && relationship.maxCount == 1 { relationship.maxCount = 0 }
            relationship.isOrdered = a["ordered"] == "YES"
            relationship.destinationEntityName = a["destinationEntity"]
            relationship.inverseName = a["inverseName"]
            switch a["deletionRule"] ?? "Nullify" {
            case "Nullify": relationship.deleteRule = .nullifyDeleteRule
            case "Cascade": relationship.deleteRule = .cascadeDeleteRule
            case "Deny": relationship.deleteRule = .denyDeleteRule
            case "No Action": relationship.deleteRule = .noActionDeleteRule
            case let other: throw fail("unknown deletionRule \"\(other)\" on relationship \(relationshipName)", line: line)
            }
            currentProperty = relationship
            currentProperties.append(relationship)
        case "fetchedProperty":
            guard currentEntity != nil else { throw fail("<fetchedProperty> outside an <entity>", line: line) }
            let property = NSFetchedPropertyDescription()
            property.name = a["name"] ?? ""
            applyCommon(property, a)
            property.isTransient = true // fetched properties are never stored
            currentProperty = property
            currentProperties.append(property)
        case "fetchRequest":
            let request = NSFetchRequest<NSFetchRequestResult>()
            request.templateEntityName = a["entity"]
            if let predicate = a["predicateString"] { request.predicate = NSPredicate(format: predicate) }
            if let type = a["resultType"], let raw = UInt(type) {
                request.resultType = NSFetchRequestResultType(rawValue: raw)
                // Core Data's compiler turns off what the result type can't use.
                if request.resultType == .managedObjectIDResultType { request.includesPropertyValues = false }
                if request.resultType == .dictionaryResultType { request.includesPendingChanges = false }
            }
            if let limit = a["fetchLimit"], let value = Int(limit) { request.fetchLimit = value }
            if let size = a["fetchBatchSize"], let value = Int(size) { request.fetchBatchSize = value }
            if let value = a["includeSubentities"] { request.includesSubentities = value == "YES" }
            if let value = a["includePropertyValues"] { request.includesPropertyValues = value == "YES" }
            if let value = a["includesPendingChanges"] { request.includesPendingChanges = value == "YES" }
            if let value = a["returnObjectsAsFaults"] { request.returnsObjectsAsFaults = value == "YES" }
            if let value = a["returnDistinctResults"] { request.returnsDistinctResults = value == "YES" }
            if let property = currentProperty as? NSFetchedPropertyDescription {
                property.fetchRequest = request
            } else if let requestName = a["name"] {
                model.setFetchRequestTemplate(request, forName: requestName)
            }
        case "entry":
            if let key = a["key"] { userInfo?[key] = a["value"] ?? "" }
        case "userInfo":
            userInfo = [:]
        case "fetchIndex":
            currentIndex = NSFetchIndexDescription(name: a["name"] ?? "", elements: [])
        case "fetchIndexElement":
            let element = NSFetchIndexElementDescription(
                propertyName: a["property"] ?? "",
                ascending: a["order"] != "descending",
                collationType: a["type"] == "RTree" ? .rTree : .binary
            )
            currentIndex?.elements.append(element)
        case "uniquenessConstraint":
            currentConstraint = []
        case "constraint":
            if let value = a["value"] { currentConstraint?.append(value) }
        case "configuration":
            currentConfiguration = (a["name"] ?? "", [])
        case "memberEntity":
            if let member = a["name"] { currentConfiguration?.members.append(member) }
        case "elements":
            insideElements = true
        default:
            break
        }
    }

    private func applyCommon(_ property: NSPropertyDescription, _ a: [String: String]) {
        property.isOptional = a["optional"] == "YES"
        property.isTransient = a["transient"] == "YES"
        property.isIndexed = a["indexed"] == "YES"
        property.renamingIdentifier = a["elementID"]
        property.versionHashModifier = a["versionHashModifier"]
    }

    private func makeAttribute(_ a: [String: String], line: Int) throws -> NSAttributeDescription {
        guard let attributeName = a["name"], !attributeName.isEmpty else { throw fail("<attribute> without a name", line: line) }
        let typeName = a["attributeType"] ?? "Undefined"
        guard let type = NSAttributeType(xcodeName: typeName) else {
            throw fail("unknown attributeType \"\(typeName)\" on attribute \(attributeName)", line: line)
        }
        let attribute: NSAttributeDescription
        if a["derived"] == "YES" {
            let derived = NSDerivedAttributeDescription()
            if let text = a["derivationExpression"] {
                let expression = NSExpression(format: text)
                if let error = expression.formatError {
                    throw fail("derivationExpression \"\(text)\" of attribute \(attributeName) doesn't parse: \(error.message)", line: line)
                }
                derived.derivationExpression = expression
            }
            attribute = derived
        } else {
            attribute = NSAttributeDescription()
        }
        attribute.name = attributeName
        attribute.attributeType = type
        applyCommon(attribute, a)
        attribute.usesScalarValueType = a["usesScalarValueType"] == "YES"
        attribute.valueTransformerName = a["valueTransformerName"]
        if let custom = a["customClassName"] { attribute.attributeValueClassName = custom }
        attribute.allowsExternalBinaryDataStorage = a["allowsExternalBinaryDataStorage"] == "YES"
        attribute.preservesValueInHistoryOnDeletion = a["preserveAfterDeletion"] == "YES"
        if let text = a["defaultValueString"] {
            attribute.defaultValue = try AttributeValueCoding.parseDefault(text, type: type) ?? {
                throw fail("default value \"\(text)\" is not a valid \(typeName) for attribute \(attributeName)", line: line)
            }()
        } else if let interval = a["defaultDateTimeInterval"], let seconds = Double(interval) {
            attribute.defaultValue = Date(timeIntervalSinceReferenceDate: seconds)
        }
        let minimum = a["minValueString"].flatMap(Double.init) ?? a["minDateTimeInterval"].flatMap(Double.init)
        let maximum = a["maxValueString"].flatMap(Double.init) ?? a["maxDateTimeInterval"].flatMap(Double.init)
        attribute.setValueConstraints(minimum: minimum, maximum: maximum, regularExpression: a["regularExpressionString"])
        return attribute
    }
}
