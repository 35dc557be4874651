import Foundation
import OpenCoreData
import Testing

/// Core Data's errors handled as Swift code on Apple's platforms handles them: cast to
/// `CocoaError`, matched by `CocoaError.Code` members, read through its properties.
@Suite struct CocoaErrorTests {
    /// Every Core Data code has its `CocoaError.Code` and `CocoaError` member, equal to the
    /// `NS…Error` constant.
    @Test func codesEqualCoreDatasConstants() {
        let codes: [(CocoaError.Code, CocoaError.Code, Int)] = [
            (.managedObjectValidation, CocoaError.managedObjectValidation, NSManagedObjectValidationError),
            (.validationMultipleErrors, CocoaError.validationMultipleErrors, NSValidationMultipleErrorsError),
            (.validationMissingMandatoryProperty, CocoaError.validationMissingMandatoryProperty, NSValidationMissingMandatoryPropertyError),
            (.validationRelationshipLacksMinimumCount, CocoaError.validationRelationshipLacksMinimumCount, NSValidationRelationshipLacksMinimumCountError),
            (.validationRelationshipExceedsMaximumCount, CocoaError.validationRelationshipExceedsMaximumCount, NSValidationRelationshipExceedsMaximumCountError),
            (.validationRelationshipDeniedDelete, CocoaError.validationRelationshipDeniedDelete, NSValidationRelationshipDeniedDeleteError),
            (.validationNumberTooLarge, CocoaError.validationNumberTooLarge, NSValidationNumberTooLargeError),
            (.validationNumberTooSmall, CocoaError.validationNumberTooSmall, NSValidationNumberTooSmallError),
            (.validationDateTooLate, CocoaError.validationDateTooLate, NSValidationDateTooLateError),
            (.validationDateTooSoon, CocoaError.validationDateTooSoon, NSValidationDateTooSoonError),
            (.validationInvalidDate, CocoaError.validationInvalidDate, NSValidationInvalidDateError),
            (.validationStringTooLong, CocoaError.validationStringTooLong, NSValidationStringTooLongError),
            (.validationStringTooShort, CocoaError.validationStringTooShort, NSValidationStringTooShortError),
            (.validationStringPatternMatching, CocoaError.validationStringPatternMatching, NSValidationStringPatternMatchingError),
            (.managedObjectContextLocking, CocoaError.managedObjectContextLocking, NSManagedObjectContextLockingError),
            (.persistentStoreCoordinatorLocking, CocoaError.persistentStoreCoordinatorLocking, NSPersistentStoreCoordinatorLockingError),
            (.managedObjectReferentialIntegrity, CocoaError.managedObjectReferentialIntegrity, NSManagedObjectReferentialIntegrityError),
            (.managedObjectExternalRelationship, CocoaError.managedObjectExternalRelationship, NSManagedObjectExternalRelationshipError),
            (.managedObjectMerge, CocoaError.managedObjectMerge, NSManagedObjectMergeError),
            (.managedObjectConstraintMerge, CocoaError.managedObjectConstraintMerge, NSManagedObjectConstraintMergeError),
            (.persistentStoreInvalidType, CocoaError.persistentStoreInvalidType, NSPersistentStoreInvalidTypeError),
            (.persistentStoreTypeMismatch, CocoaError.persistentStoreTypeMismatch, NSPersistentStoreTypeMismatchError),
            (.persistentStoreIncompatibleSchema, CocoaError.persistentStoreIncompatibleSchema, NSPersistentStoreIncompatibleSchemaError),
            (.persistentStoreSave, CocoaError.persistentStoreSave, NSPersistentStoreSaveError),
            (.persistentStoreIncompleteSave, CocoaError.persistentStoreIncompleteSave, NSPersistentStoreIncompleteSaveError),
            (.persistentStoreSaveConflicts, CocoaError.persistentStoreSaveConflicts, NSPersistentStoreSaveConflictsError),
            (.coreData, CocoaError.coreData, NSCoreDataError),
            (.persistentStoreOperation, CocoaError.persistentStoreOperation, NSPersistentStoreOperationError),
            (.persistentStoreOpen, CocoaError.persistentStoreOpen, NSPersistentStoreOpenError),
            (.persistentStoreTimeout, CocoaError.persistentStoreTimeout, NSPersistentStoreTimeoutError),
            (.persistentStoreUnsupportedRequestType, CocoaError.persistentStoreUnsupportedRequestType, NSPersistentStoreUnsupportedRequestTypeError),
            (.persistentStoreIncompatibleVersionHash, CocoaError.persistentStoreIncompatibleVersionHash, NSPersistentStoreIncompatibleVersionHashError),
            (.migration, CocoaError.migration, NSMigrationError),
            (.migrationCancelled, CocoaError.migrationCancelled, NSMigrationCancelledError),
            (.migrationMissingSourceModel, CocoaError.migrationMissingSourceModel, NSMigrationMissingSourceModelError),
            (.migrationMissingMappingModel, CocoaError.migrationMissingMappingModel, NSMigrationMissingMappingModelError),
            (.migrationManagerSourceStore, CocoaError.migrationManagerSourceStore, NSMigrationManagerSourceStoreError),
            (.migrationManagerDestinationStore, CocoaError.migrationManagerDestinationStore, NSMigrationManagerDestinationStoreError),
            (.entityMigrationPolicy, CocoaError.entityMigrationPolicy, NSEntityMigrationPolicyError),
            (.sqlite, CocoaError.sqlite, NSSQLiteError),
            (.inferredMappingModel, CocoaError.inferredMappingModel, NSInferredMappingModelError),
            (.externalRecordImport, CocoaError.externalRecordImport, NSExternalRecordImportError),
        ]
        #expect(codes.count == 42)
        for (member, errorMember, constant) in codes {
            #expect(member.rawValue == constant)
            #expect(errorMember == member)
        }
    }

    /// A uniqueness-constraint conflict is caught as a `CocoaError` with the code's member.
    @Test func aConstraintConflictIsACocoaError() throws {
        let (coordinator, url) = try TestSupport.coordinator(MergePolicyTests.makeModel())
        defer { if let url { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) } }
        let context = TestSupport.context(coordinator)
        for label in ["first", "second"] {
            let tag = NSEntityDescription.insertNewObject(forEntityName: "Tag", into: context)
            tag.setValue("swift", forKey: "code")
            tag.setValue(label, forKey: "label")
            if label == "first" { try context.save() }
        }
        do {
            try context.save()
            Issue.record("the save should conflict")
        } catch let error as CocoaError where error.code == .managedObjectConstraintMerge {
            #expect(error.errorCode == NSManagedObjectConstraintMergeError)
            #expect((error.userInfo[NSPersistentStoreSaveConflictsErrorKey] as? [NSConstraintConflict])?.count == 1)
            #expect(error.persistentStoreSaveConflicts == nil, "constraint conflicts are not merge conflicts")
        }
    }

    /// A validation error names its key, value and predicate through `CocoaError`'s properties.
    @Test func aValidationErrorNamesItsKey() throws {
        let entity = NSEntityDescription(name: "Item", className: "NSManagedObject")
        let name = NSAttributeDescription(name: "name", type: .stringAttributeType)
        name.isOptional = false
        let quantity = NSAttributeDescription(name: "quantity", type: .integer64AttributeType)
        quantity.setValidationPredicates([NSPredicate(format: "SELF >= 0")], withValidationWarnings: ["quantity must not be negative"])
        entity.properties = [name, quantity]
        let model = NSManagedObjectModel()
        model.entities = [entity]
        let context = try TestSupport.context(TestSupport.coordinator(model, type: NSInMemoryStoreType).0)
        let item = NSEntityDescription.insertNewObject(forEntityName: "Item", into: context)
        do {
            try context.save()
            Issue.record("the save should fail validation")
        } catch let error as CocoaError {
            #expect(error.code == .validationMissingMandatoryProperty)
            #expect(error.validationKey == "name")
        }
        item.setValue("bolt", forKey: "name")
        item.setValue(Int64(-1), forKey: "quantity")
        do {
            try context.save()
            Issue.record("the save should fail validation")
        } catch let error as CocoaError {
            #expect(error.validationKey == "quantity")
            #expect(error.validationValue as? Int64 == -1)
            #expect(error.validationPredicate?.predicateFormat == "SELF >= 0")
        }
    }
}
