import Foundation

/// How to open one store: its type, file, configuration and options.
/// Unchecked Sendable: not locked: set it up first; adding the store (maybe on another queue) only reads it.
open class NSPersistentStoreDescription: NSObject, @unchecked Sendable {
    /// The store type (`NSSQLiteStoreType` by default).
    public var type: String = NSSQLiteStoreType
    /// The model configuration the store holds.
    public var configuration: String?
    /// The store's file.
    public var url: URL?
    /// The options passed to the coordinator.
    public private(set) var options: [String: Any] = [:]
    /// Whether the store is opened read-only.
    public var isReadOnly: Bool {
        get { (options[NSReadOnlyPersistentStoreOption] as? Bool) ?? false }
        set { options[NSReadOnlyPersistentStoreOption] = newValue }
    }
    /// Seconds a SQLite store waits for another connection's lock on its file
    /// (`NSPersistentStoreTimeoutOption`; 10 unless set).
    public var timeout: TimeInterval {
        get { StoreOptions.seconds(options[NSPersistentStoreTimeoutOption]) ?? StoreOptions.defaultLockTimeout }
        set { options[NSPersistentStoreTimeoutOption] = newValue }
    }
    /// The CloudKit container an `NSPersistentCloudKitContainer` would mirror the store to on
    /// Apple's platforms. Linux has no CloudKit: the store stays local, and the container checks
    /// the model against CloudKit's rules when it loads the store.
    public var cloudKitContainerOptions: NSPersistentCloudKitContainerOptions?
    /// SQLite pragmas.
    public private(set) var sqlitePragmas: [String: Any] = [:]
    /// Whether the store is added on a background queue, its completion handler called there once
    /// it is added (or failed); by default it is added on the calling thread before
    /// `loadPersistentStores` returns.
    public var shouldAddStoreAsynchronously: Bool = false
    /// Whether an out-of-date store is migrated automatically.
    public var shouldMigrateStoreAutomatically: Bool {
        get { (options[NSMigratePersistentStoresAutomaticallyOption] as? Bool) ?? true }
        set { options[NSMigratePersistentStoresAutomaticallyOption] = newValue }
    }
    /// Whether the mapping model is inferred for automatic migration.
    public var shouldInferMappingModelAutomatically: Bool {
        get { (options[NSInferMappingModelAutomaticallyOption] as? Bool) ?? true }
        set { options[NSInferMappingModelAutomaticallyOption] = newValue }
    }

    /// Creates a description with no URL.
    public override init() {
        options[NSMigratePersistentStoresAutomaticallyOption] = true
        options[NSInferMappingModelAutomaticallyOption] = true
    }

    /// Creates a description for a file.
    public convenience init(url: URL) {
        self.init()
        self.url = url
    }

    /// Sets an option.
    public func setOption(_ option: NSObject?, forKey key: String) {
        options[key] = option
    }

    /// Sets an option to any value (Swift values need no boxing here).
    public func setOption(_ option: Any?, forKey key: String) {
        options[key] = option
    }

    /// Sets a SQLite pragma.
    public func setValue(_ value: Any?, forPragmaNamed name: String) {
        sqlitePragmas[name] = value
        options[NSSQLitePragmasOption] = sqlitePragmas
    }

    open override var description: String {
        "<NSPersistentStoreDescription> type: \(type), url: \(url?.path ?? "nil")"
    }
}
