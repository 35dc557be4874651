import Foundation

// The keys of the options dictionary given when a store is added (`addPersistentStore`,
// `NSPersistentStoreDescription.setOption(_:forKey:)`). Each says which stores honour it; the
// ones that mean nothing on this platform are accepted, so that code written for Apple's
// platforms compiles and runs unchanged, and have no effect (see docs/Differences.md).

/// Option: open the store read-only.
public let NSReadOnlyPersistentStoreOption = "NSReadOnlyPersistentStoreOption"
/// Option: migrate the store automatically when its model changed.
public let NSMigratePersistentStoresAutomaticallyOption = "NSMigratePersistentStoresAutomaticallyOption"
/// Option: infer the mapping model for automatic migration.
public let NSInferMappingModelAutomaticallyOption = "NSInferMappingModelAutomaticallyOption"
/// Option: SQLite pragmas, as a dictionary of names to values, run on every connection.
public let NSSQLitePragmasOption = "NSSQLitePragmasOption"
/// Option (SQLite): when true, `ANALYZE` runs as the store is added, refreshing the statistics
/// SQLite's query planner uses. Changes the file (a writable store only).
public let NSSQLiteAnalyzeOption = "NSSQLiteAnalyzeOption"
/// Option (SQLite): when true, `VACUUM` runs as the store is added, rebuilding the file without
/// its free pages. Changes the file (a writable store only).
public let NSSQLiteManualVacuumOption = "NSSQLiteManualVacuumOption"
/// Option (SQLite): how many seconds a statement waits for another connection's lock on the file
/// before it fails, as a number (`StoreOptions.defaultLockTimeout` when absent).
public let NSPersistentStoreTimeoutOption = "NSPersistentStoreTimeoutOption"
/// Option: track persistent history.
public let NSPersistentHistoryTrackingKey = "NSPersistentHistoryTrackingKey"
/// Option: post remote-change notifications.
public let NSPersistentStoreRemoteChangeNotificationPostOptionKey = "NSPersistentStoreRemoteChangeNotificationOptionKey"
/// Option: the data protection class of the store's files. Accepted; Linux has no file
/// protection classes, so it has no effect.
public let NSPersistentStoreFileProtectionKey = "NSPersistentStoreFileProtectionKey"
/// Option: the most connections a SQLite store opens for reading. Accepted; each store has one
/// serial connection here, so it has no effect.
public let NSPersistentStoreConnectionPoolMaxSizeKey = "NSPersistentStoreConnectionPoolMaxSize"
/// Option: open a store whatever model version it was written with. Accepted but not honoured:
/// a store the model can't describe is refused (134100) rather than misread.
public let NSIgnorePersistentStoreVersioningOption = "NSIgnorePersistentStoreVersioningOption"
/// Option: validate an XML store against its DTD. Accepted; there is no XML store here.
public let NSValidateXMLStoreOption = "NSValidateXMLStoreOption"
/// Option for `destroyPersistentStore`: destroy the store even if it can't be opened. Accepted;
/// destroying removes the files whatever they hold.
public let NSPersistentStoreForceDestroyOption = "NSPersistentStoreForceDestroyOption"
/// Option: the classes a binary store may decode. Accepted; the binary store here has its own
/// format, which holds no archived objects.
public let NSBinaryStoreSecureDecodingClasses = "NSBinaryStoreSecureDecodingClasses"
/// Option: let a binary store decode insecurely. Accepted, with no effect (see
/// `NSBinaryStoreSecureDecodingClasses`).
public let NSBinaryStoreInsecureDecodingCompatibilityOption = "NSBinaryStoreInsecureDecodingCompatibilityOption"
/// Option: defer the clean-up work of a lightweight migration. Accepted; migrations finish as the
/// store is added, so nothing is ever deferred (`finishDeferredLightweightMigration()` has nothing
/// to do).
public let NSPersistentStoreDeferredLightweightMigrationOptionKey = "NSPersistentStoreDeferredLightweightMigrationOptionKey"
/// Option: the operating system versions a store must stay readable by. Accepted, with no effect.
public let NSPersistentStoreOSCompatibility = "NSPersistentStoreOSCompatibility"

/// Reading store options given as `Bool` or `NSNumber`.
enum StoreOptions {
    /// Seconds a SQLite connection waits for another's lock unless `NSPersistentStoreTimeoutOption` says otherwise.
    static let defaultLockTimeout: TimeInterval = 10

    /// Whether an option value means "on".
    static func flag(_ value: Any?) -> Bool {
        if let bool = value as? Bool { return bool }
        if let number = value as? NSNumber { return number.boolValue }
        if let string = value as? String { return ["1", "YES", "TRUE"].contains(string.uppercased()) }
        return false
    }

    /// An option value as a number of seconds.
    static func seconds(_ value: Any?) -> TimeInterval? {
        if let double = value as? Double { return double }
        if let number = value as? NSNumber { return number.doubleValue }
        if let int = value as? Int { return TimeInterval(int) }
        return nil
    }
}
