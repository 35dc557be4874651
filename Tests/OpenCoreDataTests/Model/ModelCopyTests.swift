import Foundation
import OpenCoreData
import Testing

/// `copy()` of models and descriptions, as code written for Apple's platforms uses it: to change a
/// model that a coordinator already uses, or to reuse a description elsewhere.
@Suite struct ModelCopyTests {
    private func kitchenSink() throws -> NSManagedObjectModel {
        try NSManagedObjectModel.load(contentsOf: TestSupport.modelURL("swiftgen-kitchensink", "Model").appendingPathComponent("Model 2.xcdatamodel"))
    }

    /// The copy says everything the original says (inheritance, derived attributes, ordered and
    /// many-to-many relationships, a fetched property, templates, a configuration, indexes, a
    /// uniqueness constraint, version hashes), in descriptions of its own that point to each other.
    @Test func aCopyIsEqualAndSeparate() throws {
        let original = try kitchenSink()
        let copy = try #require(original.copy() as? NSManagedObjectModel)
        #expect(copy !== original)
        #expect(CompiledModelTests.summary(copy) == CompiledModelTests.summary(original))
        #expect(copy.entitiesByName == original.entitiesByName)
        #expect(copy.entityVersionHashesByName == original.entityVersionHashesByName)
        #expect(copy.versionChecksum == original.versionChecksum)
        for entity in copy.entities {
            let name = try #require(entity.name)
            #expect(entity !== original.entitiesByName[name])
            #expect(entity.managedObjectModel === copy)
            if let superentity = entity.superentity { #expect(superentity === copy.entitiesByName[superentity.name!]) }
            for subentity in entity.subentities { #expect(subentity === copy.entitiesByName[subentity.name!]) }
            for relationship in entity.relationshipsByName.values {
                let destination = try #require(relationship.destinationEntity)
                #expect(destination === copy.entitiesByName[destination.name!], "\(name).\(relationship.name) points into the copy")
                if let inverse = relationship.inverseRelationship {
                    #expect(inverse.entity === destination || destination.isKindOf(entity: inverse.entity), "\(name).\(relationship.name)'s inverse is the copy's")
                    #expect(copy.entities.contains { $0 === inverse.entity })
                }
            }
        }
        let ledger = NSFetchRequest<NSFetchRequestResult>()
        ledger.entity = original.entitiesByName["MainEntity"]
        original.setFetchRequestTemplate(ledger, forName: "WithEntity")
        let withTemplate = try #require(original.copy() as? NSManagedObjectModel)
        #expect(withTemplate.fetchRequestTemplate(forName: "WithEntity")?.entity === withTemplate.entitiesByName["MainEntity"])
    }

    /// A model in use can't change, but its copy can; the original and its store are untouched,
    /// and the copy opens a store of its own.
    @Test func aCopyOfAModelInUseCanChange() throws {
        let model = MergePolicyTests.makeModel()
        let (coordinator, url) = try TestSupport.coordinator(model)
        defer { if let url { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) } }
        _ = coordinator
        let copy = try #require(model.copy() as? NSManagedObjectModel)
        let item = try #require(copy.entitiesByName["Item"])
        let sku = NSAttributeDescription(name: "sku", type: .stringAttributeType)
        item.properties += [sku]
        #expect(copy.entitiesByName["Item"]?.attributesByName["sku"] != nil)
        #expect(model.entitiesByName["Item"]?.attributesByName["sku"] == nil)
        #expect(copy.entityVersionHashesByName["Item"] != model.entityVersionHashesByName["Item"])

        let context = try TestSupport.context(TestSupport.coordinator(copy, type: NSInMemoryStoreType).0)
        let object = NSEntityDescription.insertNewObject(forEntityName: "Item", into: context)
        object.setValue("A-1", forKey: "sku")
        try context.save()
    }

    /// Descriptions copied alone keep their settings and belong to no entity.
    @Test func descriptionsCopyTheirSettings() throws {
        let original = try kitchenSink()
        for entity in original.entities {
            let copy = try #require(entity.copy() as? NSEntityDescription)
            #expect(copy.name == entity.name)
            #expect(copy.managedObjectModel == nil)
            #expect(copy.declaredProperties.map(\.name) == entity.declaredProperties.map(\.name))
            for (copied, property) in zip(copy.declaredProperties, entity.declaredProperties) {
                #expect(copied !== property)
                #expect(copied.entity === copy)
                #expect(copied.versionHash == property.versionHash, "\(entity.name!).\(property.name)")
                let alone = try #require(property.copy() as? NSPropertyDescription)
                #expect(type(of: alone) == type(of: property))
                #expect(alone.entity == nil)
                #expect(alone.versionHash == property.versionHash)
            }
        }
        let sum = NSExpressionDescription()
        sum.name = "total"
        sum.expression = NSExpression(forFunction: "sum:", arguments: [NSExpression(forKeyPath: "price")])
        sum.expressionResultType = .integer64AttributeType
        let copiedSum = try #require(sum.copy() as? NSExpressionDescription)
        #expect(copiedSum.name == "total" && copiedSum.expressionResultType == .integer64AttributeType)
        #expect(copiedSum.expression?.description == sum.expression?.description)
    }

    /// Merging copies the entities: the merged models keep theirs.
    @Test func mergingLeavesTheModelsAsTheyWere() throws {
        let bowTies = try TestSupport.model("bowties", "BowTies")
        let dogWalk = try TestSupport.model("dogwalk", "DogWalk")
        let merged = try #require(NSManagedObjectModel(byMerging: [bowTies, dogWalk]))
        #expect(Set(merged.entitiesByName.keys) == Set(bowTies.entitiesByName.keys).union(dogWalk.entitiesByName.keys))
        #expect(bowTies.entities.allSatisfy { $0.managedObjectModel === bowTies })
        #expect(dogWalk.entities.allSatisfy { $0.managedObjectModel === dogWalk })
        #expect(merged.entities.allSatisfy { $0.managedObjectModel === merged })
        let walks = try #require(merged.entitiesByName["Dog"]?.relationshipsByName["walks"])
        #expect(walks.destinationEntity === merged.entitiesByName["Walk"])
        #expect(walks.inverseRelationship === merged.entitiesByName["Walk"]?.relationshipsByName["dog"])
    }
}
