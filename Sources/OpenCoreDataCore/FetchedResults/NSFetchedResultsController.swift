import Foundation

/// Keeps the results of a fetch request, split into sections, and reports how they change as the
/// context's objects change, in the form a table view's batch updates need.
///
/// Tracking runs only while the controller has a delegate: changes are seen when the context
/// processes pending changes (at the end of an event, at save, and when saves of other contexts
/// are merged into it).
/// Not Sendable, as in Core Data: it belongs to its context's queue.
open class NSFetchedResultsController<ResultType>: NSObject {
    /// The request whose results the controller keeps; it must have sort descriptors.
    public let fetchRequest: NSFetchRequest<ResultType>
    /// The context the results live in.
    public let managedObjectContext: NSManagedObjectContext
    /// The key path whose value names each object's section (nil: one section).
    public let sectionNameKeyPath: String?
    /// The name of the on-disk cache of the results: `performFetch()` keeps the sorted results
    /// there and, in a later run, reuses them while the request and the store are unchanged.
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
        super.init()
        state.cache = name.map { FetchedResultsCache(name: $0) }
        state.owner = { [unowned self] in self.erased }
        state.indexing = self
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
        managedObjectContext.checkQueue("NSFetchedResultsController.performFetch()")
        try state.performFetch()
    }

    /// The fetched objects, in order (nil before `performFetch()`).
    ///
    /// With a `fetchBatchSize`, the objects are faults that load a batch at a time as they are read.
    public var fetchedObjects: [ResultType]? {
        managedObjectContext.checkQueue("NSFetchedResultsController.fetchedObjects")
        return state.fetchedObjects?.compactMap { $0 as? ResultType }
    }

    /// The sections (nil before `performFetch()`).
    public var sections: [NSFetchedResultsSectionInfo]? {
        managedObjectContext.checkQueue("NSFetchedResultsController.sections")
        return state.sections
    }

    /// The object at an index path; an index path out of range traps, as Core Data raises.
    public func object(at indexPath: IndexPath) -> ResultType {
        managedObjectContext.checkQueue("NSFetchedResultsController.object(at:)")
        guard let object = state.object(at: indexPath) else {
            coreDataMisuse("NSFetchedResultsController: no object at index \(indexPath.row) in section \(indexPath.section).")
        }
        guard let typed = object as? ResultType else {
            coreDataMisuse("NSFetchedResultsController: the object at \(indexPath) is a \(type(of: object)), not a \(ResultType.self).")
        }
        return typed
    }

    /// The index path of an object in the results, or nil.
    public func indexPath(forObject object: ResultType) -> IndexPath? {
        managedObjectContext.checkQueue("NSFetchedResultsController.indexPath(forObject:)")
        guard let managed = object as? NSManagedObject else { return nil }
        return state.indexPath(of: managed)
    }

    /// The index titles of the sections, in order, without repeats. A subclass may override it.
    open var sectionIndexTitles: [String] {
        if let primary { return primary.sectionIndexTitles }
        var titles: [String] = []
        for section in state.sections ?? [] {
            if let title = section.indexTitle, titles.last != title { titles.append(title) }
        }
        return titles
    }

    /// The index of the first section with an index title (for a table's section index). A
    /// subclass may override it.
    open func section(forSectionIndexTitle title: String, at sectionIndex: Int) -> Int {
        if let primary { return primary.section(forSectionIndexTitle: title, at: sectionIndex) }
        return state.sections?.firstIndex { $0.indexTitle == title } ?? sectionIndex
    }

    /// The index title of a section name: the delegate's, or the capitalized first letter. A
    /// subclass may override it; the sections' `indexTitle` and `sectionIndexTitles` use it.
    open func sectionIndexTitle(forSectionName sectionName: String) -> String? {
        if let primary { return primary.sectionIndexTitle(forSectionName: sectionName) }
        return state.defaultIndexTitle(for: sectionName)
    }

    /// For the erased controller a delegate receives, the controller the app made (whose
    /// overrides answer); nil for that one.
    private var primary: (any SectionIndexing)? {
        guard let indexing = state.indexing, indexing !== self else { return nil }
        return indexing
    }

    /// Deletes an on-disk cache by name (nil: all of them).
    public class func deleteCache(withName name: String?) {
        if let name {
            FetchedResultsCache(name: name).delete()
        } else {
            // Ignored: no cache folder is the usual case; a cache left behind is still checked before use.
            try? FileManager.default.removeItem(at: FetchedResultsCache.directory)
        }
    }

    /// Beyond Apple: the controller's changes as an `AsyncSequence`. Each element holds the new
    /// state as a snapshot and the difference of the ordered object IDs; the first element is the
    /// current state (once fetched). Tracking runs while a stream is alive, with or without a delegate.
    public var updates: AsyncStream<FetchedResultsUpdate> { state.updates() }
}

/// A controller's section index methods, which a subclass may override: what the erased
/// controller a delegate receives, and the sections' index titles, ask the app's controller.
protocol SectionIndexing: AnyObject {
    func sectionIndexTitle(forSectionName sectionName: String) -> String?
    var sectionIndexTitles: [String] { get }
    func section(forSectionIndexTitle title: String, at sectionIndex: Int) -> Int
}

extension NSFetchedResultsController: SectionIndexing {}

/// One change of a fetched results controller's results, for Swift concurrency.
public struct FetchedResultsUpdate: Sendable {
    /// The results after the change: section names and object IDs, changed objects marked reloaded.
    public let snapshot: NSDiffableDataSourceSnapshot<String, NSManagedObjectID>
    /// How the ordered object IDs changed.
    public let difference: CollectionDifference<NSManagedObjectID>
}
