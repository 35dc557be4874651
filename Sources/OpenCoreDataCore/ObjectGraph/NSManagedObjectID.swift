import Foundation

/// A stable identity for a managed object: its entity, its store and its primary key.
///
/// A newly inserted object has a temporary ID until it is saved (or `obtainPermanentIDs(for:)` is
/// called). IDs are immutable, so they may cross threads and contexts, unlike objects.
open class NSManagedObjectID: NSObject, @unchecked Sendable, NSFetchRequestResult {
    /// The entity of the identified object.
    public let entity: NSEntityDescription
    /// The store's identifier (its `NSStoreUUID`), nil for a temporary ID.
    let storeIdentifier: String?
    /// The row's primary key (`Z_PK`), or 0 for a temporary ID.
    let primaryKey: Int64
    /// A unique number distinguishing temporary IDs.
    let temporaryNumber: UInt64
    private let cachedHash: Int

    private static let temporaryCounter = LockedValue<UInt64>(0)

    init(entity: NSEntityDescription, storeIdentifier: String, primaryKey: Int64) {
        self.entity = entity
        self.storeIdentifier = storeIdentifier
        self.primaryKey = primaryKey
        self.temporaryNumber = 0
        var hasher = Hasher()
        hasher.combine(ObjectIdentifier(entity.rootEntity))
        hasher.combine(primaryKey)
        hasher.combine(storeIdentifier)
        cachedHash = hasher.finalize()
    }

    init(temporaryFor entity: NSEntityDescription) {
        self.entity = entity
        self.storeIdentifier = nil
        self.primaryKey = 0
        self.temporaryNumber = Self.temporaryCounter.withLock { counter in
            counter += 1
            return counter
        }
        var hasher = Hasher()
        hasher.combine(temporaryNumber)
        cachedHash = hasher.finalize()
    }

    /// Whether the ID is temporary (the object has not been saved yet).
    public var isTemporaryID: Bool { storeIdentifier == nil }

    /// The store that holds the object, nil while the ID is temporary.
    public var persistentStore: NSPersistentStore? {
        storeIdentifier.flatMap { PersistentStoreRegistry.store(withIdentifier: $0) }
    }

    /// A URL naming the object: `x-coredata://<store UUID>/<Entity>/p<pk>` (temporary: `…/t<UUID>`).
    public func uriRepresentation() -> URL {
        let entityName = entity.name ?? "?"
        if let storeIdentifier {
            return URL(string: "x-coredata://\(storeIdentifier)/\(entityName)/p\(primaryKey)")!
        }
        return URL(string: "x-coredata:///\(entityName)/t\(temporaryNumber)")!
    }

    open override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? NSManagedObjectID else { return false }
        if self === other { return true }
        if isTemporaryID || other.isTemporaryID { return temporaryNumber == other.temporaryNumber && isTemporaryID == other.isTemporaryID }
        return primaryKey == other.primaryKey && storeIdentifier == other.storeIdentifier && entity.rootEntity === other.entity.rootEntity
    }

    open override var hash: Int { cachedHash }

    open override var description: String { "<\(uriRepresentation().absoluteString)>" }
}
