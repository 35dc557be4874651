import Foundation

/// Keeps the results of a fetch request, split into sections, and reports how they change as the
/// context's objects change, in the form a table view's batch updates need.
///
/// Tracking runs only while the controller has a delegate: changes are seen when the context
/// processes pending changes (at the end of an event, at save, and when saves of other contexts
/// are merged into it).
open class NSFetchedResultsController<ResultType>: @unchecked Sendable {
    /// The request whose results the controller keeps; it must have sort descriptors.
    public let fetchRequest: NSFetchRequest<ResultType>
    /// The context the results live in.
    public let managedObjectContext: NSManagedObjectContext
    /// The key path whose value names each object's section (nil: one section).
    public let sectionNameKeyPath: String?
    /// The name of the on-disk cache of the results (kept for API compatibility; not used yet).
    public let cacheName: String?

    let state: FetchedResultsState

    /// The receiver of change reports; setting one starts tracking changes.
    public weak var delegate: NSFetchedResultsControllerDelegate? {
        get { state.delegate }
        set { state.delegate = newValue }
    }

    /// Creates a controller for a request in a context.
    public init(fetchRequest: NSFetchRequest<ResultType>, managedObjectContext context: NSManagedObjectContext,
                sectionNameKeyPath: String?, cacheName name: String?) {
        self.fetchRequest = fetchRequest
        self.managedObjectContext = context
        self.sectionNameKeyPath = sectionNameKeyPath
        self.cacheName = name
        self.state = FetchedResultsState(request: fetchRequest.erased, context: context, sectionNameKeyPath: sectionNameKeyPath)
        state.cache = name.map { FetchedResultsCache(name: $0) }
        state.owner = { [unowned self] in self.erased }
    }

    /// A controller that shares this one's state, typed as delegates receive it.
    init(sharing state: FetchedResultsState, request: NSFetchRequest<ResultType>) {
        self.fetchRequest = request
        self.managedObjectContext = state.context
        self.sectionNameKeyPath = state.sectionNameKeyPath
        self.cacheName = nil
        self.state = state
    }

    private var erasedStorage: NSFetchedResultsController<NSFetchRequestResult>?

    /// This controller as `NSFetchedResultsController<NSFetchRequestResult>`, for the delegate.
    var erased: NSFetchedResultsController<NSFetchRequestResult> {
        if let same = self as? NSFetchedResultsController<NSFetchRequestResult> { return same }
        if let erasedStorage { return erasedStorage }
        let proxy = NSFetchedResultsController<NSFetchRequestResult>(sharing: state, request: state.request)
        erasedStorage = proxy
        return proxy
    }

    /// Runs the fetch and computes the sections. Throws for a request without sort descriptors or
    /// results whose section names are out of order (134060).
    public func performFetch() throws {
        try state.performFetch()
    }

    /// The fetched objects, in order (nil before `performFetch()`).
    public var fetchedObjects: [ResultType]? {
        state.layout?.objects.compactMap { $0 as? ResultType }
    }

    /// The sections (nil before `performFetch()`).
    public var sections: [NSFetchedResultsSectionInfo]? {
        state.layout?.sections
    }

    /// The object at an index path; an index path out of range traps, as Core Data raises.
    public func object(at indexPath: IndexPath) -> ResultType {
        guard let layout = state.layout, layout.sections.indices.contains(indexPath.section),
              layout.sections[indexPath.section].members.indices.contains(indexPath.row) else {
            preconditionFailure("NSFetchedResultsController: no object at index \(indexPath.row) in section \(indexPath.section).")
        }
        let object = layout.sections[indexPath.section].members[indexPath.row]
        guard let typed = object as? ResultType else {
            preconditionFailure("NSFetchedResultsController: the object at \(indexPath) is a \(type(of: object)), not a \(ResultType.self).")
        }
        return typed
    }

    /// The index path of an object in the results, or nil.
    public func indexPath(forObject object: ResultType) -> IndexPath? {
        guard let managed = object as? NSManagedObject else { return nil }
        return state.layout?.paths[ObjectIdentifier(managed)]
    }

    /// The index titles of the sections, in order, without repeats.
    public var sectionIndexTitles: [String] {
        var titles: [String] = []
        for section in state.layout?.sections ?? [] {
            if let title = section.indexTitle, titles.last != title { titles.append(title) }
        }
        return titles
    }

    /// The index of the first section with an index title (for a table's section index).
    public func section(forSectionIndexTitle title: String, at sectionIndex: Int) -> Int {
        state.layout?.sections.firstIndex { $0.indexTitle == title } ?? sectionIndex
    }

    /// The index title of a section name: the delegate's, or the capitalized first letter.
    public func sectionIndexTitle(forSectionName sectionName: String) -> String? {
        state.indexTitle(for: sectionName)
    }

    /// Deletes an on-disk cache by name (nil: all of them).
    public class func deleteCache(withName name: String?) {
        if let name {
            FetchedResultsCache(name: name).delete()
        } else {
            try? FileManager.default.removeItem(at: FetchedResultsCache.directory)
        }
    }

    /// Beyond Apple: the controller's changes as an `AsyncSequence`. Each element holds the new
    /// state as a snapshot and the difference of the ordered object IDs; the first element is the
    /// current state (once fetched). Tracking runs while a stream is alive, with or without a delegate.
    public var updates: AsyncStream<FetchedResultsUpdate> { state.updates() }
}

/// One change of a fetched results controller's results, for Swift concurrency.
public struct FetchedResultsUpdate: Sendable {
    /// The results after the change: section names and object IDs, changed objects marked reloaded.
    public let snapshot: NSDiffableDataSourceSnapshot<String, NSManagedObjectID>
    /// How the ordered object IDs changed.
    public let difference: CollectionDifference<NSManagedObjectID>
}

/// What a controller and its delegate-facing proxy share.
final class FetchedResultsState {
    let request: NSFetchRequest<NSFetchRequestResult>
    let context: NSManagedObjectContext
    let sectionNameKeyPath: String?
    var layout: FetchedResultsLayout?
    /// The on-disk cache, when the controller has a cache name.
    var cache: FetchedResultsCache?
    var owner: (() -> NSFetchedResultsController<NSFetchRequestResult>)?
    /// Set by the protocol's default implementations: the delegate does not implement that method.
    var snapshotMethodIsDefault = false
    var differenceMethodIsDefault = false
    private var observer: NSObjectProtocol?

    weak var delegate: NSFetchedResultsControllerDelegate? {
        didSet {
            implementsSnapshot = nil
            implementsDifference = nil
            updateObservation()
        }
    }
    /// What the current delegate implements, learned the first time each form is offered.
    private var implementsSnapshot: Bool?
    private var implementsDifference: Bool?

    init(request: NSFetchRequest<NSFetchRequestResult>, context: NSManagedObjectContext, sectionNameKeyPath: String?) {
        self.request = request
        self.context = context
        self.sectionNameKeyPath = sectionNameKeyPath
    }

    deinit {
        if let observer { NotificationCenter.default.removeObserver(observer) }
    }

    func indexTitle(for sectionName: String) -> String? {
        if let owner, let custom = delegate?.controller(owner(), sectionIndexTitleForSectionName: sectionName) { return custom }
        return FetchedResultsLayout.defaultIndexTitle(sectionName)
    }

    func performFetch() throws {
        guard let sorts = request.sortDescriptors, !sorts.isEmpty else {
            throw CoreDataError.make(.coreData, "An NSFetchedResultsController requires a fetch request with sort descriptors.")
        }
        let fetched = try fetchLayout()
        layout = fetched
        updateObservation()
        if hasStreams { publish(Self.initialUpdate(of: fetched)) }
        // As on Apple platforms, a snapshot delegate receives the fetched state at once.
        if let delegate, let owner { _ = offerSnapshot(of: fetched, reloading: [], to: delegate, controller: owner()) }
    }

    /// The results from a valid cache, or from a fetch (which then refreshes the cache).
    private func fetchLayout() throws -> FetchedResultsLayout {
        guard let cache, let coordinator = context.persistentStoreCoordinator, !context.hasChanges else {
            return try fetchFromStore()
        }
        let fingerprint = FetchedResultsCache.fingerprint(request, sectionNameKeyPath: sectionNameKeyPath)
        let stores = coordinator.persistentStores
        let token = FetchedResultsCache.storeToken(stores)
        if let cached = try cache.load(fingerprint: fingerprint, token: token, model: coordinator.managedObjectModel, stores: stores) {
            let objects = cached.ids.map { context.object(with: $0) }
            let names = Dictionary(zip(cached.ids.map(\.key), cached.names), uniquingKeysWith: { first, _ in first })
            return try FetchedResultsLayout(objects: objects, sectionNameKeyPath: sectionNameKeyPath, indexTitle: indexTitle, knownNames: names)
        }
        let layout = try fetchFromStore()
        let names = layout.sections.flatMap { section in Array(repeating: section.name, count: section.members.count) }
        cache.save(objects: layout.objects, names: names, fingerprint: fingerprint, token: token, stores: stores)
        return layout
    }

    /// The results as the store (and the context's pending changes) give them.
    private func fetchFromStore() throws -> FetchedResultsLayout {
        let objects = try context.fetch(request.asObjectRequest()).compactMap { $0 as? NSManagedObject }
        return try FetchedResultsLayout(objects: objects, sectionNameKeyPath: sectionNameKeyPath, indexTitle: indexTitle, knownNames: try sectionNamesForBatchedFetch())
    }

    /// With a batch size, the section names come from one query of (ID, section key) pairs, so
    /// computing sections does not load every row.
    private func sectionNamesForBatchedFetch() throws -> [ObjectKey: String] {
        guard request.fetchBatchSize > 0, let keyPath = sectionNameKeyPath else { return [:] }
        let names = NSFetchRequest<NSFetchRequestResult>()
        names.entity = try request.resolvedEntity(in: context.persistentStoreCoordinator!.managedObjectModel)
        names.predicate = request.predicate
        names.includesSubentities = request.includesSubentities
        names.resultType = .dictionaryResultType
        names.propertiesToFetch = ["self", keyPath]
        var result: [ObjectKey: String] = [:]
        for case let row as NSDictionary in try context.fetch(names) {
            guard let id = row["self"] as? NSManagedObjectID else { continue }
            result[id.key] = FetchedResultsLayout.sectionName(from: row[keyPath])
        }
        return result
    }

    private func updateObservation() {
        if (delegate == nil && streams.withLock({ $0.isEmpty })) || layout == nil {
            if let observer { NotificationCenter.default.removeObserver(observer) }
            observer = nil
            return
        }
        guard observer == nil else { return }
        let box = UncheckedSendable(self)
        observer = NotificationCenter.default.addObserver(forName: .NSManagedObjectContextObjectsDidChange, object: context, queue: nil) { note in
            box.value.contextDidChange(note)
        }
    }

    // MARK: AsyncSequence of updates

    let streams = LockedValue<[UUID: AsyncStream<FetchedResultsUpdate>.Continuation]>([:])

    /// A stream of updates; it starts with the current state when the results are fetched.
    func updates() -> AsyncStream<FetchedResultsUpdate> {
        let (stream, continuation) = AsyncStream<FetchedResultsUpdate>.makeStream(bufferingPolicy: .unbounded)
        let token = UUID()
        streams.withLock { $0[token] = continuation }
        let box = UncheckedSendable(self)
        continuation.onTermination = { _ in
            box.value.streams.withLock { _ = $0.removeValue(forKey: token) }
        }
        if let layout { continuation.yield(Self.initialUpdate(of: layout)) }
        updateObservation()
        return stream
    }

    private var hasStreams: Bool { !streams.withLock { $0.isEmpty } }

    /// The first element of a stream: the whole state, as insertions (built in linear time).
    static func initialUpdate(of layout: FetchedResultsLayout) -> FetchedResultsUpdate {
        let inserts = layout.objects.enumerated().map { CollectionDifference<NSManagedObjectID>.Change.insert(offset: $0.offset, element: $0.element.objectID, associatedWith: nil) }
        return FetchedResultsUpdate(snapshot: snapshot(of: layout, reloading: []), difference: CollectionDifference(inserts)!)
    }

    private func publish(_ update: FetchedResultsUpdate) {
        for continuation in streams.withLock({ Array($0.values) }) { continuation.yield(update) }
    }

    /// Hands the delegate a snapshot if it implements the snapshot form; returns whether it does.
    private func offerSnapshot(of layout: FetchedResultsLayout, reloading changed: Set<ObjectIdentifier>,
                               to delegate: NSFetchedResultsControllerDelegate, controller: NSFetchedResultsController<NSFetchRequestResult>) -> Bool {
        guard implementsSnapshot != false else { return false }
        snapshotMethodIsDefault = false
        delegate.controller(controller, didChangeContentWith: Self.snapshot(of: layout, reloading: changed))
        implementsSnapshot = !snapshotMethodIsDefault
        return implementsSnapshot == true
    }

    /// A snapshot of a layout: section names and object IDs, changed objects marked reloaded.
    static func snapshot(of layout: FetchedResultsLayout, reloading changed: Set<ObjectIdentifier>) -> NSDiffableDataSourceSnapshot<String, NSManagedObjectID> {
        var snapshot = NSDiffableDataSourceSnapshot<String, NSManagedObjectID>()
        for section in layout.sections {
            snapshot.appendSections([section.name])
            snapshot.appendItems(section.members.map(\.objectID), toSection: section.name)
        }
        snapshot.reloadItems(layout.objects.filter { changed.contains(ObjectIdentifier($0)) }.map(\.objectID))
        return snapshot
    }

    /// Applies a context change to the results and reports it to the delegate.
    private func contextDidChange(_ note: Notification) {
        guard let layout, let owner, delegate != nil || !streams.withLock({ $0.isEmpty }) else { return }
        let info = note.userInfo ?? [:]
        if info[NSInvalidatedAllObjectsKey] != nil {
            // After reset(), a new performFetch is needed (as in Core Data).
            self.layout = nil
            return
        }
        guard let entity = try? request.resolvedEntity(in: context.persistentStoreCoordinator!.managedObjectModel) else { return }
        func objects(_ key: String) -> [NSManagedObject] {
            Array((info[key] as? Set<NSManagedObject>) ?? []).filter {
                request.includesSubentities ? $0.entity.isKindOf(entity: entity) : $0.entity === entity
            }
        }
        let deleted = objects(NSDeletedObjectsKey) + objects(NSInvalidatedObjectsKey)
        var changed = objects(NSInsertedObjectsKey) + objects(NSUpdatedObjectsKey) + objects(NSRefreshedObjectsKey)
        // Beyond Apple: changes to related objects that the predicate, a sort key or the section key
        // path reads through a to-one relationship.
        // The objects pointing at such a changed object (found through the inverse relationship,
        // loaded if needed) are re-judged like changed objects.
        for object in relatedObjectsAffected(by: info) where !changed.contains(where: { $0 === object }) {
            if request.includesSubentities ? object.entity.isKindOf(entity: entity) : object.entity === entity { changed.append(object) }
        }
        guard !deleted.isEmpty || !changed.isEmpty else { return }
        let gone = Set(deleted.map { ObjectIdentifier($0) })
        changed.removeAll { gone.contains(ObjectIdentifier($0)) }
        let changedIDs = Set(changed.map { ObjectIdentifier($0) })
        // Remove deleted and changed objects, then insert the changed ones that match, in order.
        var ordered = layout.objects.filter { !gone.contains(ObjectIdentifier($0)) && !changedIDs.contains(ObjectIdentifier($0)) }
        let sorts = request.sortDescriptors ?? []
        let precedes: (NSManagedObject, NSManagedObject) -> Bool = { lhs, rhs in
            for descriptor in sorts {
                let order = descriptor.compare(lhs, to: rhs)
                if order != .orderedSame { return order == .orderedAscending }
            }
            return false
        }
        for object in changed where !gone.contains(ObjectIdentifier(object)) && !object.isDeleted && object.managedObjectContext === context {
            guard request.predicate?.evaluate(with: object) ?? true else { continue }
            var low = 0
            var high = ordered.count
            while low < high {
                let middle = (low + high) / 2
                if precedes(object, ordered[middle]) { high = middle } else { low = middle + 1 }
            }
            ordered.insert(object, at: low)
        }
        if request.fetchOffset > 0 || request.fetchLimit > 0 {
            // Beyond Apple: the limit and offset hold while tracking. Objects outside the window
            // can enter it, so the window is fetched again (with the context's pending changes).
            guard let window = try? context.fetch(request.asObjectRequest()).compactMap({ $0 as? NSManagedObject }) else { return }
            ordered = window
        }
        guard let newLayout = try? FetchedResultsLayout(objects: ordered, sectionNameKeyPath: sectionNameKeyPath, indexTitle: indexTitle) else { return }
        report(from: layout, to: newLayout, changed: changedIDs, owner: owner)
    }

    /// The to-one relationships (first key path steps) the request's predicate, sorts and sections read through.
    private lazy var readRelationships: [NSRelationshipDescription] = {
        guard let model = context.persistentStoreCoordinator?.managedObjectModel, let entity = try? request.resolvedEntity(in: model) else { return [] }
        var keyPaths = (request.sortDescriptors ?? []).compactMap(\.key)
        if let sectionNameKeyPath { keyPaths.append(sectionNameKeyPath) }
        func collect(_ predicate: NSPredicate?) {
            if let compound = predicate as? NSCompoundPredicate { compound.predicates.forEach(collect) }
            if let comparison = predicate as? NSComparisonPredicate {
                for expression in [comparison.leftExpression, comparison.rightExpression] where expression.expressionType == .keyPath {
                    keyPaths.append(expression.keyPath)
                }
            }
        }
        collect(request.predicate)
        var result: [NSRelationshipDescription] = []
        for keyPath in keyPaths {
            let parts = keyPath.split(separator: ".")
            guard parts.count > 1, let relationship = entity.frozenRelationshipsByName[String(parts[0])], !relationship.isToMany,
                  !result.contains(where: { $0 === relationship }) else { continue }
            result.append(relationship)
        }
        return result
    }()

    /// The objects of the results' entity whose related objects (through a relationship the
    /// request reads) changed.
    private func relatedObjectsAffected(by info: [AnyHashable: Any]) -> [NSManagedObject] {
        guard !readRelationships.isEmpty else { return [] }
        var changed: [NSManagedObject] = []
        for key in [NSInsertedObjectsKey, NSUpdatedObjectsKey, NSRefreshedObjectsKey] {
            changed += (info[key] as? Set<NSManagedObject>) ?? []
        }
        var affected: [NSManagedObject] = []
        for relationship in readRelationships {
            guard let destination = relationship.destinationEntity, let inverse = relationship.inverseRelationship else { continue }
            for related in changed where related.entity.isKindOf(entity: destination) && !related.isDeleted {
                if inverse.isToMany {
                    affected += related.relationshipSet(for: inverse).members
                } else if let source = related.toOneDestination(inverse) {
                    affected.append(source)
                }
            }
        }
        return affected
    }

    /// Installs a new layout and reports the change to the delegate in the form it implements.
    private func report(from layout: FetchedResultsLayout, to newLayout: FetchedResultsLayout, changed changedIDs: Set<ObjectIdentifier>,
                        owner: () -> NSFetchedResultsController<NSFetchRequestResult>) {
        let changes = FetchedResultsChanges(from: layout, to: newLayout, changed: changedIDs)
        self.layout = newLayout
        guard !changes.isEmpty else { return }
        cache?.delete()
        if hasStreams {
            publish(FetchedResultsUpdate(
                snapshot: Self.snapshot(of: newLayout, reloading: changedIDs),
                difference: newLayout.objects.map(\.objectID).difference(from: layout.objects.map(\.objectID))))
        }
        guard let delegate else { return }
        let controller = owner()
        // The snapshot and difference forms, when the delegate implements one, replace the rest.
        if offerSnapshot(of: newLayout, reloading: changedIDs, to: delegate, controller: controller) { return }
        if sectionNameKeyPath == nil, implementsDifference != false {
            differenceMethodIsDefault = false
            let difference = newLayout.objects.map(\.objectID).difference(from: layout.objects.map(\.objectID))
            delegate.controller(controller, didChangeContentWith: difference)
            implementsDifference = !differenceMethodIsDefault
            if implementsDifference == true { return }
        }
        delegate.controllerWillChangeContent(controller)
        for (index, section) in changes.deletedSections { delegate.controller(controller, didChange: section, atSectionIndex: index, for: .delete) }
        for (index, section) in changes.insertedSections { delegate.controller(controller, didChange: section, atSectionIndex: index, for: .insert) }
        for change in changes.objects {
            delegate.controller(controller, didChange: change.object, at: change.old, for: change.type, newIndexPath: change.new)
        }
        delegate.controllerDidChangeContent(controller)
    }
}
