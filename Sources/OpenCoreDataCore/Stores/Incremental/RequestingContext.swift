import Foundation

/// The context whose request a coordinator is serving on this thread, for an `NSIncrementalStore`:
/// Apple's store methods receive the requesting context (`execute(_:with:)`,
/// `newValuesForObject(with:with:)`), while the coordinator's internal calls carry none.
///
/// A context binds itself around its calls to the coordinator, only when the coordinator has an
/// incremental store (`NSManagedObjectContext.asRequester`), so other stores pay one flag read.
enum RequestingContext {
    private static let key = "OpenCoreData.requestingContext"

    /// Holds the bound context in the thread's dictionary.
    private final class Binding {
        let context: NSManagedObjectContext
        init(_ context: NSManagedObjectContext) { self.context = context }
    }

    /// The innermost context bound on this thread.
    static var current: NSManagedObjectContext? {
        (Thread.current.threadDictionary[key] as? Binding)?.context
    }

    /// Runs `body` with `context` bound as the requesting context.
    static func bind<T>(_ context: NSManagedObjectContext, _ body: () throws -> T) rethrows -> T {
        let dictionary = Thread.current.threadDictionary
        let previous = dictionary[key]
        dictionary[key] = Binding(context)
        defer { dictionary[key] = previous }
        return try body()
    }
}

extension NSManagedObjectContext {
    /// Runs a call to the parent with this context bound as the requesting context when an
    /// incremental store may be asked (see `RequestingContext`).
    @inline(__always)
    func asRequester<T>(_ body: () throws -> T) rethrows -> T {
        guard let coordinator = persistentStoreCoordinatorRoot, coordinator.hasIncrementalStores else { return try body() }
        return try RequestingContext.bind(self, body)
    }
}
