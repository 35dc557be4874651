import Foundation
import OpenCoreData
import Testing

/// Foundation's bridged values, as code written for Apple's platforms sets them: through
/// key-value coding and through properties declared with the Foundation types Xcode generates.
@Suite("Bridged values")
struct BridgedValueTests {
    /// Every attribute type, and a to-many and an ordered to-many relationship.
    static func model() -> NSManagedObjectModel {
        let reading = NSEntityDescription(name: "Reading", className: "BridgedReading")
        let tag = NSEntityDescription(name: "Tag", className: "NSManagedObject")
        let tags = NSRelationshipDescription(name: "tags", destination: tag, toMany: true)
        let tagReading = NSRelationshipDescription(name: "reading", destination: reading)
        let steps = NSRelationshipDescription(name: "steps", destination: tag, toMany: true, ordered: true)
        let stepReading = NSRelationshipDescription(name: "stepOf", destination: reading)
        TestSupport.pair(tags, tagReading)
        TestSupport.pair(steps, stepReading)
        reading.properties = [
            NSAttributeDescription(name: "small", type: .integer16AttributeType),
            NSAttributeDescription(name: "medium", type: .integer32AttributeType),
            NSAttributeDescription(name: "large", type: .integer64AttributeType),
            NSAttributeDescription(name: "ratio", type: .doubleAttributeType),
            NSAttributeDescription(name: "level", type: .floatAttributeType),
            NSAttributeDescription(name: "flag", type: .booleanAttributeType),
            NSAttributeDescription(name: "price", type: .decimalAttributeType),
            NSAttributeDescription(name: "label", type: .stringAttributeType),
            NSAttributeDescription(name: "taken", type: .dateAttributeType),
            NSAttributeDescription(name: "payload", type: .binaryDataAttributeType),
            NSAttributeDescription(name: "identifier", type: .UUIDAttributeType),
            NSAttributeDescription(name: "link", type: .URIAttributeType),
            tags, steps,
        ]
        tag.properties = [NSAttributeDescription(name: "name", type: .stringAttributeType), tagReading, stepReading]
        let model = NSManagedObjectModel()
        model.entities = [reading, tag]
        return model
    }

    static func stack() throws -> (NSPersistentStoreCoordinator, NSManagedObjectContext) {
        let (coordinator, _) = try TestSupport.coordinator(model())
        return (coordinator, TestSupport.context(coordinator))
    }

    /// Saves, then reads the object back in a fresh context of the same coordinator (which the
    /// caller keeps: an object doesn't keep its context alive).
    static func roundTrip(_ object: NSManagedObject, in context: NSManagedObjectContext, to fresh: NSManagedObjectContext) throws -> NSManagedObject {
        try context.save()
        return try fresh.existingObject(with: object.objectID)
    }

    @Test("setValue with NSNumber, CGFloat and Foundation objects stores each attribute's own type")
    func keyValueCoding() throws {
        let (coordinator, context) = try Self.stack()
        let fresh = TestSupport.context(coordinator)
        let reading = NSEntityDescription.insertNewObject(forEntityName: "Reading", into: context)
        let date = Date(timeIntervalSinceReferenceDate: 700_000_000.25)
        let uuid = UUID()
        reading.setValue(NSNumber(value: 12), forKey: "small")
        reading.setValue(NSNumber(value: 70_000), forKey: "medium")
        reading.setValue(NSNumber(value: Int64(1) << 40), forKey: "large")
        reading.setValue(NSNumber(value: 0.25), forKey: "ratio")
        reading.setValue(CGFloat(1.5), forKey: "level")
        reading.setValue(NSNumber(value: true), forKey: "flag")
        reading.setValue(NSDecimalNumber(string: "12.34"), forKey: "price")
        reading.setValue(NSString(string: "label"), forKey: "label")
        reading.setValue(NSDate(timeIntervalSinceReferenceDate: date.timeIntervalSinceReferenceDate), forKey: "taken")
        reading.setValue(NSData(bytes: [1, 2, 3] as [UInt8], length: 3), forKey: "payload")
        reading.setValue(NSUUID(uuidString: uuid.uuidString), forKey: "identifier")
        reading.setValue(NSURL(string: "https://example.com/a"), forKey: "link")

        // The live object already holds the canonical values.
        #expect(reading.value(forKey: "small") as? Int16 == 12)
        #expect(reading.value(forKey: "flag") as? Bool == true)
        #expect(reading.value(forKey: "level") as? Float == 1.5)

        let fetched = try Self.roundTrip(reading, in: context, to: fresh)
        #expect(fetched.value(forKey: "small") as? Int16 == 12)
        #expect(fetched.value(forKey: "medium") as? Int32 == 70_000)
        #expect(fetched.value(forKey: "large") as? Int64 == Int64(1) << 40)
        #expect(fetched.value(forKey: "ratio") as? Double == 0.25)
        #expect(fetched.value(forKey: "level") as? Float == 1.5)
        #expect(fetched.value(forKey: "flag") as? Bool == true)
        #expect(fetched.value(forKey: "price") as? Decimal == Decimal(string: "12.34"))
        #expect(fetched.value(forKey: "label") as? String == "label")
        #expect(fetched.value(forKey: "taken") as? Date == date)
        #expect(fetched.value(forKey: "payload") as? Data == Data([1, 2, 3]))
        #expect(fetched.value(forKey: "identifier") as? UUID == uuid)
        #expect(fetched.value(forKey: "link") as? URL == URL(string: "https://example.com/a"))
    }

    @Test("numbers convert as Apple stores them: any NSNumber on a Boolean, fractions truncated, widths narrowed")
    func numberConversions() throws {
        let (coordinator, context) = try Self.stack()
        let fresh = TestSupport.context(coordinator)
        let reading = NSEntityDescription.insertNewObject(forEntityName: "Reading", into: context)
        reading.setValue(NSNumber(value: 2), forKey: "flag")           // boolValue
        reading.setValue(NSNumber(value: 7.9), forKey: "medium")       // int64Value truncates
        reading.setValue(NSNumber(value: -7.9), forKey: "small")
        reading.setValue(NSNumber(value: 0.1), forKey: "level")        // floatValue rounds
        reading.setValue(0.1, forKey: "ratio")                         // a Double literal
        reading.setValue(NSNumber(value: Int16(3)), forKey: "large")
        reading.setValue(NSNumber(value: 5), forKey: "price")
        let fetched = try Self.roundTrip(reading, in: context, to: fresh)
        #expect(fetched.value(forKey: "flag") as? Bool == true)
        #expect(fetched.value(forKey: "medium") as? Int32 == 7)
        #expect(fetched.value(forKey: "small") as? Int16 == -7)
        #expect(fetched.value(forKey: "level") as? Float == Float(0.1))
        #expect(fetched.value(forKey: "ratio") as? Double == 0.1)
        #expect(fetched.value(forKey: "large") as? Int64 == 3)
        #expect(fetched.value(forKey: "price") as? Decimal == 5)
        // A Double set on a Float attribute is rounded to the nearest Float, as floatValue does.
        reading.setValue(Double(1) / 3, forKey: "level")
        #expect(reading.value(forKey: "level") as? Float == Float(1) / 3)
    }

    @Test("a number out of an integer attribute's range fails validation at save with 1610 or 1620, and nothing is saved",
          arguments: [("small", NSNumber(value: 100_000), NSValidationNumberTooLargeError),
                      ("small", NSNumber(value: -40_000), NSValidationNumberTooSmallError),
                      ("medium", NSNumber(value: Int64(1) << 40), NSValidationNumberTooLargeError),
                      ("large", NSNumber(value: UInt64.max), NSValidationNumberTooLargeError),
                      ("large", NSNumber(value: 1e300), NSValidationNumberTooLargeError)])
    func outOfRange(key: String, number: NSNumber, code: Int) throws {
        let (coordinator, context) = try Self.stack()
        let reading = NSEntityDescription.insertNewObject(forEntityName: "Reading", into: context)
        reading.setValue(number, forKey: key)
        let error = try #require(throws: NSError.self) { try context.save() }
        #expect(error.domain == NSCocoaErrorDomain)
        #expect(error.code == code)
        #expect(error.userInfo[NSValidationKeyErrorKey] as? String == key)
        let other = TestSupport.context(coordinator)
        #expect(try other.count(for: NSFetchRequest<NSManagedObject>(entityName: "Reading")) == 0)
    }

    @Test("an Int that doesn't fit is refused the same way, never wrapped")
    func swiftIntegerOutOfRange() throws {
        let (_, context) = try Self.stack()
        let reading = NSEntityDescription.insertNewObject(forEntityName: "Reading", into: context)
        reading.setValue(40_000, forKey: "small")
        let error = try #require(throws: NSError.self) { try context.save() }
        #expect(error.code == NSValidationNumberTooLargeError)
    }

    @Test("properties declared with the Foundation types Xcode generates read and write")
    func xcodeGeneratedTypes() throws {
        let (coordinator, context) = try Self.stack()
        let fresh = TestSupport.context(coordinator)
        let reading = BridgedReading(context: context)
        reading.small = NSNumber(value: 3)
        reading.medium = 40
        reading.large = NSNumber(value: Int64.max)
        reading.ratio = 2.5
        reading.level = NSNumber(value: Float(0.5))
        reading.flag = NSNumber(value: true)
        reading.price = NSDecimalNumber(string: "9.99")
        reading.label = "label"
        reading.taken = NSDate(timeIntervalSinceReferenceDate: 1_000)
        reading.payload = NSData(bytes: [9] as [UInt8], length: 1)
        reading.identifier = NSUUID()
        reading.link = NSURL(string: "file:///tmp/x")
        let tag = NSEntityDescription.insertNewObject(forEntityName: "Tag", into: context)
        let step = NSEntityDescription.insertNewObject(forEntityName: "Tag", into: context)
        reading.tags = NSSet(object: tag)
        reading.steps = NSOrderedSet(array: [step, tag])
        #expect(reading.flag?.boolValue == true)
        #expect(reading.small?.int16Value == 3)
        #expect(reading.tags?.count == 1)
        #expect((reading.value(forKey: "tags") as? Set<NSManagedObject>)?.count == 1)
        #expect(reading.steps?.count == 2)

        let fetched = try #require(try Self.roundTrip(reading, in: context, to: fresh) as? BridgedReading)
        #expect(fetched.small == NSNumber(value: 3))
        #expect(fetched.medium?.int32Value == 40)
        #expect(fetched.large?.int64Value == Int64.max)
        #expect(fetched.ratio?.doubleValue == 2.5)
        #expect(fetched.level?.floatValue == 0.5)
        #expect(fetched.flag?.boolValue == true)
        #expect(fetched.price == NSDecimalNumber(string: "9.99"))
        #expect(fetched.label == "label")
        #expect(fetched.taken == NSDate(timeIntervalSinceReferenceDate: 1_000))
        #expect(fetched.payload == NSData(bytes: [9] as [UInt8], length: 1))
        #expect(fetched.identifier == reading.identifier)
        #expect(fetched.link == NSURL(string: "file:///tmp/x"))
        #expect(fetched.tags?.count == 1)
        #expect(fetched.steps?.count == 2)
        #expect((fetched.steps?.firstObject as? NSManagedObject)?.objectID == step.objectID)

        // nil reads as nil through every Foundation type.
        let empty = BridgedReading(context: context)
        #expect(empty.small == nil && empty.flag == nil && empty.price == nil && empty.taken == nil && empty.payload == nil)
        #expect(empty.tags?.count ?? 0 == 0)
    }

    @Test("default values set in code with Swift's Int, Double, Bool and NSNumber are stored as their attributes' types")
    func defaultValuesInCode() throws {
        let reading = NSEntityDescription(name: "Reading", properties: [
            NSAttributeDescription(name: "small", type: .integer16AttributeType, defaultValue: 3),
            NSAttributeDescription(name: "large", type: .integer64AttributeType, defaultValue: 7),
            NSAttributeDescription(name: "ratio", type: .doubleAttributeType, defaultValue: 1),
            NSAttributeDescription(name: "level", type: .floatAttributeType, defaultValue: 0.5),
            NSAttributeDescription(name: "flag", type: .booleanAttributeType, defaultValue: NSNumber(value: true)),
            NSAttributeDescription(name: "price", type: .decimalAttributeType, defaultValue: 2),
        ])
        let model = NSManagedObjectModel()
        model.entities = [reading]
        let (coordinator, _) = try TestSupport.coordinator(model)
        let context = TestSupport.context(coordinator)
        let object = NSEntityDescription.insertNewObject(forEntityName: "Reading", into: context)
        try context.save()
        let stored = try TestSupport.context(coordinator).existingObject(with: object.objectID)
        #expect(stored.value(forKey: "small") as? Int16 == 3)
        #expect(stored.value(forKey: "large") as? Int64 == 7)
        #expect(stored.value(forKey: "ratio") as? Double == 1)
        #expect(stored.value(forKey: "level") as? Float == 0.5)
        #expect(stored.value(forKey: "flag") as? Bool == true)
        #expect(stored.value(forKey: "price") as? Decimal == 2)
    }
}

/// A class as Xcode generates it with "Use Scalar Type" off: Foundation types throughout.
final class BridgedReading: NSManagedObject {
    @Managed var small: NSNumber?
    @Managed var medium: NSNumber?
    @Managed var large: NSNumber?
    @Managed var ratio: NSNumber?
    @Managed var level: NSNumber?
    @Managed var flag: NSNumber?
    @Managed var price: NSDecimalNumber?
    @Managed var label: String?
    @Managed var taken: NSDate?
    @Managed var payload: NSData?
    @Managed var identifier: NSUUID?
    @Managed var link: NSURL?
    @Managed var tags: NSSet?
    @Managed var steps: NSOrderedSet?
}
