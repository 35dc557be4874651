import Foundation
import OpenCoreData
import Testing

/// A transformer nobody registers: the model names its class, as Apple's `valueTransformerName`
/// does, and Foundation makes one from the class.
final class NamedOnlyListTransformer: ValueTransformer, @unchecked Sendable {
    override class func transformedValueClass() -> AnyClass { NSData.self }
    override class func allowsReverseTransformation() -> Bool { true }
    override func transformedValue(_ value: Any?) -> Any? { (value as? [String]).map { Data($0.joined(separator: "|").utf8) } }
    override func reverseTransformedValue(_ value: Any?) -> Any? { (value as? Data).map { String(decoding: $0, as: UTF8.self).split(separator: "|").map(String.init) } }
}

@Suite("Value transformers by class name")
struct ValueTransformerByNameTests {
    static func model(transformerName: String) -> NSManagedObjectModel {
        let item = NSEntityDescription(name: "Item", className: "NSManagedObject")
        let tags = NSAttributeDescription(name: "tags", type: .transformableAttributeType)
        tags.valueTransformerName = transformerName
        item.properties = [NSAttributeDescription(name: "title", type: .stringAttributeType), tags]
        let model = NSManagedObjectModel()
        model.entities = [item]
        return model
    }

    @Test("an unregistered transformer is made from the class the name gives", arguments: [
        "NamedOnlyListTransformer", "OpenCoreDataTests.NamedOnlyListTransformer",
    ])
    func madeFromClass(name: String) throws {
        let model = Self.model(transformerName: name)
        let (coordinator, url) = try TestSupport.coordinator(model)
        let context = TestSupport.context(coordinator)
        let item = NSEntityDescription.insertNewObject(forEntityName: "Item", into: context)
        item.setValue(["a", "b"], forKey: "tags")
        try context.save()
        #expect(ValueTransformer.named(NSValueTransformerName(name)) is NamedOnlyListTransformer)

        let reader = NSPersistentStoreCoordinator(managedObjectModel: model)
        try reader.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url, options: nil)
        let fetched = try TestSupport.context(reader).fetch(NSFetchRequest<NSManagedObject>(entityName: "Item"))
        #expect(fetched.first?.value(forKey: "tags") as? [String] == ["a", "b"])
    }

    @Test("a name no transformer or class answers to: save throws a validation error and writes nothing")
    func unknownName() throws {
        let (coordinator, _) = try TestSupport.coordinator(Self.model(transformerName: "NoSuchTransformerAnywhere"))
        let context = TestSupport.context(coordinator)
        let item = NSEntityDescription.insertNewObject(forEntityName: "Item", into: context)
        item.setValue("kept", forKey: "title")
        item.setValue(["a"], forKey: "tags")
        let error = try #require(throws: NSError.self) { try context.save() }
        #expect(error.domain == NSCocoaErrorDomain && error.code == NSManagedObjectValidationError)
        #expect(error.userInfo[NSValidationKeyErrorKey] as? String == "tags")
        #expect("\(error)".contains("NoSuchTransformerAnywhere"))
        #expect(try TestSupport.context(coordinator).count(for: NSFetchRequest<NSManagedObject>(entityName: "Item")) == 0)
        // Nothing lost: the object still holds its values, and a nil value saves.
        #expect(item.value(forKey: "title") as? String == "kept")
        item.setValue(nil, forKey: "tags")
        try context.save()
    }
}
