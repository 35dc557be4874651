import Foundation

// Core Data's codes in `NSCocoaErrorDomain` as `CocoaError.Code` members, and the user-info
// entries of its errors as `CocoaError` properties, so that errors are handled as on Apple's
// platforms: `catch let error as CocoaError where error.code == .managedObjectConstraintMerge`.
// Every error OpenCoreData throws in `NSCocoaErrorDomain` is an `NSError` that casts to `CocoaError`.

extension CocoaError.Code {
    /// Core Data's `NSManagedObjectValidationError`.
    public static var managedObjectValidation: CocoaError.Code { CocoaError.Code(rawValue: NSManagedObjectValidationError) }
    /// Core Data's `NSValidationMultipleErrorsError`.
    public static var validationMultipleErrors: CocoaError.Code { CocoaError.Code(rawValue: NSValidationMultipleErrorsError) }
    /// Core Data's `NSValidationMissingMandatoryPropertyError`.
    public static var validationMissingMandatoryProperty: CocoaError.Code { CocoaError.Code(rawValue: NSValidationMissingMandatoryPropertyError) }
    /// Core Data's `NSValidationRelationshipLacksMinimumCountError`.
    public static var validationRelationshipLacksMinimumCount: CocoaError.Code { CocoaError.Code(rawValue: NSValidationRelationshipLacksMinimumCountError) }
    /// Core Data's `NSValidationRelationshipExceedsMaximumCountError`.
    public static var validationRelationshipExceedsMaximumCount: CocoaError.Code { CocoaError.Code(rawValue: NSValidationRelationshipExceedsMaximumCountError) }
    /// Core Data's `NSValidationRelationshipDeniedDeleteError`.
    public static var validationRelationshipDeniedDelete: CocoaError.Code { CocoaError.Code(rawValue: NSValidationRelationshipDeniedDeleteError) }
    /// Core Data's `NSValidationNumberTooLargeError`.
    public static var validationNumberTooLarge: CocoaError.Code { CocoaError.Code(rawValue: NSValidationNumberTooLargeError) }
    /// Core Data's `NSValidationNumberTooSmallError`.
    public static var validationNumberTooSmall: CocoaError.Code { CocoaError.Code(rawValue: NSValidationNumberTooSmallError) }
    /// Core Data's `NSValidationDateTooLateError`.
    public static var validationDateTooLate: CocoaError.Code { CocoaError.Code(rawValue: NSValidationDateTooLateError) }
    /// Core Data's `NSValidationDateTooSoonError`.
    public static var validationDateTooSoon: CocoaError.Code { CocoaError.Code(rawValue: NSValidationDateTooSoonError) }
    /// Core Data's `NSValidationInvalidDateError`.
    public static var validationInvalidDate: CocoaError.Code { CocoaError.Code(rawValue: NSValidationInvalidDateError) }
    /// Core Data's `NSValidationStringTooLongError`.
    public static var validationStringTooLong: CocoaError.Code { CocoaError.Code(rawValue: NSValidationStringTooLongError) }
    /// Core Data's `NSValidationStringTooShortError`.
    public static var validationStringTooShort: CocoaError.Code { CocoaError.Code(rawValue: NSValidationStringTooShortError) }
    /// Core Data's `NSValidationStringPatternMatchingError`.
    public static var validationStringPatternMatching: CocoaError.Code { CocoaError.Code(rawValue: NSValidationStringPatternMatchingError) }
    /// Core Data's `NSManagedObjectContextLockingError`.
    public static var managedObjectContextLocking: CocoaError.Code { CocoaError.Code(rawValue: NSManagedObjectContextLockingError) }
    /// Core Data's `NSPersistentStoreCoordinatorLockingError`.
    public static var persistentStoreCoordinatorLocking: CocoaError.Code { CocoaError.Code(rawValue: NSPersistentStoreCoordinatorLockingError) }
    /// Core Data's `NSManagedObjectReferentialIntegrityError`.
    public static var managedObjectReferentialIntegrity: CocoaError.Code { CocoaError.Code(rawValue: NSManagedObjectReferentialIntegrityError) }
    /// Core Data's `NSManagedObjectExternalRelationshipError`.
    public static var managedObjectExternalRelationship: CocoaError.Code { CocoaError.Code(rawValue: NSManagedObjectExternalRelationshipError) }
    /// Core Data's `NSManagedObjectMergeError`.
    public static var managedObjectMerge: CocoaError.Code { CocoaError.Code(rawValue: NSManagedObjectMergeError) }
    /// Core Data's `NSManagedObjectConstraintMergeError`.
    public static var managedObjectConstraintMerge: CocoaError.Code { CocoaError.Code(rawValue: NSManagedObjectConstraintMergeError) }
    /// Core Data's `NSPersistentStoreInvalidTypeError`.
    public static var persistentStoreInvalidType: CocoaError.Code { CocoaError.Code(rawValue: NSPersistentStoreInvalidTypeError) }
    /// Core Data's `NSPersistentStoreTypeMismatchError`.
    public static var persistentStoreTypeMismatch: CocoaError.Code { CocoaError.Code(rawValue: NSPersistentStoreTypeMismatchError) }
    /// Core Data's `NSPersistentStoreIncompatibleSchemaError`.
    public static var persistentStoreIncompatibleSchema: CocoaError.Code { CocoaError.Code(rawValue: NSPersistentStoreIncompatibleSchemaError) }
    /// Core Data's `NSPersistentStoreSaveError`.
    public static var persistentStoreSave: CocoaError.Code { CocoaError.Code(rawValue: NSPersistentStoreSaveError) }
    /// Core Data's `NSPersistentStoreIncompleteSaveError`.
    public static var persistentStoreIncompleteSave: CocoaError.Code { CocoaError.Code(rawValue: NSPersistentStoreIncompleteSaveError) }
    /// Core Data's `NSPersistentStoreSaveConflictsError`.
    public static var persistentStoreSaveConflicts: CocoaError.Code { CocoaError.Code(rawValue: NSPersistentStoreSaveConflictsError) }
    /// Core Data's `NSCoreDataError`.
    public static var coreData: CocoaError.Code { CocoaError.Code(rawValue: NSCoreDataError) }
    /// Core Data's `NSPersistentStoreOperationError`.
    public static var persistentStoreOperation: CocoaError.Code { CocoaError.Code(rawValue: NSPersistentStoreOperationError) }
    /// Core Data's `NSPersistentStoreOpenError`.
    public static var persistentStoreOpen: CocoaError.Code { CocoaError.Code(rawValue: NSPersistentStoreOpenError) }
    /// Core Data's `NSPersistentStoreTimeoutError`.
    public static var persistentStoreTimeout: CocoaError.Code { CocoaError.Code(rawValue: NSPersistentStoreTimeoutError) }
    /// Core Data's `NSPersistentStoreUnsupportedRequestTypeError`.
    public static var persistentStoreUnsupportedRequestType: CocoaError.Code { CocoaError.Code(rawValue: NSPersistentStoreUnsupportedRequestTypeError) }
    /// Core Data's `NSPersistentStoreIncompatibleVersionHashError`.
    public static var persistentStoreIncompatibleVersionHash: CocoaError.Code { CocoaError.Code(rawValue: NSPersistentStoreIncompatibleVersionHashError) }
    /// Core Data's `NSMigrationError`.
    public static var migration: CocoaError.Code { CocoaError.Code(rawValue: NSMigrationError) }
    /// Core Data's `NSMigrationCancelledError`.
    public static var migrationCancelled: CocoaError.Code { CocoaError.Code(rawValue: NSMigrationCancelledError) }
    /// Core Data's `NSMigrationMissingSourceModelError`.
    public static var migrationMissingSourceModel: CocoaError.Code { CocoaError.Code(rawValue: NSMigrationMissingSourceModelError) }
    /// Core Data's `NSMigrationMissingMappingModelError`.
    public static var migrationMissingMappingModel: CocoaError.Code { CocoaError.Code(rawValue: NSMigrationMissingMappingModelError) }
    /// Core Data's `NSMigrationManagerSourceStoreError`.
    public static var migrationManagerSourceStore: CocoaError.Code { CocoaError.Code(rawValue: NSMigrationManagerSourceStoreError) }
    /// Core Data's `NSMigrationManagerDestinationStoreError`.
    public static var migrationManagerDestinationStore: CocoaError.Code { CocoaError.Code(rawValue: NSMigrationManagerDestinationStoreError) }
    /// Core Data's `NSEntityMigrationPolicyError`.
    public static var entityMigrationPolicy: CocoaError.Code { CocoaError.Code(rawValue: NSEntityMigrationPolicyError) }
    /// Core Data's `NSSQLiteError`.
    public static var sqlite: CocoaError.Code { CocoaError.Code(rawValue: NSSQLiteError) }
    /// Core Data's `NSInferredMappingModelError`.
    public static var inferredMappingModel: CocoaError.Code { CocoaError.Code(rawValue: NSInferredMappingModelError) }
    /// Core Data's `NSExternalRecordImportError`.
    public static var externalRecordImport: CocoaError.Code { CocoaError.Code(rawValue: NSExternalRecordImportError) }
}

extension CocoaError.Code {
    // The names with an `Error` suffix, deprecated as on Apple's platforms.
    @available(*, deprecated, renamed: "managedObjectValidation")
    public static var managedObjectValidationError: CocoaError.Code { .managedObjectValidation }
    @available(*, deprecated, renamed: "validationMultipleErrors")
    public static var validationMultipleErrorsError: CocoaError.Code { .validationMultipleErrors }
    @available(*, deprecated, renamed: "validationMissingMandatoryProperty")
    public static var validationMissingMandatoryPropertyError: CocoaError.Code { .validationMissingMandatoryProperty }
    @available(*, deprecated, renamed: "validationRelationshipLacksMinimumCount")
    public static var validationRelationshipLacksMinimumCountError: CocoaError.Code { .validationRelationshipLacksMinimumCount }
    @available(*, deprecated, renamed: "validationRelationshipExceedsMaximumCount")
    public static var validationRelationshipExceedsMaximumCountError: CocoaError.Code { .validationRelationshipExceedsMaximumCount }
    @available(*, deprecated, renamed: "validationRelationshipDeniedDelete")
    public static var validationRelationshipDeniedDeleteError: CocoaError.Code { .validationRelationshipDeniedDelete }
    @available(*, deprecated, renamed: "validationNumberTooLarge")
    public static var validationNumberTooLargeError: CocoaError.Code { .validationNumberTooLarge }
    @available(*, deprecated, renamed: "validationNumberTooSmall")
    public static var validationNumberTooSmallError: CocoaError.Code { .validationNumberTooSmall }
    @available(*, deprecated, renamed: "validationDateTooLate")
    public static var validationDateTooLateError: CocoaError.Code { .validationDateTooLate }
    @available(*, deprecated, renamed: "validationDateTooSoon")
    public static var validationDateTooSoonError: CocoaError.Code { .validationDateTooSoon }
    @available(*, deprecated, renamed: "validationInvalidDate")
    public static var validationInvalidDateError: CocoaError.Code { .validationInvalidDate }
    @available(*, deprecated, renamed: "validationStringTooLong")
    public static var validationStringTooLongError: CocoaError.Code { .validationStringTooLong }
    @available(*, deprecated, renamed: "validationStringTooShort")
    public static var validationStringTooShortError: CocoaError.Code { .validationStringTooShort }
    @available(*, deprecated, renamed: "validationStringPatternMatching")
    public static var validationStringPatternMatchingError: CocoaError.Code { .validationStringPatternMatching }
    @available(*, deprecated, renamed: "managedObjectContextLocking")
    public static var managedObjectContextLockingError: CocoaError.Code { .managedObjectContextLocking }
    @available(*, deprecated, renamed: "persistentStoreCoordinatorLocking")
    public static var persistentStoreCoordinatorLockingError: CocoaError.Code { .persistentStoreCoordinatorLocking }
    @available(*, deprecated, renamed: "managedObjectReferentialIntegrity")
    public static var managedObjectReferentialIntegrityError: CocoaError.Code { .managedObjectReferentialIntegrity }
    @available(*, deprecated, renamed: "managedObjectExternalRelationship")
    public static var managedObjectExternalRelationshipError: CocoaError.Code { .managedObjectExternalRelationship }
    @available(*, deprecated, renamed: "managedObjectMerge")
    public static var managedObjectMergeError: CocoaError.Code { .managedObjectMerge }
    @available(*, deprecated, renamed: "managedObjectConstraintMerge")
    public static var managedObjectConstraintMergeError: CocoaError.Code { .managedObjectConstraintMerge }
    @available(*, deprecated, renamed: "persistentStoreInvalidType")
    public static var persistentStoreInvalidTypeError: CocoaError.Code { .persistentStoreInvalidType }
    @available(*, deprecated, renamed: "persistentStoreTypeMismatch")
    public static var persistentStoreTypeMismatchError: CocoaError.Code { .persistentStoreTypeMismatch }
    @available(*, deprecated, renamed: "persistentStoreIncompatibleSchema")
    public static var persistentStoreIncompatibleSchemaError: CocoaError.Code { .persistentStoreIncompatibleSchema }
    @available(*, deprecated, renamed: "persistentStoreSave")
    public static var persistentStoreSaveError: CocoaError.Code { .persistentStoreSave }
    @available(*, deprecated, renamed: "persistentStoreIncompleteSave")
    public static var persistentStoreIncompleteSaveError: CocoaError.Code { .persistentStoreIncompleteSave }
    @available(*, deprecated, renamed: "persistentStoreSaveConflicts")
    public static var persistentStoreSaveConflictsError: CocoaError.Code { .persistentStoreSaveConflicts }
    @available(*, deprecated, renamed: "coreData")
    public static var coreDataError: CocoaError.Code { .coreData }
    @available(*, deprecated, renamed: "persistentStoreOperation")
    public static var persistentStoreOperationError: CocoaError.Code { .persistentStoreOperation }
    @available(*, deprecated, renamed: "persistentStoreOpen")
    public static var persistentStoreOpenError: CocoaError.Code { .persistentStoreOpen }
    @available(*, deprecated, renamed: "persistentStoreTimeout")
    public static var persistentStoreTimeoutError: CocoaError.Code { .persistentStoreTimeout }
    @available(*, deprecated, renamed: "persistentStoreUnsupportedRequestType")
    public static var persistentStoreUnsupportedRequestTypeError: CocoaError.Code { .persistentStoreUnsupportedRequestType }
    @available(*, deprecated, renamed: "persistentStoreIncompatibleVersionHash")
    public static var persistentStoreIncompatibleVersionHashError: CocoaError.Code { .persistentStoreIncompatibleVersionHash }
    @available(*, deprecated, renamed: "migration")
    public static var migrationError: CocoaError.Code { .migration }
    @available(*, deprecated, renamed: "migrationCancelled")
    public static var migrationCancelledError: CocoaError.Code { .migrationCancelled }
    @available(*, deprecated, renamed: "migrationMissingSourceModel")
    public static var migrationMissingSourceModelError: CocoaError.Code { .migrationMissingSourceModel }
    @available(*, deprecated, renamed: "migrationMissingMappingModel")
    public static var migrationMissingMappingModelError: CocoaError.Code { .migrationMissingMappingModel }
    @available(*, deprecated, renamed: "migrationManagerSourceStore")
    public static var migrationManagerSourceStoreError: CocoaError.Code { .migrationManagerSourceStore }
    @available(*, deprecated, renamed: "migrationManagerDestinationStore")
    public static var migrationManagerDestinationStoreError: CocoaError.Code { .migrationManagerDestinationStore }
    @available(*, deprecated, renamed: "entityMigrationPolicy")
    public static var entityMigrationPolicyError: CocoaError.Code { .entityMigrationPolicy }
    @available(*, deprecated, renamed: "sqlite")
    public static var sqliteError: CocoaError.Code { .sqlite }
    @available(*, deprecated, renamed: "inferredMappingModel")
    public static var inferredMappingModelError: CocoaError.Code { .inferredMappingModel }
    @available(*, deprecated, renamed: "externalRecordImport")
    public static var externalRecordImportError: CocoaError.Code { .externalRecordImport }
}

extension CocoaError {
    /// Core Data's `NSManagedObjectValidationError`.
    public static var managedObjectValidation: CocoaError.Code { .managedObjectValidation }
    /// Core Data's `NSValidationMultipleErrorsError`.
    public static var validationMultipleErrors: CocoaError.Code { .validationMultipleErrors }
    /// Core Data's `NSValidationMissingMandatoryPropertyError`.
    public static var validationMissingMandatoryProperty: CocoaError.Code { .validationMissingMandatoryProperty }
    /// Core Data's `NSValidationRelationshipLacksMinimumCountError`.
    public static var validationRelationshipLacksMinimumCount: CocoaError.Code { .validationRelationshipLacksMinimumCount }
    /// Core Data's `NSValidationRelationshipExceedsMaximumCountError`.
    public static var validationRelationshipExceedsMaximumCount: CocoaError.Code { .validationRelationshipExceedsMaximumCount }
    /// Core Data's `NSValidationRelationshipDeniedDeleteError`.
    public static var validationRelationshipDeniedDelete: CocoaError.Code { .validationRelationshipDeniedDelete }
    /// Core Data's `NSValidationNumberTooLargeError`.
    public static var validationNumberTooLarge: CocoaError.Code { .validationNumberTooLarge }
    /// Core Data's `NSValidationNumberTooSmallError`.
    public static var validationNumberTooSmall: CocoaError.Code { .validationNumberTooSmall }
    /// Core Data's `NSValidationDateTooLateError`.
    public static var validationDateTooLate: CocoaError.Code { .validationDateTooLate }
    /// Core Data's `NSValidationDateTooSoonError`.
    public static var validationDateTooSoon: CocoaError.Code { .validationDateTooSoon }
    /// Core Data's `NSValidationInvalidDateError`.
    public static var validationInvalidDate: CocoaError.Code { .validationInvalidDate }
    /// Core Data's `NSValidationStringTooLongError`.
    public static var validationStringTooLong: CocoaError.Code { .validationStringTooLong }
    /// Core Data's `NSValidationStringTooShortError`.
    public static var validationStringTooShort: CocoaError.Code { .validationStringTooShort }
    /// Core Data's `NSValidationStringPatternMatchingError`.
    public static var validationStringPatternMatching: CocoaError.Code { .validationStringPatternMatching }
    /// Core Data's `NSManagedObjectContextLockingError`.
    public static var managedObjectContextLocking: CocoaError.Code { .managedObjectContextLocking }
    /// Core Data's `NSPersistentStoreCoordinatorLockingError`.
    public static var persistentStoreCoordinatorLocking: CocoaError.Code { .persistentStoreCoordinatorLocking }
    /// Core Data's `NSManagedObjectReferentialIntegrityError`.
    public static var managedObjectReferentialIntegrity: CocoaError.Code { .managedObjectReferentialIntegrity }
    /// Core Data's `NSManagedObjectExternalRelationshipError`.
    public static var managedObjectExternalRelationship: CocoaError.Code { .managedObjectExternalRelationship }
    /// Core Data's `NSManagedObjectMergeError`.
    public static var managedObjectMerge: CocoaError.Code { .managedObjectMerge }
    /// Core Data's `NSManagedObjectConstraintMergeError`.
    public static var managedObjectConstraintMerge: CocoaError.Code { .managedObjectConstraintMerge }
    /// Core Data's `NSPersistentStoreInvalidTypeError`.
    public static var persistentStoreInvalidType: CocoaError.Code { .persistentStoreInvalidType }
    /// Core Data's `NSPersistentStoreTypeMismatchError`.
    public static var persistentStoreTypeMismatch: CocoaError.Code { .persistentStoreTypeMismatch }
    /// Core Data's `NSPersistentStoreIncompatibleSchemaError`.
    public static var persistentStoreIncompatibleSchema: CocoaError.Code { .persistentStoreIncompatibleSchema }
    /// Core Data's `NSPersistentStoreSaveError`.
    public static var persistentStoreSave: CocoaError.Code { .persistentStoreSave }
    /// Core Data's `NSPersistentStoreIncompleteSaveError`.
    public static var persistentStoreIncompleteSave: CocoaError.Code { .persistentStoreIncompleteSave }
    /// Core Data's `NSPersistentStoreSaveConflictsError`.
    public static var persistentStoreSaveConflicts: CocoaError.Code { .persistentStoreSaveConflicts }
    /// Core Data's `NSCoreDataError`.
    public static var coreData: CocoaError.Code { .coreData }
    /// Core Data's `NSPersistentStoreOperationError`.
    public static var persistentStoreOperation: CocoaError.Code { .persistentStoreOperation }
    /// Core Data's `NSPersistentStoreOpenError`.
    public static var persistentStoreOpen: CocoaError.Code { .persistentStoreOpen }
    /// Core Data's `NSPersistentStoreTimeoutError`.
    public static var persistentStoreTimeout: CocoaError.Code { .persistentStoreTimeout }
    /// Core Data's `NSPersistentStoreUnsupportedRequestTypeError`.
    public static var persistentStoreUnsupportedRequestType: CocoaError.Code { .persistentStoreUnsupportedRequestType }
    /// Core Data's `NSPersistentStoreIncompatibleVersionHashError`.
    public static var persistentStoreIncompatibleVersionHash: CocoaError.Code { .persistentStoreIncompatibleVersionHash }
    /// Core Data's `NSMigrationError`.
    public static var migration: CocoaError.Code { .migration }
    /// Core Data's `NSMigrationCancelledError`.
    public static var migrationCancelled: CocoaError.Code { .migrationCancelled }
    /// Core Data's `NSMigrationMissingSourceModelError`.
    public static var migrationMissingSourceModel: CocoaError.Code { .migrationMissingSourceModel }
    /// Core Data's `NSMigrationMissingMappingModelError`.
    public static var migrationMissingMappingModel: CocoaError.Code { .migrationMissingMappingModel }
    /// Core Data's `NSMigrationManagerSourceStoreError`.
    public static var migrationManagerSourceStore: CocoaError.Code { .migrationManagerSourceStore }
    /// Core Data's `NSMigrationManagerDestinationStoreError`.
    public static var migrationManagerDestinationStore: CocoaError.Code { .migrationManagerDestinationStore }
    /// Core Data's `NSEntityMigrationPolicyError`.
    public static var entityMigrationPolicy: CocoaError.Code { .entityMigrationPolicy }
    /// Core Data's `NSSQLiteError`.
    public static var sqlite: CocoaError.Code { .sqlite }
    /// Core Data's `NSInferredMappingModelError`.
    public static var inferredMappingModel: CocoaError.Code { .inferredMappingModel }
    /// Core Data's `NSExternalRecordImportError`.
    public static var externalRecordImport: CocoaError.Code { .externalRecordImport }

    /// The key of the property that failed to validate (`NSValidationKeyErrorKey`).
    public var validationKey: String? { userInfo[NSValidationKeyErrorKey] as? String }
    /// The value that failed to validate (`NSValidationValueErrorKey`).
    public var validationValue: Any? { userInfo[NSValidationValueErrorKey] }
    /// The predicate the value failed (`NSValidationPredicateErrorKey`).
    public var validationPredicate: NSPredicate? { userInfo[NSValidationPredicateErrorKey] as? NSPredicate }
    /// The conflicts a save couldn't resolve (`NSPersistentStoreSaveConflictsErrorKey`).
    public var persistentStoreSaveConflicts: [NSMergeConflict]? { userInfo[NSPersistentStoreSaveConflictsErrorKey] as? [NSMergeConflict] }
    /// The object that failed to validate (`NSValidationObjectErrorKey`).
    public var validationObject: Any? { userInfo[NSValidationObjectErrorKey] }
    /// The objects the error concerns (`NSAffectedObjectsErrorKey`).
    public var affectedObjects: [AnyObject]? { userInfo[NSAffectedObjectsErrorKey] as? [AnyObject] }
    /// The stores the error concerns (`NSAffectedStoresErrorKey`).
    public var affectedStores: [AnyObject]? { userInfo[NSAffectedStoresErrorKey] as? [AnyObject] }
}
