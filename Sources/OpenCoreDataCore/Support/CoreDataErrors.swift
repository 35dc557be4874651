import Foundation

// Core Data's error codes in NSCocoaErrorDomain, with Apple's names and values.

/// A managed object failed validation.
public let NSManagedObjectValidationError = 1550
/// Several validation errors; the individual errors are under `NSDetailedErrorsKey`.
public let NSValidationMultipleErrorsError = 1560
/// A non-optional property has no value.
public let NSValidationMissingMandatoryPropertyError = 1570
/// A to-many relationship has fewer objects than its minimum count.
public let NSValidationRelationshipLacksMinimumCountError = 1580
/// A to-many relationship has more objects than its maximum count.
public let NSValidationRelationshipExceedsMaximumCountError = 1590
/// A delete was refused by a Deny delete rule.
public let NSValidationRelationshipDeniedDeleteError = 1600
/// A number is larger than the attribute's maximum.
public let NSValidationNumberTooLargeError = 1610
/// A number is smaller than the attribute's minimum.
public let NSValidationNumberTooSmallError = 1620
/// A date is later than the attribute's maximum.
public let NSValidationDateTooLateError = 1630
/// A date is earlier than the attribute's minimum.
public let NSValidationDateTooSoonError = 1640
/// A date is invalid.
public let NSValidationInvalidDateError = 1650
/// A string is longer than the attribute's maximum.
public let NSValidationStringTooLongError = 1660
/// A string is shorter than the attribute's minimum.
public let NSValidationStringTooShortError = 1670
/// A string does not match the attribute's regular expression.
public let NSValidationStringPatternMatchingError = 1680
/// A value's type does not match its attribute (Core Data's invalid-value validation).
public let NSValidationInvalidValueError = 1550
/// A uniqueness constraint was violated (Core Data's constraint validation).
public let NSManagedObjectConstraintValidationError = 1551
/// A URI is invalid.
public let NSValidationInvalidURIError = 1690
/// An object references an object in another store.
public let NSManagedObjectExternalRelationshipError = 133010
/// The object graph references an object that no longer exists.
public let NSManagedObjectReferentialIntegrityError = 133000
/// A save found objects changed in the store since they were fetched.
public let NSManagedObjectMergeError = 133020
/// A context's lock could not be taken (kept for API compatibility: contexts here use queues).
public let NSManagedObjectContextLockingError = 132000
/// A coordinator's lock could not be taken (kept for API compatibility).
public let NSPersistentStoreCoordinatorLockingError = 132010
/// Importing an external record failed (kept for API compatibility: Spotlight's external records don't exist here).
public let NSExternalRecordImportError = 134200
/// A save violated a uniqueness constraint.
public let NSManagedObjectConstraintMergeError = 133021
/// The store's type is unknown or the file is not a store of that type.
public let NSPersistentStoreInvalidTypeError = 134000
/// The store's type does not match the type requested.
public let NSPersistentStoreTypeMismatchError = 134010
/// The store's schema is incompatible with the model.
public let NSPersistentStoreIncompatibleSchemaError = 134020
/// A save to the store failed.
public let NSPersistentStoreSaveError = 134030
/// A save to one of several stores failed.
public let NSPersistentStoreIncompleteSaveError = 134040
/// A save found merge conflicts.
public let NSPersistentStoreSaveConflictsError = 134050
/// A general Core Data error.
public let NSCoreDataError = 134060
/// A store operation failed.
public let NSPersistentStoreOperationError = 134070
/// A store could not be opened.
public let NSPersistentStoreOpenError = 134080
/// A store operation timed out.
public let NSPersistentStoreTimeoutError = 134090
/// The store does not support the request.
public let NSPersistentStoreUnsupportedRequestTypeError = 134091
/// The model's version hashes do not match the store's.
public let NSPersistentStoreIncompatibleVersionHashError = 134100
/// A migration failed.
public let NSMigrationError = 134110
/// No mapping model could be found or inferred.
public let NSMigrationMissingMappingModelError = 134140
/// A migration failed on a uniqueness constraint of the destination model.
public let NSMigrationConstraintViolationError = 134111
/// A migration was cancelled (`cancelMigrationWithError(_:)`).
public let NSMigrationCancelledError = 134120
/// No model version matches the store being migrated.
public let NSMigrationMissingSourceModelError = 134130
/// The source store of a migration could not be read.
public let NSMigrationManagerSourceStoreError = 134150
/// The destination store of a migration could not be written.
public let NSMigrationManagerDestinationStoreError = 134160
/// An entity migration policy failed.
public let NSEntityMigrationPolicyError = 134170
/// The persistent history a token points into has been deleted.
public let NSPersistentHistoryTokenExpiredError = 134301
/// A staged migration's model reference names a model that can't be found or loaded.
public let NSManagedObjectModelReferenceNotFoundError = 134504
/// The store's metadata predates staged migration (Core Data's; OpenCoreData stores don't raise it).
public let NSStagedMigrationFrameworkVersionMismatchError = 134505
/// A staged migration's stages would migrate a store back to an earlier model version.
public let NSStagedMigrationBackwardMigrationError = 134506
/// SQLite reported an error; the SQLite code is under `NSSQLiteErrorDomain`.
public let NSSQLiteError = 134180
/// A mapping model could not be inferred.
public let NSInferredMappingModelError = 134190

/// The object that failed validation.
public let NSValidationObjectErrorKey = "NSValidationErrorObject"
/// The key that failed validation.
public let NSValidationKeyErrorKey = "NSValidationErrorKey"
/// The predicate that failed validation.
public let NSValidationPredicateErrorKey = "NSValidationErrorPredicate"
/// The value that failed validation.
public let NSValidationValueErrorKey = "NSValidationErrorValue"
/// The individual errors of a multiple-errors error.
public let NSDetailedErrorsKey = "NSDetailedErrors"
/// The objects an error concerns.
public let NSAffectedObjectsErrorKey = "NSAffectedObjectsErrorKey"
/// The stores an error concerns.
public let NSAffectedStoresErrorKey = "NSAffectedStoresErrorKey"
/// The merge conflicts of a failed save.
public let NSPersistentStoreSaveConflictsErrorKey = "conflictList"
/// The key under which an SQLite error's own code is reported.
public let NSSQLiteErrorDomain = "NSSQLiteErrorDomain"

/// Builds Core Data's `NSError`s.
enum CoreDataError {
    /// A named code, for readable call sites.
    enum Code: Int {
        case validation = 1550
        case multipleErrors = 1560
        case missingMandatoryProperty = 1570
        case relationshipLacksMinimumCount = 1580
        case relationshipExceedsMaximumCount = 1590
        case deniedDelete = 1600
        case numberTooLarge = 1610
        case numberTooSmall = 1620
        case dateTooLate = 1630
        case dateTooSoon = 1640
        case stringTooLong = 1660
        case stringTooShort = 1670
        case stringPatternMatching = 1680
        case fileReadNoSuchFile = 260
        case fileReadCorruptFile = 259
        case fileReadNoPermission = 257
        case fileWriteNoPermission = 513
        case fileWriteOutOfSpace = 640
        case referentialIntegrity = 133000
        case mergeConflict = 133020
        case constraintConflict = 133021
        case invalidType = 134000
        case typeMismatch = 134010
        case incompatibleSchema = 134020
        case saveFailed = 134030
        case coreData = 134060
        case operationFailed = 134070
        case openFailed = 134080
        case unsupportedRequest = 134091
        case incompatibleVersionHash = 134100
        case migration = 134110
        case migrationConstraintViolation = 134111
        case migrationCancelled = 134120
        case migrationMissingSourceModel = 134130
        case migrationMissingMappingModel = 134140
        case migrationSourceStore = 134150
        case migrationDestinationStore = 134160
        case entityMigrationPolicy = 134170
        case inferredMappingModel = 134190
        case sqlite = 134180
        case persistentHistoryTokenExpired = 134301
        case modelReferenceNotFound = 134504
        case stagedMigrationBackwardMigration = 134506
    }

    /// An error in NSCocoaErrorDomain with a description and optional details.
    static func make(_ code: Code, _ description: String, url: URL? = nil, line: Int? = nil, userInfo extra: [String: Any] = [:]) -> NSError {
        var info: [String: Any] = [NSLocalizedDescriptionKey: description]
        if let url { info[NSFilePathErrorKey] = url.path; info[NSURLErrorKey] = url }
        if let line { info["NSLineNumber"] = line }
        info.merge(extra) { _, new in new }
        return NSError(domain: NSCocoaErrorDomain, code: code.rawValue, userInfo: info)
    }
}

/// Why reading or writing a store's files failed, whichever store and library reported it; the
/// one place that decides which Core Data code such a failure gets (`CoreDataError.storeFailure`).
enum StoreFileFailure: Equatable {
    /// No space left: SQLITE_FULL, ENOSPC, EDQUOT, or EFBIG (the process's file size limit).
    case diskFull
    /// The file or its directory may not be written (or read): SQLITE_READONLY, SQLITE_PERM,
    /// EACCES, EPERM, EROFS.
    case noPermission
    /// The file is damaged or not a database: SQLITE_CORRUPT, SQLITE_NOTADB.
    case damaged
    /// The file can't be opened: SQLITE_CANTOPEN.
    case cantOpen
    /// Anything else.
    case other

    /// The kind of an SQLite primary result code. (SQLite reports only ENOSPC as SQLITE_FULL; a
    /// write stopped by the process's file size limit, EFBIG, is an I/O error, SQLITE_IOERR.)
    init(sqliteCode: Int32) {
        switch sqliteCode {
        case 13: self = .diskFull               // SQLITE_FULL
        case 8, 3: self = .noPermission         // SQLITE_READONLY, SQLITE_PERM
        case 11, 26: self = .damaged            // SQLITE_CORRUPT, SQLITE_NOTADB
        case 14: self = .cantOpen               // SQLITE_CANTOPEN
        default: self = .other
        }
    }

    /// The kind of a POSIX error number.
    init(errno: Int32) {
        switch errno {
        case ENOSPC, EDQUOT, EFBIG: self = .diskFull
        case EACCES, EPERM, EROFS: self = .noPermission
        default: self = .other
        }
    }

    /// The kind of a Foundation file error, looking through to its POSIX cause.
    init(fileError: Error) {
        let error = fileError as NSError
        if error.domain == NSPOSIXErrorDomain {
            self = Self(errno: Int32(error.code))
            return
        }
        if let underlying = error.userInfo[NSUnderlyingErrorKey] as? Error, case let kind = StoreFileFailure(fileError: underlying), kind != .other {
            self = kind
            return
        }
        switch error.code {
        case CocoaError.fileWriteOutOfSpace.rawValue: self = .diskFull
        case CocoaError.fileWriteNoPermission.rawValue, CocoaError.fileReadNoPermission.rawValue, CocoaError.fileWriteVolumeReadOnly.rawValue: self = .noPermission
        default: self = .other
        }
    }
}

extension CoreDataError {
    /// What a store was doing when its files failed it.
    enum StoreAction: String {
        case opening, reading, saving, watching, migrating
    }

    /// The Core Data error for a failed file operation of a store. A full disk is
    /// NSFileWriteOutOfSpaceError (640) whenever it happens. Missing permission is
    /// NSFileWriteNoPermissionError (513) while opening, and NSPersistentStoreSaveError (134030)
    /// while saving, the code Apple documents for a store's save failing on "permissions
    /// problems". A damaged file is 259, a file that can't be opened 134080; anything else is
    /// NSSQLiteError (134180) from SQLite, and 134030 from another store's save. `sqliteCode` goes under
    /// `NSSQLiteErrorDomain`, the library's own error under `NSUnderlyingErrorKey`.
    static func storeFailure(_ kind: StoreFileFailure, during action: StoreAction, url: URL?, detail: String,
                             sqliteCode: Int32? = nil, underlying: Error? = nil) -> NSError {
        var info: [String: Any] = [:]
        if let sqliteCode { info[NSSQLiteErrorDomain] = Int(sqliteCode) }
        if let underlying { info[NSUnderlyingErrorKey] = underlying as NSError }
        let path = url?.path ?? "?"
        switch (kind, action) {
        case (.diskFull, _):
            return make(.fileWriteOutOfSpace, "The disk is full: the store at \(path) can't be written while \(action.rawValue) (\(detail)).", url: url, userInfo: info)
        case (.noPermission, .saving):
            return make(.saveFailed, "The store at \(path) can't be saved: no permission to write it or its directory (\(detail)).", url: url, userInfo: info)
        case (.noPermission, _):
            return make(.fileWriteNoPermission, "The store at \(path) can't be written while \(action.rawValue) (\(detail)).", url: url, userInfo: info)
        case (.damaged, _):
            return make(.fileReadCorruptFile, "The store at \(path) is corrupt (\(detail)) while \(action.rawValue).", url: url, userInfo: info)
        case (.cantOpen, _):
            return make(.openFailed, "The store at \(path) can't be opened: \(detail)", url: url, userInfo: info)
        case (.other, .saving) where sqliteCode == nil:
            return make(.saveFailed, "The store at \(path) could not be saved: \(detail)", url: url, userInfo: info)
        case (.other, _):
            return make(.sqlite, "SQLite error while \(action.rawValue) the store at \(path): \(detail)", url: url, userInfo: info)
        }
    }
}
