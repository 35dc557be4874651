import Foundation
import OpenCoreData
import OpenCoreDataPostgreSQL
import Testing

// Sections by a value the class derives, as Apple's documentation of `sectionNameKeyPath`
// describes: the request sorts by a persistent attribute (`timeStamp`) and the section key path
// names a transient attribute derived from it (`sectionIdentifier`, the month), computed by the
// class's own accessor and cached in the transient slot through the primitive accessor. Apple's
// key-value coding reaches that accessor through `@objc`; on Linux the class answers the key in
// an override of `value(forKey:)`, the porting rule for values computed by the class.

final class JournalEvent: NSManagedObject {
    @Managed var timeStamp: Date?
    @Managed var title: String?
    @Managed private var primitiveSectionIdentifier: String?

    /// "2026-03" for an event in March 2026 (UTC), computed on first read and kept in the
    /// transient attribute until the time stamp changes.
    var sectionIdentifier: String? {
        willAccessValue(forKey: "sectionIdentifier")
        var identifier = primitiveSectionIdentifier
        didAccessValue(forKey: "sectionIdentifier")
        if identifier == nil, let timeStamp {
            identifier = Self.month(of: timeStamp)
            primitiveSectionIdentifier = identifier
        }
        return identifier
    }

    /// The month's name, a value the model doesn't know at all.
    var monthName: String {
        guard let timeStamp else { return "" }
        let month = Self.calendar.component(.month, from: timeStamp)
        return Self.calendar.monthSymbols[month - 1]
    }

    /// Changing the time stamp forgets the derived section identifier.
    func reschedule(to date: Date) {
        timeStamp = date
        primitiveSectionIdentifier = nil
    }

    override func value(forKey key: String) -> Any? {
        switch key {
        case "sectionIdentifier": return sectionIdentifier
        case "monthName": return monthName
        default: return super.value(forKey: key)
        }
    }

    static let calendar: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        calendar.locale = Locale(identifier: "en_US_POSIX")
        return calendar
    }()

    static func month(of date: Date) -> String {
        let parts = calendar.dateComponents([.year, .month], from: date)
        return String(format: "%04d-%02d", parts.year!, parts.month!)
    }

    static func date(_ year: Int, _ month: Int, _ day: Int) -> Date {
        calendar.date(from: DateComponents(year: year, month: month, day: day, hour: 12))!
    }
}

@Suite struct DerivedSectionKeyTests {
    private static func makeModel() -> NSManagedObjectModel {
        let event = NSEntityDescription(name: "JournalEvent", className: "JournalEvent")
        let section = NSAttributeDescription(name: "sectionIdentifier", type: .stringAttributeType)
        section.isTransient = true
        event.properties = [
            NSAttributeDescription(name: "timeStamp", type: .dateAttributeType),
            NSAttributeDescription(name: "title", type: .stringAttributeType),
            section,
        ]
        let model = NSManagedObjectModel()
        model.entities = [event]
        return model
    }

    /// The stores the tests run against: SQLite and PostgreSQL read section names in SQL when they
    /// can, the in-memory store never does.
    static let stores = [NSSQLiteStoreType, NSInMemoryStoreType] + (PostgreSQLTestServer.isAvailable ? [NSPostgreSQLStoreType] : [])

    /// A store of events over three months, saved; a fresh context reads it. `keepAlive` holds
    /// a PostgreSQL schema of the test's own until the test ends.
    static func savedJournal(in storeType: String) throws -> (context: NSManagedObjectContext, keepAlive: AnyObject?) {
        let coordinator: NSPersistentStoreCoordinator
        var keepAlive: AnyObject?
        if storeType == NSPostgreSQLStoreType {
            let database = PostgreSQLStoreTests.Database()
            coordinator = try database.coordinator(model)
            keepAlive = database
        } else {
            coordinator = try TestSupport.coordinator(model, type: storeType).0
        }
        let writer = TestSupport.context(coordinator)
        let days: [(Int, Int, Int, String)] = [
            (2026, 1, 5, "dentist"), (2026, 1, 20, "trip"), (2026, 2, 2, "concert"),
            (2026, 3, 14, "pi day"), (2026, 3, 1, "spring"), (2026, 1, 11, "haircut"),
        ]
        for (year, month, day, title) in days {
            let event = JournalEvent(context: writer)
            event.timeStamp = JournalEvent.date(year, month, day)
            event.title = title
        }
        try writer.save()
        // An in-memory store is seen only through its coordinator's contexts: the writer's
        // objects are forgotten by reading through a new context all the same.
        return (TestSupport.context(coordinator), keepAlive)
    }

    /// One model for every test (a model in use can't change; classes map to one entity).
    static let model = makeModel()

    static func request(batchSize: Int) -> NSFetchRequest<JournalEvent> {
        let request = NSFetchRequest<JournalEvent>(entityName: "JournalEvent")
        request.sortDescriptors = [NSSortDescriptor(key: "timeStamp", ascending: true)]
        request.fetchBatchSize = batchSize
        return request
    }

    /// A controller over a saved journal, sectioned by `sectionNameKeyPath`, before its fetch;
    /// `keepAlive` as for `savedJournal(in:)`.
    static func controller(store: String, batchSize: Int, sectionNameKeyPath: String) throws
        -> (controller: NSFetchedResultsController<JournalEvent>, context: NSManagedObjectContext, keepAlive: AnyObject?) {
        let (context, keepAlive) = try savedJournal(in: store)
        let controller = NSFetchedResultsController(fetchRequest: request(batchSize: batchSize), managedObjectContext: context,
                                                    sectionNameKeyPath: sectionNameKeyPath, cacheName: nil)
        return (controller, context, keepAlive)
    }

    static func sections<T>(_ controller: NSFetchedResultsController<T>) -> [String] {
        (controller.sections ?? []).map { "\($0.name):\($0.numberOfObjects)" }
    }

    @Test(arguments: stores, [0, 2])
    func sectionsByATransientAttributeTheClassDerives(store: String, batchSize: Int) throws {
        let (controller, _, keepAlive) = try Self.controller(store: store, batchSize: batchSize, sectionNameKeyPath: "sectionIdentifier")
        defer { withExtendedLifetime(keepAlive) {} }
        try controller.performFetch()
        #expect(Self.sections(controller) == ["2026-01:3", "2026-02:1", "2026-03:2"])
        #expect(controller.object(at: IndexPath(row: 1, section: 2)).title == "pi day")
    }

    @Test(arguments: stores, [0, 2])
    func sectionsByAValueOnlyTheClassKnows(store: String, batchSize: Int) throws {
        let (controller, _, keepAlive) = try Self.controller(store: store, batchSize: batchSize, sectionNameKeyPath: "monthName")
        defer { withExtendedLifetime(keepAlive) {} }
        try controller.performFetch()
        #expect(Self.sections(controller) == ["January:3", "February:1", "March:2"])
    }

    @Test(arguments: stores, [0, 2])
    func derivedSectionsFollowSavedChanges(store: String, batchSize: Int) throws {
        let (controller, context, keepAlive) = try Self.controller(store: store, batchSize: batchSize, sectionNameKeyPath: "sectionIdentifier")
        defer { withExtendedLifetime(keepAlive) {} }
        let table = TestTableView()
        controller.delegate = table
        try controller.performFetch()
        table.reload(from: controller)

        // A new month, an event moved from February to March, an event deleted.
        let april = JournalEvent(context: context)
        april.timeStamp = JournalEvent.date(2026, 4, 9)
        april.title = "taxes"
        let concert = try #require(controller.fetchedObjects?.first { $0.title == "concert" })
        concert.reschedule(to: JournalEvent.date(2026, 3, 20))
        let dentist = try #require(controller.fetchedObjects?.first { $0.title == "dentist" })
        context.delete(dentist)
        try context.save()

        #expect(Self.sections(controller) == ["2026-01:2", "2026-03:3", "2026-04:1"])
        #expect(table.failures.isEmpty)
        #expect(table.sections.map(\.name) == ["2026-01", "2026-03", "2026-04"])
        #expect(table.sections.map { $0.rows.map { ($0 as? JournalEvent)?.title ?? "?" } } == [["haircut", "trip"], ["spring", "pi day", "concert"], ["taxes"]])
    }

    @Test func aFetchSortedByTheDerivedKeyInMemory() throws {
        // In-memory sorting by a value the class computes goes through the same override.
        let (context, _) = try Self.savedJournal(in: NSSQLiteStoreType)
        let events = try context.fetch(Self.request(batchSize: 0))
        let sorted = NSSortDescriptor.sorted(events, using: [NSSortDescriptor(key: "monthName", ascending: true),
                                                             NSSortDescriptor(key: "title", ascending: true)])
        #expect(sorted.map(\.title) == ["concert", "dentist", "haircut", "trip", "pi day", "spring"])
        let march = events.filter { NSPredicate(format: "sectionIdentifier == '2026-03'").evaluate(with: $0) }
        #expect(Set(march.compactMap(\.title)) == ["pi day", "spring"])
    }
}
