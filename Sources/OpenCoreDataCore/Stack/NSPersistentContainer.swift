import Foundation

/// The whole Core Data stack in one object: the model, a coordinator, the store descriptions, a
/// main-queue view context and background contexts.
/// Unchecked Sendable: immutable but `persistentStoreDescriptions`, which is set before stores are loaded.
open class NSPersistentContainer: NSObject, @unchecked Sendable {
    /// The container's name: the model's name and the default store file's name.
    public let name: String
    /// The model.
    public let managedObjectModel: NSManagedObjectModel
    /// The coordinator.
    public let persistentStoreCoordinator: NSPersistentStoreCoordinator
    /// The stores to open in `loadPersistentStores`.
    public var persistentStoreDescriptions: [NSPersistentStoreDescription]
    private let viewContextStorage: NSManagedObjectContext

    /// Creates a container whose model is `<name>.xcdatamodeld` (or `<name>.xcdatamodel`) among the resources of
    /// the main bundle, the test bundle or the bundles next to the executable.
    ///
    /// A missing model is a programmer error and traps with the places searched.
    public convenience init(name: String) {
        guard let model = ModelLocator.model(named: name) else {
            coreDataMisuse("NSPersistentContainer: no model named \(name).xcdatamodeld was found in \(ModelLocator.searchedPlaces().map(\.path)). Add it to your target's resources or use init(name:managedObjectModel:).")
        }
        self.init(name: name, managedObjectModel: model)
    }

    /// Creates a container with a model.
    public init(name: String, managedObjectModel model: NSManagedObjectModel) {
        self.name = name
        self.managedObjectModel = model
        self.persistentStoreCoordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        let description = NSPersistentStoreDescription(url: Self.defaultDirectoryURL().appendingPathComponent("\(name).sqlite"))
        self.persistentStoreDescriptions = [description]
        let context = NSManagedObjectContext(concurrencyType: .mainQueueConcurrencyType)
        context.persistentStoreCoordinator = persistentStoreCoordinator
        context.name = "viewContext"
        self.viewContextStorage = context
    }

    /// The main-queue context for the user interface.
    public var viewContext: NSManagedObjectContext { viewContextStorage }

    /// The directory of default store files: on Linux `$XDG_DATA_HOME` (or `~/.local/share`),
    /// on Apple platforms Application Support.
    open class func defaultDirectoryURL() -> URL {
        #if os(Linux) || os(Android) || os(FreeBSD) || os(OpenBSD)
        let environment = ProcessInfo.processInfo.environment
        let base: URL
        if let xdg = environment["XDG_DATA_HOME"], !xdg.isEmpty {
            base = URL(fileURLWithPath: xdg, isDirectory: true)
        } else {
            base = FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".local/share", isDirectory: true)
        }
        #else
        let base = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first ?? FileManager.default.temporaryDirectory
        #endif
        let directory = base.appendingPathComponent("OpenCoreData", isDirectory: true)
        // Ignored: if the folder can't be made, opening a store in it reports the error.
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    /// Opens every described store, calling the handler once per store.
    open func loadPersistentStores(completionHandler block: @escaping (NSPersistentStoreDescription, Error?) -> Void) {
        for description in persistentStoreDescriptions { loadStore(description, completionHandler: block) }
    }

    /// Loads the stores, as `loadPersistentStores(completionHandler:)` does, and returns once every
    /// one has been added: the first description, or the first error thrown. (With no
    /// descriptions it throws 134060, where a continuation of Apple's would never resume; with
    /// several, Apple's would resume twice.)
    public func loadPersistentStores() async throws -> NSPersistentStoreDescription {
        let expected = persistentStoreDescriptions.count
        guard expected > 0 else {
            throw CoreDataError.make(.coreData, "The container \(name) has no persistent store descriptions to load.")
        }
        // The outcomes so far, as the handlers report them (on the calling thread, or on a
        // background queue for a description added asynchronously): how many, the first
        // description, the first error.
        let outcomes = LockedValue<(count: Int, first: NSPersistentStoreDescription?, error: Error?)>((0, nil, nil))
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<UncheckedSendable<NSPersistentStoreDescription>, Error>) in
            loadPersistentStores { description, error in
                let (count, first, firstError) = outcomes.withLock { outcomes in
                    outcomes.count += 1
                    if outcomes.first == nil { outcomes.first = description }
                    if outcomes.error == nil { outcomes.error = error }
                    return outcomes
                }
                guard count == expected else { return }
                if let firstError { continuation.resume(throwing: firstError) } else { continuation.resume(returning: UncheckedSendable(first ?? description)) }
            }
        }.value
    }

    /// Opens one described store (making its directory), calling the handler with the outcome.
    func loadStore(_ description: NSPersistentStoreDescription, completionHandler block: @escaping (NSPersistentStoreDescription, Error?) -> Void) {
        if let url = description.url, description.type != NSInMemoryStoreType {
            // Ignored: if the folder can't be made, adding the store below reports the error.
            try? FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        }
        persistentStoreCoordinator.addPersistentStore(with: description, completionHandler: block)
    }

    /// A new private-queue context on the coordinator.
    public func newBackgroundContext() -> NSManagedObjectContext {
        let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        context.persistentStoreCoordinator = persistentStoreCoordinator
        return context
    }

    /// Runs a block on a new background context's queue.
    public func performBackgroundTask(_ block: @escaping @Sendable (NSManagedObjectContext) -> Void) {
        let context = newBackgroundContext()
        context.perform { block(context) }
    }

    /// Runs a block on a new background context's queue and returns its result.
    public func performBackgroundTask<T, E: Error>(_ block: @escaping @Sendable (NSManagedObjectContext) throws(E) -> T) async throws(E) -> T {
        let context = newBackgroundContext()
        return try await context.perform { () throws(E) -> T in try block(context) }
    }
}

/// Finds `<name>.xcdatamodeld` (or the compiled `<name>.momd`) among resource bundles.
enum ModelLocator {
    static func model(named name: String) -> NSManagedObjectModel? {
        model(named: name, in: searchedPlaces())
    }

    /// The first `<name>.xcdatamodeld`, `.xcdatamodel`, `.momd` or `.mom` in the directories.
    static func model(named name: String, in directories: [URL]) -> NSManagedObjectModel? {
        for directory in directories {
            for candidate in ["\(name).xcdatamodeld", "\(name).xcdatamodel", "\(name).momd", "\(name).mom"] {
                let url = directory.appendingPathComponent(candidate)
                if FileManager.default.fileExists(atPath: url.path), let model = NSManagedObjectModel(contentsOf: url) { return model }
            }
        }
        return nil
    }

    /// The main bundle's resources, plus every SwiftPM resource bundle beside the executable.
    static func searchedPlaces() -> [URL] {
        var places: [URL] = []
        if let resources = Bundle.main.resourceURL { places.append(resources) }
        places.append(Bundle.main.bundleURL)
        let executableDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for directory in [Bundle.main.bundleURL, executableDirectory] {
            // Ignored: a folder that is missing or can't be listed holds no resource bundles.
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
            for entry in entries where entry.hasSuffix(".resources") || entry.hasSuffix(".bundle") {
                let bundle = directory.appendingPathComponent(entry)
                places.append(bundle)
                places.append(bundle.appendingPathComponent("Resources"))
                places.append(bundle.appendingPathComponent("Contents/Resources"))
            }
        }
        for bundle in Bundle.allBundles where bundle != Bundle.main {
            if let resources = bundle.resourceURL { places.append(resources) }
        }
        return places
    }
}
