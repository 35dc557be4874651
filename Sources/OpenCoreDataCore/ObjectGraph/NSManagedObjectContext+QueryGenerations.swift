import Foundation

/// Query generations: a context pinned to a generation reads the stores as they were at one
/// moment, whatever other contexts, processes or batch requests save since, until it moves on.
///
/// A context is unpinned by default. `setQueryGenerationFrom(.current)` pins it to the newest
/// generation, fixed at its next fetch or fault; a token from another context's
/// `queryGenerationToken` pins it to that context's generation. A pinned context moves to the
/// newest generation (fixed again at its next read) when it saves, when it is reset and when it
/// merges changes (`mergeChanges(fromContextDidSave:)`, automatic merging, remote merges).
/// Stores that can't keep a generation (see `QueryGeneration`) are read as they are now.
extension NSManagedObjectContext {
    /// The token of the generation the context reads: nil when it is unpinned, or when none of its
    /// stores can keep a generation. For a context pinned to `current` that hasn't read since, the
    /// generation is fixed now. A child context reads through its parent and answers its parent's.
    public var queryGenerationToken: NSQueryGenerationToken? {
        if let parentContext { return parentContext.performAndWait { parentContext.queryGenerationToken } }
        guard let pin = queryGenerationPin, let coordinator = coordinatorStorage,
              let generation = try? pin.generation(of: coordinator), !generation.isEmpty else { return nil }
        return NSQueryGenerationToken(generation: generation)
    }

    /// Pins the context to a generation: `NSQueryGenerationToken.current` for the newest (fixed at
    /// the next read), another context's `queryGenerationToken` for the same generation as that
    /// context, nil to unpin it.
    ///
    /// Throws 134091 (`NSPersistentStoreUnsupportedRequestTypeError`) for a child context, which
    /// reads through its parent (pin the parent instead), and for a token of another coordinator's
    /// stores or of a context that has none.
    public func setQueryGenerationFrom(_ generation: NSQueryGenerationToken?) throws {
        guard let generation else {
            queryGenerationPin = nil
            return
        }
        guard parentContext == nil else {
            throw CoreDataError.make(.unsupportedRequest, "A child context reads through its parent context: pin the parent (the context whose parent is the coordinator) to a query generation instead.")
        }
        guard let coordinator = coordinatorStorage else {
            throw CoreDataError.make(.coreData, "The context has no persistent store coordinator to read a query generation of.")
        }
        guard let pinned = generation.generation else {
            queryGenerationPin = QueryGenerationPin(nil)
            return
        }
        guard pinned.coordinator === coordinator else {
            throw CoreDataError.make(.unsupportedRequest, "The query generation token belongs to another persistent store coordinator's stores; a context can pin only to a generation of its own coordinator.")
        }
        queryGenerationPin = QueryGenerationPin(pinned)
    }

    /// A pinned context moves to the newest generation, fixed at its next read (after a save,
    /// reset or merge).
    func advanceQueryGeneration() {
        queryGenerationPin?.moveToCurrent()
    }

    /// Runs a read of the stores in the context's generation (as is, when unpinned).
    func readingQueryGeneration<T>(_ body: () throws -> T) throws -> T {
        guard let pin = queryGenerationPin, let coordinator = coordinatorStorage else { return try body() }
        let generation = try pin.generation(of: coordinator)
        if generation.isEmpty { return try body() }
        return try QueryGeneration.$reading.withValue(generation, operation: body)
    }
}

/// What a pinned context reads: a fixed generation, or the newest, fixed at the next read.
/// Used on the context's queue only.
final class QueryGenerationPin {
    private var fixed: QueryGeneration?

    init(_ generation: QueryGeneration?) { fixed = generation }

    /// The generation to read, fixed now if it wasn't.
    func generation(of coordinator: NSPersistentStoreCoordinator) throws -> QueryGeneration {
        if let fixed { return fixed }
        let newest = try coordinator.makeQueryGeneration()
        fixed = newest
        return newest
    }

    /// Lets the fixed generation go: the next read fixes the newest.
    func moveToCurrent() { fixed = nil }
}

/// The parent of a pinned context: reads run in its generation, saves as they would.
final class GenerationReadingParent: ParentStore {
    let parent: ParentStore
    unowned let context: NSManagedObjectContext

    init(parent: ParentStore, context: NSManagedObjectContext) {
        self.parent = parent
        self.context = context
    }

    var managedObjectModel: NSManagedObjectModel { parent.managedObjectModel }

    func fetchRows(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription) throws -> FetchedRows {
        try context.readingQueryGeneration { try parent.fetchRows(request, entity: entity) }
    }

    func countRows(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription) throws -> Int {
        try context.readingQueryGeneration { try parent.countRows(request, entity: entity) }
    }

    func fetchDictionaries(_ request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription) throws -> [[String: Any]] {
        try context.readingQueryGeneration { try parent.fetchDictionaries(request, entity: entity) }
    }

    func loadRow(_ objectID: NSManagedObjectID) throws -> StoredRow? {
        try context.readingQueryGeneration { try parent.loadRow(objectID) }
    }

    func loadRows(_ objectIDs: [NSManagedObjectID]) throws -> [ObjectKey: StoredRow] {
        try context.readingQueryGeneration { try parent.loadRows(objectIDs) }
    }

    func loadToManyIDs(_ objectIDs: [NSManagedObjectID], relationship: NSRelationshipDescription) throws -> [ObjectKey: [NSManagedObjectID]] {
        try context.readingQueryGeneration { try parent.loadToManyIDs(objectIDs, relationship: relationship) }
    }

    func loadToManyIDs(_ objectID: NSManagedObjectID, relationship: NSRelationshipDescription) throws -> [NSManagedObjectID] {
        try context.readingQueryGeneration { try parent.loadToManyIDs(objectID, relationship: relationship) }
    }

    func applyChanges(_ changes: SaveChanges, from context: NSManagedObjectContext) throws -> PermanentIDs {
        try parent.applyChanges(changes, from: context)
    }

    func holdingWrites<T>(_ body: () throws -> T) throws -> T {
        try parent.holdingWrites(body)
    }
}
