import Foundation

/// Store classes registered for store types: how a coordinator finds an `NSIncrementalStore`
/// subclass when a store of its type is added.
extension NSPersistentStoreCoordinator {
    /// The registered classes by store type (process-wide, as Apple's registry).
    private static let storeClasses = LockedValue<[String: NSPersistentStore.Type]>([:])

    /// Registers a store class for a type string, so `addPersistentStore(ofType:…)` with that type
    /// makes a store of the class; `nil` removes the registration. The class must be a subclass of
    /// `NSPersistentStore` (an `NSIncrementalStore` or `NSAtomicStore`); the built-in types can't be replaced.
    public class func registerStoreClass(_ storeClass: AnyClass?, forStoreType storeType: String) {
        coreDataPrecondition(!storeTypes.contains(storeType),
                             "registerStoreClass(_:forStoreType:): '\(storeType)' is a built-in store type; register your class under a type of its own.")
        guard let storeClass else {
            storeClasses.withLock { _ = $0.removeValue(forKey: storeType) }
            return
        }
        guard let persistentStoreClass = storeClass as? NSPersistentStore.Type else {
            coreDataMisuse("registerStoreClass(_:forStoreType:): \(storeClass) is not a subclass of NSPersistentStore (subclass NSIncrementalStore or NSAtomicStore).")
        }
        storeClasses.withLock { $0[storeType] = persistentStoreClass }
    }

    /// Registers a store class for a store type (the newer spelling).
    public class func registerStoreClass(_ storeClass: AnyClass?, type storeType: NSPersistentStore.StoreType) {
        registerStoreClass(storeClass, forStoreType: storeType.rawValue)
    }

    /// The registered store types and their classes.
    public class var registeredStoreTypes: [String: AnyClass] {
        storeClasses.withLock { $0.mapValues { $0 as AnyClass } }
    }

    /// The class registered for a store type, if any.
    static func registeredStoreClass(forType storeType: String) -> NSPersistentStore.Type? {
        storeClasses.withLock { $0[storeType] }
    }
}
