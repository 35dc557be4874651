import Foundation

/// What a controller and its delegate-facing proxy share: the results as an index of row keys,
/// the objects made from them so far, and the change tracking.
///
/// Objects are made only for the rows that are asked for (`object(at:)`, a section's objects,
/// `fetchedObjects`), a batch at a time when the request has a `fetchBatchSize`. A change of k
/// objects is applied to the index and reported in O(k log N).
final class FetchedResultsState {
    let request: NSFetchRequest<NSFetchRequestResult>
    let context: NSManagedObjectContext
    let sectionNameKeyPath: String?
    /// The results; nil before `performFetch()` and after the context is reset.
    private(set) var index: FetchedResultsIndex?
    /// The on-disk cache, when the controller has a cache name.
    var cache: FetchedResultsCache?
    var owner: (() -> NSFetchedResultsController<NSFetchRequestResult>)?
    /// The controller the app made (not the erased one its delegate receives), whose section
    /// index methods a subclass may override.
    weak var indexing: (any SectionIndexing)?
    /// Set by the protocol's default implementations: the delegate does not implement that method.
    var snapshotMethodIsDefault = false
    var differenceMethodIsDefault = false
    private var observer: NSObjectProtocol?

    /// Where row keys come from (entity and store), shared by every index this state builds.
    private var origins: [SortedRows.Origin] = []
    /// Rows of unsaved objects: their keys (negative, their temporary IDs' numbers) and objects.
    private var temporaryObjects: [Int64: NSManagedObject] = [:]
    private var temporaryKeys: [ObjectIdentifier: Int64] = [:]
    /// The origin of the last key made (entity, store number, index).
    private var lastOrigin: (entity: NSEntityDescription, store: Int, index: Int)?
    /// Made on demand. A change only marks it stale: dropping a million references would cost
    /// O(N) in the change; it is replaced at the next `fetchedObjects`, which is O(N) anyway.
    private var objectsCache: [NSManagedObject]?
    private var objectsCacheIsStale = false
    private var sectionsCache: [FetchedResultsSection]?

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

    /// A section's index title: the controller's `sectionIndexTitle(forSectionName:)`, which a
    /// subclass may override.
    func indexTitle(for sectionName: String) -> String? {
        guard let indexing else { return defaultIndexTitle(for: sectionName) }
        return indexing.sectionIndexTitle(forSectionName: sectionName)
    }

    /// The index title `sectionIndexTitle(forSectionName:)` gives unless overridden: the
    /// delegate's, or the capitalized first letter.
    func defaultIndexTitle(for sectionName: String) -> String? {
        if let owner, let custom = delegate?.controller(owner(), sectionIndexTitleForSectionName: sectionName) { return custom }
        return sectionName.first.map { String($0).uppercased() }
    }

    private var descriptors: [NSSortDescriptor] { request.sortDescriptors ?? [] }

    private var entity: NSEntityDescription? {
        // Ignored: performFetch already threw if the request names no entity of the model.
        context.persistentStoreCoordinator.flatMap { try? request.resolvedEntity(in: $0.managedObjectModel) }
    }

    // MARK: Fetching

    func performFetch() throws {
        guard !descriptors.isEmpty else {
            throw CoreDataError.make(.coreData, "An NSFetchedResultsController requires a fetch request with sort descriptors.")
        }
        install(try fetchRows())
        updateObservation()
        if hasStreams { publish(initialUpdate()) }
        // As on Apple platforms, a snapshot delegate receives the fetched state at once.
        if let delegate, let owner { _ = offerSnapshot(reloading: [], to: delegate, controller: owner()) }
    }

    private func install(_ rows: SortedRows) {
        index = FetchedResultsIndex(rows: adopt(rows), descriptors: descriptors)
        objectsCache = nil
        sectionsCache = nil
    }

    /// The results from a valid cache, or from a fetch (which then refreshes the cache). A context
    /// pinned to a query generation reads the past, which the cache (keyed by the stores as they
    /// are now) doesn't hold: it fetches.
    private func fetchRows() throws -> SortedRows {
        guard let cache, let coordinator = context.persistentStoreCoordinator, !context.hasChanges, context.queryGenerationToken == nil else {
            return try fetchFromStore()
        }
        let fingerprint = FetchedResultsCache.fingerprint(request, sectionNameKeyPath: sectionNameKeyPath)
        let stores = coordinator.persistentStores
        let token = FetchedResultsCache.storeToken(stores)
        if let cached = try cache.load(fingerprint: fingerprint, token: token, model: coordinator.managedObjectModel, stores: stores) {
            return cached
        }
        let rows = try fetchFromStore()
        cache.save(rows, fingerprint: fingerprint, token: token, stores: stores)
        return rows
    }

    /// The results as the store (and the context's pending changes) give them. With a batch size
    /// and no pending changes to the entity, one columnar query reads them without making objects.
    private func fetchFromStore() throws -> SortedRows {
        guard let coordinator = context.persistentStoreCoordinator else { _ = try context.requireParentStore(); return SortedRows() }
        let entity = try request.resolvedEntity(in: coordinator.managedObjectModel)
        let objectRequest = request.asObjectRequest()
        if request.fetchBatchSize > 0, context.parent == nil, !context.hasPendingChanges(affecting: entity) {
            try FetchValidation.validate(objectRequest, entity: entity)
            let sorted = try context.readingQueryGeneration {
                try coordinator.fetchSortedRows(objectRequest, entity: entity, sectionNameKeyPath: sectionNameKeyPath, chunkSize: FetchedResultsIndex.chunkSize)
            }
            if let rows = sorted {
                return rows
            }
        }
        let objects = try context.fetch(objectRequest).compactMap { $0 as? NSManagedObject }
        return try sortedRows(of: objects, entity: entity)
    }

    /// Fetched objects in columnar form.
    private func sortedRows(of objects: [NSManagedObject], entity: NSEntityDescription) throws -> SortedRows {
        var rows = SortedRows()
        let kinds = descriptors.map { SortValue.Kind(Self.property(at: $0.key, from: entity)) }
        let reader = FetchedResultsValueReader(descriptors: descriptors, kinds: kinds, sectionNameKeyPath: sectionNameKeyPath, entity: entity)
        var chunk = SortedRowsChunk(kinds: kinds, capacity: FetchedResultsIndex.chunkSize)
        var sections = SectionRuns()
        for (position, object) in objects.enumerated() {
            chunk.keys.append(key(of: object))
            let name = reader.read(object, into: &chunk)
            try sections.append(name, row: position)
            rows.keepIfFull(&chunk, kinds: kinds, capacity: FetchedResultsIndex.chunkSize)
        }
        rows.keepLast(&chunk)
        // The keys were made with this state's origins.
        rows.origins = origins
        rows.sections = sections.runs
        return rows
    }

    /// The attribute or relationship a key path ends at, nil when it can't be followed.
    static func property(at keyPath: String?, from entity: NSEntityDescription) -> NSPropertyDescription? {
        // Ignored: a key path that isn't a stored property is legitimately "none" (sorted as other values).
        keyPath.flatMap { try? PredicateValidation.validateKeyPath($0, from: entity, allowToMany: false) }
    }

    /// Rows whose keys use this state's origins (renumbering keys only if the rows numbered theirs
    /// differently).
    private func adopt(_ rows: SortedRows) -> SortedRows {
        var mapping: [Int] = []
        for origin in rows.origins { mapping.append(originIndex(entity: origin.entity, store: origin.store)) }
        guard mapping.enumerated().contains(where: { $0.offset != $0.element }) else { return rows }
        var renumbered = rows
        for chunk in renumbered.chunks.indices {
            for row in renumbered.chunks[chunk].keys.indices {
                let key = renumbered.chunks[chunk].keys[row]
                guard key >= 0 else { continue }
                renumbered.chunks[chunk].keys[row] = SortedRows.key(primaryKey: SortedRows.primaryKey(of: key), origin: mapping[SortedRows.originIndex(of: key)])
            }
        }
        return renumbered
    }

    private func originIndex(entity: NSEntityDescription, store: NSPersistentStore) -> Int {
        if let index = origins.firstIndex(where: { $0.entity === entity && $0.store === store }) { return index }
        origins.append(SortedRows.Origin(entity: entity, store: store))
        return origins.count - 1
    }

    // MARK: Keys and objects

    /// An object's row key (registering an unsaved object under its temporary number). Read from
    /// the object's key, so an object fetched with its values makes no ID here.
    private func key(of object: NSManagedObject) -> Int64 {
        let key = object.objectKey
        if key.isTemporary {
            temporaryObjects[key.primaryKey] = object
            temporaryKeys[ObjectIdentifier(object)] = key.primaryKey
            return key.primaryKey
        }
        let entity = object.entity
        // Most keys come from the origin of the previous one: skip the store lookup then.
        if let last = lastOrigin, last.entity === entity, last.store == key.store {
            return SortedRows.key(primaryKey: key.primaryKey, origin: last.index)
        }
        // The store is this context's: another coordinator may have the same store open, and
        // `persistentStore` answers with the one added last.
        let origin: Int
        if let known = origins.firstIndex(where: { $0.entity === entity && $0.store.storeNumber == key.store }) {
            origin = known
        } else {
            let ownStore = context.persistentStoreCoordinator?.persistentStores.first { $0.storeNumber == key.store }
            guard let store = ownStore ?? object.objectID.persistentStore else { return key.primaryKey }
            origin = originIndex(entity: entity, store: store)
        }
        lastOrigin = (entity, key.store, origin)
        return SortedRows.key(primaryKey: key.primaryKey, origin: origin)
    }

    /// The key under which the results hold an object, nil when they don't.
    private func indexedKey(of object: NSManagedObject) -> Int64? {
        guard let index else { return nil }
        if let temporary = temporaryKeys[ObjectIdentifier(object)], index.contains(temporary) { return temporary }
        guard !object.objectID.isTemporaryID else { return nil }
        let key = key(of: object)
        return index.contains(key) ? key : nil
    }

    /// Rows of objects saved since they entered the results take their permanent keys.
    private func refreshTemporaryKeys() {
        guard !temporaryKeys.isEmpty, let index else { return }
        for (identity, temporary) in temporaryKeys {
            guard let object = temporaryObjects[temporary], index.contains(temporary) else {
                temporaryKeys[identity] = nil
                temporaryObjects[temporary] = nil
                continue
            }
            guard !object.objectID.isTemporaryID else { continue }
            temporaryKeys[identity] = nil
            temporaryObjects[temporary] = nil
            index.rekey(temporary, to: key(of: object))
        }
    }

    /// The object ID of a row key.
    func objectID(forKey key: Int64) -> NSManagedObjectID {
        if key < 0, let object = temporaryObjects[key] { return object.objectID }
        let origin = origins[SortedRows.originIndex(of: key)]
        return origin.store.objectID(for: origin.entity, primaryKey: SortedRows.primaryKey(of: key))
    }

    /// The object of a row key: registered, or a new fault.
    private func object(forKey key: Int64) -> NSManagedObject {
        if key < 0, let object = temporaryObjects[key] { return object }
        return context.object(with: objectID(forKey: key))
    }

    /// The objects of a range of rows; with a batch size, the ones not loaded yet load together
    /// (in batches of the batch size) when the first of them fires its fault.
    private func objects(in range: Range<Int>) -> [NSManagedObject] {
        guard let index else { return [] }
        let objects = index.keys(in: range).map(object(forKey:))
        let size = request.fetchBatchSize
        guard size > 0 else { return objects }
        var start = 0
        while start < objects.count {
            let batch = objects[start..<min(start + size, objects.count)].filter { $0.committedValues == nil && !$0.isInserted && $0.faultBatch == nil }
            if !batch.isEmpty {
                let faults = FaultBatch(ids: batch.map(\.objectID), size: batch.count)
                for (position, object) in batch.enumerated() {
                    object.faultBatch = faults
                    object.faultBatchIndex = Int32(position)
                }
            }
            start += size
        }
        return objects
    }

    // MARK: Reading

    var fetchedObjects: [NSManagedObject]? {
        guard let index else { return nil }
        if let objectsCache, !objectsCacheIsStale { return objectsCache }
        objectsCache = nil
        let objects = objects(in: 0..<index.count)
        objectsCache = objects
        objectsCacheIsStale = false
        return objects
    }

    var sections: [FetchedResultsSection]? {
        guard let index else { return nil }
        if let sectionsCache { return sectionsCache }
        let sections = index.sectionNames.map { FetchedResultsSection(name: $0, indexTitle: indexTitle(for: $0), state: self) }
        sectionsCache = sections
        return sections
    }

    /// The object at an index path, nil when it is out of range.
    func object(at indexPath: IndexPath) -> NSManagedObject? {
        guard let index, let position = index.position(of: indexPath) else { return nil }
        let size = max(request.fetchBatchSize, 1)
        let start = position / size * size
        let batch = objects(in: start..<min(start + size, index.count))
        return batch[position - start]
    }

    func indexPath(of object: NSManagedObject) -> IndexPath? {
        guard let index, let key = indexedKey(of: object), let position = index.position(of: key) else { return nil }
        return index.indexPath(at: position)
    }

    func numberOfObjects(inSectionNamed name: String) -> Int? {
        guard let index, let section = index.section(named: name) else { return nil }
        return index.sectionRowCounts[section]
    }

    func objects(inSectionNamed name: String) -> [NSManagedObject]? {
        guard let index, let section = index.section(named: name) else { return nil }
        let start = index.sectionStart(section)
        return objects(in: start..<(start + index.sectionRowCounts[section]))
    }

    // MARK: Observation

    private func updateObservation() {
        if (delegate == nil && streams.withLock({ $0.isEmpty })) || index == nil {
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
        if index != nil { continuation.yield(initialUpdate()) }
        updateObservation()
        return stream
    }

    private var hasStreams: Bool { !streams.withLock { $0.isEmpty } }

    /// The first element of a stream: the whole state, as insertions.
    private func initialUpdate() -> FetchedResultsUpdate {
        let ids = (index?.allKeys ?? []).map(objectID(forKey:))
        let inserts = ids.enumerated().map { CollectionDifference<NSManagedObjectID>.Change.insert(offset: $0.offset, element: $0.element, associatedWith: nil) }
        return FetchedResultsUpdate(snapshot: snapshot(reloading: []), difference: CollectionDifference(inserts)!)
    }

    private func publish(_ update: FetchedResultsUpdate) {
        for continuation in streams.withLock({ Array($0.values) }) { continuation.yield(update) }
    }

    /// Hands the delegate a snapshot if it implements the snapshot form; returns whether it does.
    private func offerSnapshot(reloading changed: [NSManagedObject], to delegate: NSFetchedResultsControllerDelegate,
                               controller: NSFetchedResultsController<NSFetchRequestResult>) -> Bool {
        guard implementsSnapshot != false else { return false }
        snapshotMethodIsDefault = false
        delegate.controller(controller, didChangeContentWith: snapshot(reloading: changed))
        implementsSnapshot = !snapshotMethodIsDefault
        return implementsSnapshot == true
    }

    /// The results as a snapshot: section names and object IDs, changed objects marked reloaded.
    /// It is built when first read, from the rows as they are now: a delegate without the snapshot
    /// method (which the first offer finds out) costs no object ID per row.
    private func snapshot(reloading changed: [NSManagedObject]) -> NSDiffableDataSourceSnapshot<String, NSManagedObjectID> {
        guard let index else { return NSDiffableDataSourceSnapshot() }
        let sections = Array(zip(index.sectionNames, index.sectionRowCounts))
        let keys = index.keysToReadLater
        // What turns keys into object IDs, captured now (unsaved objects' IDs resolved now).
        let temporaryIDs = temporaryObjects.mapValues(\.objectID)
        let origins = UncheckedSendable(origins.map { ($0.entity, $0.store.objectIDFactory) })
        let reloaded = changed.map(\.objectID)
        return NSDiffableDataSourceSnapshot {
            var contents = SnapshotContents<String, NSManagedObjectID>()
            let keys = keys.value()
            var start = 0
            for (name, count) in sections {
                contents.appendSections([name])
                contents.appendItems(keys[start..<(start + count)].map { key in
                    if key < 0, let id = temporaryIDs[key] { return id }
                    let (entity, ids) = origins.value[SortedRows.originIndex(of: key)]
                    return ids.objectID(for: entity, primaryKey: SortedRows.primaryKey(of: key))
                }, toSection: name)
                start += count
            }
            contents.reloadedItems = reloaded.filter { contents.sectionOfItem[$0] != nil }
            return contents
        }
    }

    // MARK: Tracking changes

    /// Applies a context change to the results and reports it to the delegate.
    private func contextDidChange(_ note: Notification) {
        guard let index, let owner, delegate != nil || hasStreams else { return }
        let info = note.userInfo ?? [:]
        if info[NSInvalidatedAllObjectsKey] != nil {
            // After reset(), a new performFetch is needed (as in Core Data).
            self.index = nil
            objectsCacheIsStale = true
            sectionsCache = nil
            return
        }
        guard let entity else { return }
        let belongs: (NSManagedObject) -> Bool = { [request] object in
            request.includesSubentities ? object.entity.isKindOf(entity: entity) : object.entity === entity
        }
        func objects(_ key: String) -> [NSManagedObject] {
            ((info[key] as? Set<NSManagedObject>) ?? []).filter(belongs)
        }
        // Each object once, deleted ones only as deleted (a set's members are distinct: a lone
        // set needs no check).
        let deletedSets = [objects(NSDeletedObjectsKey), objects(NSInvalidatedObjectsKey)].filter { !$0.isEmpty }
        // Beyond Apple: objects whose related objects (read by the predicate, a sort key or the
        // section key path through a to-one relationship) changed are re-judged too.
        let related = relatedObjectsAffected(by: info).filter(belongs)
        let changedSets = [objects(NSInsertedObjectsKey), objects(NSUpdatedObjectsKey), objects(NSRefreshedObjectsKey), related].filter { !$0.isEmpty }
        var deleted: [NSManagedObject] = []
        var changed: [NSManagedObject] = []
        if related.isEmpty && deletedSets.count + changedSets.count == 1 {
            deleted = deletedSets.first ?? []
            changed = changedSets.first ?? []
        } else {
            var seen = Set<ObjectIdentifier>()
            for object in deletedSets.joined() where seen.insert(ObjectIdentifier(object)).inserted { deleted.append(object) }
            for object in changedSets.joined() where seen.insert(ObjectIdentifier(object)).inserted { changed.append(object) }
        }
        guard !deleted.isEmpty || !changed.isEmpty else { return }
        // In memory order: the objects' own memory, not the work done with them, sets the cost of
        // a large change (every first touch of an object far from the last one is a cache and TLB
        // miss), and objects fetched together were allocated together.
        deleted.sortByAddress()
        changed.sortByAddress()
        refreshTemporaryKeys()
        let oldSections = index.sectionNames
        var rows: [FetchedResultsChanges.TouchedRow]
        if request.fetchLimit > 0 || request.fetchOffset > 0 {
            // Beyond Apple: the limit and offset hold while tracking. Objects outside the window
            // can enter it, so the window is fetched again (with the context's pending changes).
            guard let diffed = refetchAndCompare(changed: changed) else { return }
            rows = diffed
        } else if let applied = apply(deleted: deleted, changed: changed, to: index) {
            rows = applied
        } else {
            // The sort does not keep sections together (performFetch would have thrown 134060):
            // the results can't be kept, as in Core Data a new performFetch is needed.
            CoreDataLog.logger.error("NSFetchedResultsController: a changed object's section name is out of order for the sort descriptors; call performFetch() again after fixing them (134060).")
            self.index = nil
            objectsCacheIsStale = true
            sectionsCache = nil
            return
        }
        guard let current = self.index else { return }
        report(FetchedResultsChanges(rows: rows, oldSections: oldSections, newSections: current.sectionNames), owner: owner)
    }

    /// Applies deletions and changes to the index in place; nil when a changed object's section
    /// does not border its place (the sort does not group the sections).
    private func apply(deleted: [NSManagedObject], changed: [NSManagedObject], to index: FetchedResultsIndex) -> [FetchedResultsChanges.TouchedRow]? {
        // Each touched object's row in the results (nil when it has none), by its place in `touched`.
        let touched = deleted + changed
        var oldKeys = [Int64?](repeating: nil, count: touched.count)
        var currentKeys = [Int64?](repeating: nil, count: touched.count)
        for (item, object) in touched.enumerated() {
            if !temporaryKeys.isEmpty, let temporary = temporaryKeys[ObjectIdentifier(object)], index.contains(temporary) {
                oldKeys[item] = temporary
            } else if !object.objectID.isTemporaryID {
                let key = key(of: object)
                currentKeys[item] = key
                if index.contains(key) { oldKeys[item] = key }
            }
        }
        // The changed objects that belong in the results: their rows (keys and sort values, in
        // columns), section names, and places in `touched`.
        var entering = SortedRowsChunk(kinds: index.kinds, capacity: changed.count)
        var enteringNames: [String] = []
        var enteringItems: [Int] = []
        let reader = FetchedResultsValueReader(descriptors: descriptors, kinds: index.kinds, sectionNameKeyPath: sectionNameKeyPath, entity: entity)
        for (offset, object) in changed.enumerated() where !object.isDeleted && object.lives(in: context) {
            guard request.predicate?.evaluate(with: object) ?? true else { continue }
            let item = deleted.count + offset
            entering.keys.append(currentKeys[item] ?? key(of: object))
            enteringNames.append(reader.read(object, into: &entering))
            enteringItems.append(item)
        }
        var old = [FetchedResultsChanges.Place?](repeating: nil, count: touched.count)
        var new = [FetchedResultsChanges.Place?](repeating: nil, count: touched.count)
        let removedItems = touched.indices.filter { oldKeys[$0] != nil }
        if touched.count > bulkThreshold {
            // Many rows: one merge pass over the chunks they touch beats row-by-row updates.
            // Ignored: its only error is a section out of order, which the caller reports on nil (134060).
            guard let update = try? index.bulkUpdate(removing: removedItems.map { oldKeys[$0]! }, entering: entering, sectionNames: enteringNames) else { return nil }
            for (removal, item) in removedItems.enumerated() {
                old[item] = update.oldPlaces[removal].map { FetchedResultsChanges.Place(position: $0.position, section: $0.section, row: $0.row) }
            }
            for (row, item) in enteringItems.enumerated() { new[item] = place(at: update.newPositions[row], in: index) }
        } else {
            // Where touched rows were, before anything moves.
            for item in removedItems {
                old[item] = index.position(of: oldKeys[item]!).map { place(at: $0, in: index) }
            }
            for item in removedItems { index.remove(oldKeys[item]!) }
            // Sections left empty go now: a row whose name matches one joins it again as a new
            // section (same name, so not reported), and empty sections never sit ambiguously at a boundary.
            index.removeEmptySections()
            do {
                for row in 0..<entering.count { try index.insert(row: row, of: entering, sectionName: enteringNames[row]) }
            } catch {
                return nil
            }
            index.removeEmptySections()
            for (row, item) in enteringItems.enumerated() {
                new[item] = index.position(of: entering.keys[row]).map { place(at: $0, in: index) }
            }
        }
        // The rows that are in the results now, then those that left.
        var rows: [FetchedResultsChanges.TouchedRow] = []
        rows.reserveCapacity(touched.count)
        for item in enteringItems where new[item] != nil {
            rows.append(FetchedResultsChanges.TouchedRow(object: touched[item], old: old[item], new: new[item], changed: true))
        }
        for item in touched.indices where new[item] == nil && old[item] != nil {
            rows.append(FetchedResultsChanges.TouchedRow(object: touched[item], old: old[item], new: nil, changed: true))
        }
        objectsCacheIsStale = true
        sectionsCache = nil
        return rows
    }

    /// The place of the row at a position.
    private func place(at position: Int, in index: FetchedResultsIndex) -> FetchedResultsChanges.Place {
        let (section, row) = index.sectionAndRow(at: position)
        return FetchedResultsChanges.Place(position: position, section: section, row: row)
    }

    /// Above this many touched objects a change rebuilds the index in linear passes instead of
    /// updating it row by row (about where the two cost the same).
    var bulkThreshold: Int { bulkThresholdOverride ?? max(256, (index?.count ?? 0) / 500) }
    /// Set by tests to exercise either path.
    var bulkThresholdOverride: Int?

    /// Fetches the results again and compares them with the current ones: the rows that left,
    /// entered, or changed. O(N); used for windows (limit, offset).
    private func refetchAndCompare(changed: [NSManagedObject]) -> [FetchedResultsChanges.TouchedRow]? {
        guard let old = index else { return nil }
        let fresh: SortedRows
        do {
            fresh = try refetch(judging: changed)
        } catch {
            CoreDataLog.logger.error("NSFetchedResultsController: the results could not be brought up to date: \(error)")
            return nil
        }
        let oldKeys = old.allKeys
        let oldPositions = Dictionary(oldKeys.enumerated().map { ($0.element, $0.offset) }, uniquingKeysWith: { first, _ in first })
        let oldObjects = oldKeys.map { $0 < 0 ? temporaryObjects[$0] : nil }
        install(fresh)
        guard let new = index else { return nil }
        let newKeys = new.allKeys
        let newPositions = Dictionary(newKeys.enumerated().map { ($0.element, $0.offset) }, uniquingKeysWith: { first, _ in first })
        let changedKeys = Set(changed.map { key(of: $0) })
        // Rows that stay but change their order among the staying rows are touched too (each row
        // left untouched must keep its order): those off a longest run already in order.
        let staying = oldKeys.compactMap { newPositions[$0] }
        let (oldSectionNames, newSectionNames) = (old.sectionNames, new.sectionNames)
        let reordered = Self.positionsOutOfOrder(staying)
        var rows: [FetchedResultsChanges.TouchedRow] = []
        for (position, key) in oldKeys.enumerated() where newPositions[key] == nil {
            let object = oldObjects[position] ?? object(forKey: key)
            rows.append(FetchedResultsChanges.TouchedRow(object: object, old: place(at: position, in: old), new: nil, changed: changedKeys.contains(key)))
        }
        for (position, key) in newKeys.enumerated() {
            let newPlace = place(at: position, in: new)
            if let was = oldPositions[key] {
                // …and so are rows whose section changed (its name, through a related object).
                let changedHere = changedKeys.contains(key)
                let oldPlace = place(at: was, in: old)
                guard changedHere || reordered.contains(position) || oldSectionNames[oldPlace.section] != newSectionNames[newPlace.section] else { continue }
                rows.append(FetchedResultsChanges.TouchedRow(object: object(forKey: key), old: oldPlace, new: newPlace, changed: changedHere))
            } else {
                rows.append(FetchedResultsChanges.TouchedRow(object: object(forKey: key), old: nil, new: newPlace, changed: changedKeys.contains(key)))
            }
        }
        return rows
    }

    /// The values of `positions` off one longest increasing run of them: the fewest that must
    /// move for the rest to be in order.
    static func positionsOutOfOrder(_ positions: [Int]) -> Set<Int> {
        // Patience sorting: `tails[k]` is the index of the smallest last value of a run of k + 1.
        var tails: [Int] = []
        var previous = [Int](repeating: -1, count: positions.count)
        for (index, value) in positions.enumerated() {
            var low = 0, high = tails.count
            while low < high {
                let middle = (low + high) / 2
                if positions[tails[middle]] < value { low = middle + 1 } else { high = middle }
            }
            if low > 0 { previous[index] = tails[low - 1] }
            if low == tails.count { tails.append(index) } else { tails[low] = index }
        }
        var inRun = Set<Int>()
        var index = tails.last ?? -1
        while index >= 0 {
            inRun.insert(positions[index])
            index = previous[index]
        }
        return Set(positions).subtracting(inRun)
    }

    /// The results fetched again, with the changed objects (also those changed only through a
    /// related object, which the context's pending-change merge does not re-judge) judged in
    /// memory, then the offset and limit applied.
    private func refetch(judging changed: [NSManagedObject]) throws -> SortedRows {
        guard let entity else { return try fetchFromStore() }
        // The fetch judges an unchanged object by the store, also when a related object it is
        // judged through has unsaved changes (from this event or an earlier one): those are judged
        // in memory too.
        let changed = changed + relatedObjectsAffected(by: Array(context.insertedObjects) + Array(context.updatedObjects))
            .filter { $0.entity.isKindOf(entity: entity) }
        // With a limit, only the first rows can make the window: as many as it holds, its offset,
        // and one for each object judged here (the context's fetch bounds its own the same way).
        let covering = request.asObjectRequest()
        covering.fetchLimit = NSManagedObjectContext.storeRowsCovering(offset: request.fetchOffset, limit: request.fetchLimit, judgedInMemory: changed.count)
        covering.fetchOffset = 0
        covering.fetchBatchSize = 0
        var objects = try context.fetch(covering).compactMap { $0 as? NSManagedObject }
        let judged = Set(changed.map { ObjectIdentifier($0) })
        let matches = { [request, context] (object: NSManagedObject) -> Bool in
            !object.isDeleted && object.lives(in: context) && (request.predicate?.evaluate(with: object) ?? true)
        }
        objects.rejudge(dropping: { judged.contains(ObjectIdentifier($0)) && !matches($0) }, adding: changed, where: matches,
                        sortedBy: descriptors, offset: request.fetchOffset, limit: request.fetchLimit)
        return try sortedRows(of: objects, entity: entity)
    }

    /// The to-one relationships (first key path steps) the request's predicate, sorts and sections read through.
    private lazy var readRelationships: [NSRelationshipDescription] = {
        guard let entity else { return [] }
        var keyPaths = descriptors.compactMap(\.key)
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
        return relatedObjectsAffected(by: changed)
    }

    /// The objects that point through a relationship the request reads to one of `changed`.
    private func relatedObjectsAffected(by changed: [NSManagedObject]) -> [NSManagedObject] {
        guard !readRelationships.isEmpty else { return [] }
        var affected: [NSManagedObject] = []
        for relationship in readRelationships {
            guard let destination = relationship.destinationEntity, let inverse = relationship.inverseRelationship else { continue }
            for related in changed where related.entity.isKindOf(entity: destination) && !related.isDeleted {
                if inverse.isToMany {
                    affected += related.relationshipSet(for: inverse).members
                } else {
                    // A refreshed object may be a fault again: its values are read once it fires.
                    related.fireFaultIfNeeded()
                    if let source = related.toOneDestination(inverse) { affected.append(source) }
                }
            }
        }
        return affected
    }

    /// Reports a change to the streams and to the delegate in the form it implements.
    private func report(_ changes: FetchedResultsChanges, owner: () -> NSFetchedResultsController<NSFetchRequestResult>) {
        guard !changes.isEmpty else { return }
        cache?.delete()
        if hasStreams {
            publish(FetchedResultsUpdate(snapshot: snapshot(reloading: changes.changedSurvivors), difference: changes.difference(id: \.objectID)))
        }
        guard let delegate else { return }
        let controller = owner()
        // The snapshot and difference forms, when the delegate implements one, replace the rest.
        if offerSnapshot(reloading: changes.changedSurvivors, to: delegate, controller: controller) { return }
        if sectionNameKeyPath == nil, implementsDifference != false {
            differenceMethodIsDefault = false
            delegate.controller(controller, didChangeContentWith: changes.difference(id: \.objectID))
            implementsDifference = !differenceMethodIsDefault
            if implementsDifference == true { return }
        }
        delegate.controllerWillChangeContent(controller)
        for (index, name) in changes.deletedSections {
            let section = FetchedResultsSection(name: name, indexTitle: indexTitle(for: name),
                                                objects: changes.objects.filter { $0.type == .delete && $0.old?.section == index }.sorted { $0.old!.row < $1.old!.row }.map(\.object))
            delegate.controller(controller, didChange: section, atSectionIndex: index, for: .delete)
        }
        for (index, name) in changes.insertedSections {
            delegate.controller(controller, didChange: FetchedResultsSection(name: name, indexTitle: indexTitle(for: name), state: self), atSectionIndex: index, for: .insert)
        }
        for change in changes.objects {
            delegate.controller(controller, didChange: change.object, at: change.old, for: change.type, newIndexPath: change.new)
        }
        delegate.controllerDidChangeContent(controller)
    }
}

extension NSManagedObjectContext {
    /// Whether unsaved inserts, updates or deletes touch objects of an entity (or its subentities).
    func hasPendingChanges(affecting entity: NSEntityDescription) -> Bool {
        insertedObjects.contains { $0.entity.isKindOf(entity: entity) }
            || updatedObjects.contains { $0.entity.isKindOf(entity: entity) }
            || deletedObjects.contains { $0.entity.isKindOf(entity: entity) }
    }
}
