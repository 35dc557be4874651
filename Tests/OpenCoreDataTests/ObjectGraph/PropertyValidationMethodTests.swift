import Foundation
import OpenCoreData
@testable import OpenCoreDataCore
import Testing

// Property-level validation as Apple's validation guide writes it: `validate<Key>` methods that
// Core Data finds by name and calls from `validateValue(_:forKey:)` for every property when an
// object is inserted or updated. Without Objective-C the class routes its keys in an override of
// `validateValue(_:forKey:)`, which saves must call for every property.

final class GuardedKennel: NSManagedObject {
    @Managed var name: String?
    @Managed var capacity: Int64
    @Managed var keeper: GuardedKeeper?

    /// The keys the save asked to validate, in order.
    var validatedKeys: [String] = []

    override func validateValue(_ value: inout Any?, forKey key: String) throws {
        validatedKeys.append(key)
        try super.validateValue(&value, forKey: key)
        switch key {
        case "name": try validateName(&value)
        case "capacity": try validateCapacity(value)
        case "keeper": try validateKeeper(value)
        default: break
        }
    }

    /// A name has a letter in it; surrounding spaces are trimmed for whoever asked.
    func validateName(_ value: inout Any?) throws {
        guard let name = value as? String, name.contains(where: \.isLetter) else {
            throw NSError(domain: NSCocoaErrorDomain, code: NSValidationStringTooShortError, userInfo: [
                NSLocalizedDescriptionKey: "A kennel's name needs a letter.",
                NSValidationObjectErrorKey: self, NSValidationKeyErrorKey: "name",
            ])
        }
        value = name.trimmingCharacters(in: .whitespaces)
    }

    /// Capacity is even (runs are built in pairs).
    func validateCapacity(_ value: Any?) throws {
        guard let capacity = value as? Int64, capacity % 2 == 0 else {
            throw NSError(domain: NSCocoaErrorDomain, code: NSManagedObjectValidationError, userInfo: [
                NSLocalizedDescriptionKey: "A kennel's capacity is even.",
                NSValidationObjectErrorKey: self, NSValidationKeyErrorKey: "capacity",
            ])
        }
    }

    /// A keeper, when there is one, is of age.
    func validateKeeper(_ value: Any?) throws {
        guard let keeper = value as? GuardedKeeper else { return }
        if keeper.age < 18 {
            throw NSError(domain: NSCocoaErrorDomain, code: NSManagedObjectValidationError, userInfo: [
                NSLocalizedDescriptionKey: "A keeper is of age.", NSValidationObjectErrorKey: self, NSValidationKeyErrorKey: "keeper",
            ])
        }
    }
}

final class GuardedKeeper: NSManagedObject {
    @Managed var age: Int16
    @Managed var kennels: Set<GuardedKennel>
}

/// A base class of the app's that validates, and a class that inherits its validation.
class AuditedRecord: NSManagedObject {
    override func validateValue(_ value: inout Any?, forKey key: String) throws {
        try super.validateValue(&value, forKey: key)
    }
}
final class AuditedInvoice: AuditedRecord {}

/// A class whose `validateValue(_:forKey:)` accepts every value without calling `super`.
final class TrustingShelter: NSManagedObject {
    override func validateValue(_ value: inout Any?, forKey key: String) throws {}
}

@Suite struct PropertyValidationMethodTests {
    static let model: NSManagedObjectModel = {
        let kennel = NSEntityDescription(name: "GuardedKennel", className: "GuardedKennel")
        let keeper = NSEntityDescription(name: "GuardedKeeper", className: "GuardedKeeper")
        let (toKeeper, toKennels) = TestSupport.relationships("keeper", from: kennel, inverse: "kennels", to: keeper, inverseToMany: true)
        let capacity = NSAttributeDescription(name: "capacity", type: .integer64AttributeType)
        capacity.isOptional = false
        capacity.defaultValue = Int64(2)
        kennel.properties = [NSAttributeDescription(name: "name", type: .stringAttributeType), capacity, toKeeper]
        keeper.properties = [NSAttributeDescription(name: "age", type: .integer16AttributeType), toKennels]
        let model = NSManagedObjectModel()
        model.entities = [kennel, keeper]
        return model
    }()

    /// Shelters (`TrustingShelter`) and their dogs.
    static let shelterModel: NSManagedObjectModel = {
        let shelter = NSEntityDescription(name: "TrustingShelter", className: "TrustingShelter")
        let dog = NSEntityDescription(name: "ShelterDog", className: "NSManagedObject")
        let (toShelter, toDogs) = TestSupport.relationships("shelter", from: dog, inverse: "dogs", to: shelter, inverseToMany: true)
        shelter.properties = [NSAttributeDescription(name: "name", type: .stringAttributeType), toDogs]
        dog.properties = [NSAttributeDescription(name: "name", type: .stringAttributeType), toShelter]
        let model = NSManagedObjectModel()
        model.entities = [shelter, dog]
        return model
    }()

    static func context() throws -> NSManagedObjectContext {
        TestSupport.context(try TestSupport.coordinator(model).0)
    }

    @Test func anInsertCallsTheClassForEveryPropertyAndAFailureStopsTheSave() throws {
        let context = try Self.context()
        let kennel = GuardedKennel(context: context)
        kennel.name = "  "
        let error = try #require(throws: NSError.self) { try context.save() }
        #expect(error.domain == NSCocoaErrorDomain && error.code == NSValidationStringTooShortError)
        #expect(error.userInfo[NSValidationKeyErrorKey] as? String == "name")
        #expect(Set(kennel.validatedKeys) == ["name", "capacity", "keeper"])
        #expect(context.hasChanges && kennel.isInserted, "nothing was saved")

        kennel.name = " Northside "
        try context.save()
        #expect(kennel.name == " Northside ", "a replacement made while validating at save is not stored")
        #expect(try context.count(for: NSFetchRequest<GuardedKennel>(entityName: "GuardedKennel")) == 1)
    }

    /// An override that doesn't call `super` skips the model's rules, but not the check that a
    /// save writes no reference to an object another context deleted: that would break the store.
    @Test func aDanglingReferenceFailsTheSaveThoughTheOverrideSkipsSuper() throws {
        let coordinator = try TestSupport.coordinator(Self.shelterModel).0
        let setUp = TestSupport.context(coordinator)
        let shelter = TrustingShelter(context: setUp)
        let dog = NSEntityDescription.insertNewObject(forEntityName: "ShelterDog", into: setUp)
        try setUp.save()

        let here = TestSupport.context(coordinator)
        let heldDog = here.object(with: dog.objectID)
        let there = TestSupport.context(coordinator)
        here.mergeChanges(fromContextDidSave: try RefreshTests.saved(there) { there.delete(there.object(with: dog.objectID)) })

        let mine = here.object(with: shelter.objectID)
        mine.mutableSetValue(forKey: "dogs").add(heldDog)
        let error = try #require(throws: NSError.self) { try here.save() }
        #expect(error.code == NSManagedObjectValidationError && error.userInfo[NSValidationKeyErrorKey] as? String == "dogs")
        mine.mutableSetValue(forKey: "dogs").remove(heldDog)
        try here.save()
    }

    @Test func anUpdateIsValidatedThroughTheClassToo() throws {
        let context = try Self.context()
        let kennel = GuardedKennel(context: context)
        kennel.name = "Hilltop"
        try context.save()
        kennel.capacity = 3
        let error = try #require(throws: NSError.self) { try context.save() }
        #expect(error.code == NSManagedObjectValidationError && error.userInfo[NSValidationKeyErrorKey] as? String == "capacity")
        kennel.capacity = 4
        try context.save()
        #expect(!context.hasChanges)
    }

    @Test func relationshipsAreHandedOverAsTheirDestinations() throws {
        let context = try Self.context()
        let kennel = GuardedKennel(context: context)
        kennel.name = "Riverside"
        let keeper = GuardedKeeper(context: context)
        keeper.age = 16
        kennel.keeper = keeper
        let error = try #require(throws: NSError.self) { try context.save() }
        #expect(error.userInfo[NSValidationKeyErrorKey] as? String == "keeper")
        keeper.age = 30
        try context.save()
    }

    @Test func severalFailuresCombineAsCoreDataDoes() throws {
        let context = try Self.context()
        let first = GuardedKennel(context: context)
        first.name = "?"
        let second = GuardedKennel(context: context)
        second.name = "Lakeside"
        second.capacity = 5
        let error = try #require(throws: NSError.self) { try context.save() }
        #expect(error.code == NSValidationMultipleErrorsError)
        let details = try #require(error.userInfo[NSDetailedErrorsKey] as? [NSError])
        #expect(Set(details.compactMap { $0.userInfo[NSValidationKeyErrorKey] as? String }) == ["name", "capacity"])
    }

    @Test func theModelsRulesStillApplyThroughSuper() throws {
        let context = try Self.context()
        let kennel = GuardedKennel(context: context)
        kennel.name = "Meadow"
        kennel.setValue(nil, forKey: "capacity")
        let error = try #require(throws: NSError.self) { try context.save() }
        #expect(error.code == NSValidationMissingMandatoryPropertyError || (error.userInfo[NSDetailedErrorsKey] as? [NSError])?.contains { $0.code == NSValidationMissingMandatoryPropertyError } == true)
    }

    @Test func callingValidateValueDirectlyGetsTheReplacement() throws {
        let context = try Self.context()
        let kennel = GuardedKennel(context: context)
        var value: Any? = "  Orchard  "
        try kennel.validateValue(&value, forKey: "name")
        #expect(value as? String == "Orchard")
        var bad: Any? = "42"
        #expect(throws: NSError.self) { try kennel.validateValue(&bad, forKey: "name") }
    }

    @Test func savesCallTheMethodOnlyForClassesThatOverrideIt() {
        #if !canImport(Darwin)
        #expect(ValidateValueOverrides.vtableEntry != nil, "the method's vtable entry is found in class metadata")
        #endif
        #expect(!ValidateValueOverrides.overridden(by: NSManagedObject.self))
        #expect(ValidateValueOverrides.overridden(by: GuardedKennel.self))
        #expect(!ValidateValueOverrides.overridden(by: GuardedKeeper.self))
        #expect(ValidateValueOverrides.overridden(by: AuditedRecord.self))
        #expect(ValidateValueOverrides.overridden(by: AuditedInvoice.self), "an override is inherited")
        #expect(!ValidateValueOverrides.overridden(by: Ledger.self))
    }
}
