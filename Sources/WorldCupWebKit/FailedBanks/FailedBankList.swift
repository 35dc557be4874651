import Foundation
import OpenCoreData

/// One bank as a row of the Failed Banks page.
public struct BankRow: Codable, Sendable, Equatable {
    /// The row's index in the list.
    public var index: Int
    /// The bank's name.
    public var name: String
    /// The bank's city.
    public var city: String
    /// The bank's state.
    public var state: String
    /// The closing date, `yyyy-MM-dd` (UTC), or "" when unknown.
    public var closeDate: String
    /// The bank's FDIC certificate number (the tutorial's model keeps it in an attribute named
    /// `zip`).
    public var zip: Int
}

/// The banks of a Failed Banks store, sorted by closing date (then name), read through a fetched
/// results controller whose request has a `fetchBatchSize` of 20: the fetch reads only object IDs,
/// and rows are loaded twenty at a time as the page asks for them.
///
/// The context and controller are used only inside the context's `perform` blocks.
public final class FailedBankList: @unchecked Sendable {
    /// The fetch batch size of the controller's request.
    public static let batchSize = 20
    /// The store's container.
    public let container: NSPersistentContainer
    private let context: NSManagedObjectContext
    private let controller: NSFetchedResultsController<NSManagedObject>
    /// How many banks the list holds.
    public let count: Int
    /// How long the controller's `performFetch()` took, in seconds.
    public let fetchSeconds: Double

    /// Opens a Failed Banks store (read-only unless told otherwise) and fetches the list.
    public init(storeURL: URL, readOnly: Bool = true) throws {
        container = try Self.container(storeURL: storeURL, readOnly: readOnly)
        context = container.newBackgroundContext()
        let request = NSFetchRequest<NSManagedObject>(entityName: "FailedBankInfo")
        request.sortDescriptors = [NSSortDescriptor(key: "details.closeDate", ascending: true), NSSortDescriptor(key: "name", ascending: true)]
        request.fetchBatchSize = Self.batchSize
        controller = NSFetchedResultsController(fetchRequest: request, managedObjectContext: context, sectionNameKeyPath: nil, cacheName: nil)
        let start = Date()
        count = try context.performAndWait { [controller] in
            try controller.performFetch()
            return controller.sections?.first?.numberOfObjects ?? 0
        }
        fetchSeconds = Date().timeIntervalSince(start)
    }

    /// The Failed Banks store written by Apple's Core Data that ships with the server (233 banks).
    public static func bundledStoreURL() throws -> URL {
        guard let url = Bundle.module.url(forResource: "FailedBanksCD", withExtension: "sqlite", subdirectory: "FailedBanks") else {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSLocalizedDescriptionKey: "The bundled FailedBanksCD.sqlite is missing."])
        }
        return url
    }

    /// The Failed Banks model (entities FailedBankInfo and FailedBankDetails).
    public static func model() throws -> NSManagedObjectModel {
        guard let url = Bundle.module.url(forResource: "FailedBanksCD", withExtension: "xcdatamodeld", subdirectory: "FailedBanks") else {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSLocalizedDescriptionKey: "The bundled FailedBanksCD.xcdatamodeld is missing."])
        }
        return try NSManagedObjectModel.load(contentsOf: url)
    }

    /// A container over a Failed Banks store file.
    static func container(storeURL: URL, readOnly: Bool) throws -> NSPersistentContainer {
        let container = NSPersistentContainer(name: "FailedBanksCD", managedObjectModel: try model())
        let description = NSPersistentStoreDescription(url: storeURL)
        description.isReadOnly = readOnly
        container.persistentStoreDescriptions = [description]
        var loadError: Error?
        container.loadPersistentStores { _, error in loadError = error }
        if let loadError { throw loadError }
        return container
    }

    /// The rows of a range of the list (clamped to the list). Reading them fires the faults of the
    /// batches of 20 that hold them; the banks' details are then fetched in one query.
    public func rows(in requested: Range<Int>) async throws -> [BankRow] {
        let range = requested.clamped(to: 0..<count)
        guard !range.isEmpty else { return [] }
        return try await context.perform { [self] in
            let banks = range.map { controller.object(at: IndexPath(row: $0, section: 0)) }
            let details = banks.compactMap { $0.value(forKey: "details") as? NSManagedObject }
            let detailsRequest = NSFetchRequest<NSManagedObject>(entityName: "FailedBankDetails")
            detailsRequest.predicate = NSPredicate(format: "SELF IN %@", details.map(\.objectID))
            _ = try context.fetch(detailsRequest)
            return zip(range, banks).map { index, bank in
                let detail = bank.value(forKey: "details") as? NSManagedObject
                return BankRow(index: index, name: bank.value(forKey: "name") as? String ?? "", city: bank.value(forKey: "city") as? String ?? "",
                               state: bank.value(forKey: "state") as? String ?? "",
                               closeDate: (detail?.value(forKey: "closeDate") as? Date).map(Self.dayText) ?? "",
                               zip: Int(detail?.value(forKey: "zip") as? Int32 ?? 0))
            }
        }
    }

    /// A date as `yyyy-MM-dd` in UTC.
    static func dayText(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(timeZone: TimeZone(identifier: "UTC")!).year().month().day())
    }
}
