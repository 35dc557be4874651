import Foundation
import OpenCoreData
import Testing

/// Every shared model loads and reports exactly what its XML declares.
@Suite struct ModelLoadingTests {
    /// Counts elements in a model's XML independently of the loader (a plain text scan).
    private func declared(in contents: URL) throws -> (entities: [String: (attributes: Set<String>, relationships: Set<String>)], total: Int) {
        let xml = try String(contentsOf: contents, encoding: .utf8)
        var result: [String: (attributes: Set<String>, relationships: Set<String>)] = [:]
        var current: String?
        for line in xml.split(separator: "\n") {
            let text = line.trimmingCharacters(in: .whitespaces)
            func attribute(_ name: String) -> String? {
                guard let range = text.range(of: " \(name)=\"") else { return nil }
                return String(text[range.upperBound...].prefix { $0 != "\"" })
            }
            if text.hasPrefix("<entity ") && !text.contains("positionX") {
                current = attribute("name")
                result[current!] = ([], [])
            } else if text.hasPrefix("<attribute "), let entity = current {
                result[entity]!.attributes.insert(attribute("name")!)
            } else if text.hasPrefix("<relationship "), let entity = current {
                result[entity]!.relationships.insert(attribute("name")!)
            }
            if text.hasPrefix("</entity>") || (text.hasPrefix("<entity ") && text.hasSuffix("/>")) { current = nil }
        }
        return (result, result.count)
    }

    static let models: [(String, String)] = [
        ("worldcup", "WorldCup"), ("bubbletea", "BubbleTeaFinder"), ("bowties", "BowTies"), ("dogwalk", "DogWalk"),
        ("employees", "EmployeeDirectory"), ("failedbanks", "FailedBanksCD"), ("swiftgen-kitchensink", "Model"),
        ("uncloudnotes", "UnCloudNotesDataModel"),
    ]

    @Test(arguments: models)
    func everySharedModelLoadsAsDeclared(folder: String, name: String) throws {
        let bundle = TestSupport.modelURL(folder, name)
        let model = try NSManagedObjectModel.load(contentsOf: bundle)
        let current = try currentVersion(of: bundle)
        let expected = try declared(in: bundle.appendingPathComponent(current).appendingPathComponent("contents"))
        #expect(Set(model.entitiesByName.keys) == Set(expected.entities.keys))
        for (entityName, declared) in expected.entities {
            let entity = try #require(model.entitiesByName[entityName])
            let own = entity.declaredProperties
            #expect(Set(own.compactMap { $0 as? NSAttributeDescription }.map(\.name)) == declared.attributes, "\(entityName) attributes")
            #expect(Set(own.compactMap { $0 as? NSRelationshipDescription }.map(\.name)) == declared.relationships, "\(entityName) relationships")
            for case let relationship as NSRelationshipDescription in own {
                #expect(relationship.destinationEntity != nil, "\(entityName).\(relationship.name) destination")
            }
        }
        // The same model loads through NSManagedObjectModel(contentsOf:) too.
        #expect(NSManagedObjectModel(contentsOf: bundle)?.entities.count == model.entities.count)
    }

    private func currentVersion(of bundle: URL) throws -> String {
        guard let data = FileManager.default.contents(atPath: bundle.appendingPathComponent(".xccurrentversion").path) else {
            return try #require(FileManager.default.contentsOfDirectory(atPath: bundle.path).first { $0.hasSuffix(".xcdatamodel") })
        }
        let plist = try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any]
        return try #require(plist?["_XCCurrentVersionName"] as? String)
    }

    @Test func currentVersionIsHonoured() throws {
        let model = try TestSupport.model("uncloudnotes", "UnCloudNotesDataModel")
        // Version 4 adds the Attachment entity and the image attributes.
        #expect(model.entitiesByName["Attachment"] != nil)
        let folder = TestSupport.fixtures.appendingPathComponent("uncloudnotes/UnCloudNotesDataModel.xcdatamodeld/UnCloudNotesDataModel.xcdatamodel")
        let first = try NSManagedObjectModel.load(contentsOf: folder)
        #expect(first.entitiesByName["Attachment"] == nil)
        #expect(first.entitiesByName["Note"] != nil)
        // A `contents` file directly.
        let contents = try NSManagedObjectModel.load(contentsOf: folder.appendingPathComponent("contents"))
        #expect(contents.entities.count == first.entities.count)
    }

    @Test func kitchenSinkFeatures() throws {
        let model = try TestSupport.model("swiftgen-kitchensink", "Model")
        let main = try #require(model.entitiesByName["MainEntity"])
        let child = try #require(model.entitiesByName["ChildEntity"])
        let abstract = try #require(model.entitiesByName["AbstractEntity"])
        let new = try #require(model.entitiesByName["NewEntity"])
        // Inheritance and abstract entities.
        #expect(child.superentity === main)
        #expect(main.subentities.contains { $0 === child })
        #expect(child.propertiesByName["int64"] != nil, "inherited property")
        #expect(abstract.isAbstract)
        #expect(new.superentity === abstract)
        #expect(main.managedObjectClassName == "CustomMainEntity")
        // Attribute types, optionality, defaults, transient, transformable.
        let attributes = main.attributesByName
        #expect(attributes["int16"]?.attributeType == .integer16AttributeType)
        #expect(attributes["int16"]?.defaultValue as? Int16 == 0)
        #expect(attributes["decimal"]?.attributeType == .decimalAttributeType)
        #expect(attributes["boolean"]?.isOptional == false)
        #expect(attributes["transient"]?.isTransient == true)
        #expect(attributes["uuid"]?.attributeType == .UUIDAttributeType)
        #expect(attributes["uri"]?.attributeType == .URIAttributeType)
        #expect(attributes["transformableCustomArray"]?.attributeValueClassName == "CustomArray")
        #expect(attributes["binaryData"]?.userInfo?["key"] as? String == "value")
        #expect(child.attributesByName["derivedCount"] is NSDerivedAttributeDescription)
        // Relationships: to-one, to-many, ordered, inverses.
        let relationships = main.relationshipsByName
        #expect(relationships["oneToOne"]?.isToMany == false)
        #expect(relationships["manyToMany"]?.isToMany == true)
        #expect(relationships["oneToMany"]?.isOrdered == true)
        #expect(relationships["oneToMany"]?.inverseRelationship?.name == "oneToMany")
        #expect(relationships["manyToMany"]?.inverseRelationship?.inverseRelationship === relationships["manyToMany"])
        #expect(main.propertiesByName["fetchedProperty"] is NSFetchedPropertyDescription)
        // Configurations, fetch indexes, uniqueness constraints, fetch request templates.
        #expect(model.configurations == ["Custom"])
        #expect(model.entities(forConfigurationName: "Custom")?.map(\.name) == ["NewEntity"])
        #expect(new.indexes.first?.name == "byIdentifierIndex")
        #expect(new.indexes.first?.elements.first?.property?.name == "identifier")
        #expect(new.uniquenessConstraints.first as? [String] == ["identifier"])
        let template = try #require(model.fetchRequestTemplate(forName: "ObjectIDFetchRequest"))
        #expect(template.resultType == .managedObjectIDResultType)
        #expect(template.predicate != nil)
        #expect(model.fetchRequestTemplatesByName.count == 3)
        // Version hashes are stable and differ between entities.
        #expect(main.versionHash == main.versionHash)
        #expect(main.versionHash != child.versionHash)
        #expect(main.versionHash.count == 32)
    }

    @Test func malformedXMLNamesFileAndLine() throws {
        let directory = TestSupport.temporaryDirectory()
        let file = directory.appendingPathComponent("contents")
        try "<?xml version=\"1.0\"?>\n<model>\n  <entity name=\"A\">\n    <attribute name=\"x\" attributeType=\"Integer 32\"\n</model>\n".write(to: file, atomically: true, encoding: .utf8)
        let error = try #require(throws: NSError.self) { try NSManagedObjectModel.load(contentsOf: file) }
        #expect(error.domain == NSCocoaErrorDomain)
        #expect(error.code == 259)
        #expect(error.localizedDescription.contains(file.path))
        #expect(error.userInfo["NSLineNumber"] as? Int != nil)
        #expect(NSManagedObjectModel(contentsOf: file) == nil)

        try "<?xml version=\"1.0\"?>\n<model>\n  <entity name=\"A\">\n    <attribute name=\"x\" attributeType=\"Integer 99\"/>\n  </entity>\n</model>\n".write(to: file, atomically: true, encoding: .utf8)
        let typeError = try #require(throws: NSError.self) { try NSManagedObjectModel.load(contentsOf: file) }
        #expect(typeError.localizedDescription.contains(":4:"))
        #expect(typeError.localizedDescription.contains("Integer 99"))

        // Xcode 15's composite attributes are refused by name, not as a stray <attribute>.
        try """
            <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
            <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0">
                <entity name="Person" representedClassName="Person" syncable="YES">
                    <attribute name="home" optional="YES" attributeType="Composite" composite="Address"/>
                </entity>
                <compositeAttribute name="Address">
                    <attribute name="city" optional="YES" attributeType="String"/>
                </compositeAttribute>
            </model>
            """.write(to: file, atomically: true, encoding: .utf8)
        let compositeError = try #require(throws: NSError.self) { try NSManagedObjectModel.load(contentsOf: file) }
        #expect(compositeError.code == 259)
        #expect(compositeError.localizedDescription.contains("composite attributes"))
        #expect(compositeError.localizedDescription.contains(":6:"))

        let missing = directory.appendingPathComponent("nothing.xcdatamodeld")
        #expect(throws: NSError.self) { try NSManagedObjectModel.load(contentsOf: missing) }
    }

    @Test func modelsBuiltInCode() throws {
        let model = TestSupport.makeCompanyModel()
        let employee = try #require(model.entitiesByName["Employee"])
        let manager = try #require(model.entitiesByName["Manager"])
        #expect(manager.superentity === employee)
        #expect(manager.isKindOf(entity: employee))
        #expect(!employee.isKindOf(entity: manager))
        #expect(manager.propertiesByName["salary"] != nil)
        #expect(employee.relationships(forDestination: model.entitiesByName["Department"]!).map(\.name) == ["department"])
        model.setEntities([employee, manager], forConfigurationName: "People")
        #expect(model.entities(forConfigurationName: "People")?.count == 2)
        #expect(model.entities(forConfigurationName: nil)?.count == 6)
    }
}
