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
    /// The options passed to the coordinator, as Core Data types them: each value an object
    /// (a Swift `Bool`, number, string or collection set through `setOption` appears as its
    /// Foundation class, `NSNumber`, `NSString`, …).
    public var options: [String: NSObject] { Self.objects(of: storedOptions) }
    /// The options as set, handed to the coordinator: a value that is no `NSObject` (a Swift class
    /// instance) is kept here though `options` can't show it.
    private(set) var storedOptions: [String: Any] = [:]
    /// Whether the store is opened read-only.
    public var isReadOnly: Bool {
        get { (storedOptions[NSReadOnlyPersistentStoreOption] as? Bool) ?? false }
        set { storedOptions[NSReadOnlyPersistentStoreOption] = newValue }
    }
    /// Seconds a SQLite store waits for another connection's lock on its file
    /// (`NSPersistentStoreTimeoutOption`; 10 unless set).
    public var timeout: TimeInterval {
        get { StoreOptions.seconds(storedOptions[NSPersistentStoreTimeoutOption]) ?? StoreOptions.defaultLockTimeout }
        set { storedOptions[NSPersistentStoreTimeoutOption] = newValue }
    }
    /// The CloudKit container an `NSPersistentCloudKitContainer` would mirror the store to on
    /// Apple's platforms. Linux has no CloudKit: the store stays local, and the container checks
    /// the model against CloudKit's rules when it loads the store.
    public var cloudKitContainerOptions: NSPersistentCloudKitContainerOptions?
    /// SQLite pragmas, set through `setValue(_:forPragmaNamed:)`: the `NSSQLitePragmasOption` option.
    public var sqlitePragmas: [String: NSObject] { Self.objects(of: storedPragmas) }
    private var storedPragmas: [String: Any] { storedOptions[NSSQLitePragmasOption] as? [String: Any] ?? [:] }
    /// Whether the store is added on a background queue, its completion handler called there once
    /// it is added (or failed); by default it is added on the calling thread before
    /// `loadPersistentStores` returns.
    public var shouldAddStoreAsynchronously: Bool = false
    /// Whether an out-of-date store is migrated automatically.
    public var shouldMigrateStoreAutomatically: Bool {
        get { (storedOptions[NSMigratePersistentStoresAutomaticallyOption] as? Bool) ?? true }
        set { storedOptions[NSMigratePersistentStoresAutomaticallyOption] = newValue }
    }
    /// Whether the mapping model is inferred for automatic migration.
    public var shouldInferMappingModelAutomatically: Bool {
        get { (storedOptions[NSInferMappingModelAutomaticallyOption] as? Bool) ?? true }
        set { storedOptions[NSInferMappingModelAutomaticallyOption] = newValue }
    }

    /// Creates a description with no URL.
    public override init() {
        storedOptions[NSMigratePersistentStoresAutomaticallyOption] = true
        storedOptions[NSInferMappingModelAutomaticallyOption] = true
    }

    /// Creates a description for a file.
    public convenience init(url: URL) {
        self.init()
        self.url = url
    }

    /// Sets an option.
    public func setOption(_ option: NSObject?, forKey key: String) {
        storedOptions[key] = option
    }

    /// Sets an option to any value (Swift values need no boxing here).
    public func setOption(_ option: Any?, forKey key: String) {
        storedOptions[key] = option
    }

    /// Sets a SQLite pragma.
    public func setValue(_ value: Any?, forPragmaNamed name: String) {
        var pragmas = storedPragmas
        pragmas[name] = value
        storedOptions[NSSQLitePragmasOption] = pragmas
    }

    /// `values` with each value as the object Foundation bridges it to; values that bridge to no
    /// `NSObject` are left out.
    private static func objects(of values: [String: Any]) -> [String: NSObject] {
        values.compactMapValues { $0 as AnyObject as? NSObject }
    }

    open override var description: String {
        "<NSPersistentStoreDescription> type: \(type), url: \(url?.path ?? "nil")"
    }
}
