import Foundation
@testable import OpenCoreDataCore
import OpenCoreData
import Testing

/// A fetch with a limit in a context with unsaved changes, and a fetched results controller with
/// a limit following a change, read only the store rows their window can need (its offset and
/// limit, and one row for each object judged in memory), and answer as a fetch of every row would.
@Suite struct LimitedFetchTests {
    /// 1,000 saved employees with salaries 10, 20, … 10,000 (unique, so the order has no ties).
    private static func stage() throws -> NSManagedObjectContext {
        let (coordinator, _) = try TestSupport.coordinator(TestSupport.makeCompanyModel())
        let context = TestSupport.context(coordinator)
        for index in 1...1_000 {
            let employee = NSEntityDescription.insertNewObject(forEntityName: "Employee", into: context)
            employee.setValue(String(format: "e%04d", index), forKey: "name")
            employee.setValue(Int64(index * 10), forKey: "salary")
        }
        try context.save()
        context.reset()
        return context
    }

    private static func names(_ objects: [NSManagedObject]) -> [String] {
        objects.map { $0.value(forKey: "name") as? String ?? "?" }
    }

    /// The number of rows each fetch statement `body` ran read.
    private static func rowsRead<T>(_ body: () throws -> T) rethrows -> (T, [Int]) {
        let (result, log) = try SQLDebugLog.capturing(body)
        let counts = log.compactMap { line -> Int? in
            guard line.hasPrefix("total fetch execution time:"), let range = line.range(of: "for ") else { return nil }
            return Int(line[range.upperBound...].prefix { $0.isNumber })
        }
        return (result, counts)
    }

    @Test(arguments: [(0, 10), (5, 10), (990, 20), (0, 1)])
    func aLimitedFetchWithUnsavedChangesReadsOnlyTheRowsItsWindowNeeds(offset: Int, limit: Int) throws {
        let context = try Self.stage()
        let request = NSFetchRequest<NSManagedObject>(entityName: "Employee")
        request.sortDescriptors = [NSSortDescriptor(key: "salary", ascending: false)]
        let all = try context.fetch(request)
        // Unsaved changes: the best paid falls to the bottom, one from the bottom rises to the top,
        // one near the top is deleted, one at the top changes its name only, two are inserted
        // (one at the top, one in the middle).
        all[0].setValue(Int64(1), forKey: "salary")
        all[999].setValue(Int64(20_000), forKey: "salary")
        context.delete(all[2])
        all[1].setValue("renamed", forKey: "name")
        for (name, salary) in [("new top", Int64(15_000)), ("new middle", Int64(5_005))] {
            let employee = NSEntityDescription.insertNewObject(forEntityName: "Employee", into: context)
            employee.setValue(name, forKey: "name")
            employee.setValue(salary, forKey: "salary")
        }
        let everything = try context.fetch(request)
        #expect(everything.count == 1_001)
        let expected = Array(everything.dropFirst(offset).prefix(limit))

        request.fetchOffset = offset
        request.fetchLimit = limit
        let (window, reads) = try Self.rowsRead { try context.fetch(request) }
        #expect(Self.names(window) == Self.names(expected))
        // Three updated objects and one deleted may be in the store's first rows out of place.
        #expect(reads == [min(offset + limit + 4, 1_000)], "one query of the window's rows and four more: \(reads)")
    }

    /// A limit and offset too large to add up read every row, with or without unsaved changes.
    @Test func aHugeLimitReadsEveryRow() throws {
        #expect(NSManagedObjectContext.storeRowsCovering(offset: 5, limit: 10, judgedInMemory: 3) == 18)
        #expect(NSManagedObjectContext.storeRowsCovering(offset: 5, limit: 0, judgedInMemory: 3) == 0)
        #expect(NSManagedObjectContext.storeRowsCovering(offset: 5, limit: .max, judgedInMemory: 3) == 0)
        #expect(NSManagedObjectContext.storeRowsCovering(offset: 0, limit: .max - 1, judgedInMemory: 3) == 0)
        let context = try Self.stage()
        let request = NSFetchRequest<NSManagedObject>(entityName: "Employee")
        request.sortDescriptors = [NSSortDescriptor(key: "salary", ascending: true)]
        request.fetchOffset = 5
        request.fetchLimit = .max
        #expect(try context.fetch(request).count == 995)
        try context.fetch(request)[0].setValue(Int64(0), forKey: "salary")
        let window = try context.fetch(request)
        #expect(window.count == 995)
        #expect(window.first?.value(forKey: "name") as? String == "e0005", "e0006 moved to the front, before the offset")
    }

    @Test func aLimitedControllerReadsOnlyTheRowsItsWindowNeedsWhenAnObjectChanges() throws {
        let context = try Self.stage()
        let request = NSFetchRequest<NSManagedObject>(entityName: "Employee")
        request.sortDescriptors = [NSSortDescriptor(key: "salary", ascending: false)]
        request.fetchLimit = 10
        let (controller, table) = try tracked(request, in: context, sectionNameKeyPath: nil)
        #expect(Self.names(controller.fetchedObjects ?? []) == (991...1_000).reversed().map { String(format: "e%04d", $0) })

        // One object from the bottom of the store rises into the window.
        let plain = NSFetchRequest<NSManagedObject>(entityName: "Employee")
        plain.predicate = NSPredicate(format: "name == 'e0001'")
        let risen = try #require(try context.fetch(plain).first)
        risen.setValue(Int64(9_995), forKey: "salary")
        let (_, reads) = Self.rowsRead { context.processPendingChanges() }
        let expected = ["e1000", "e0001"] + (992...999).reversed().map { String(format: "e%04d", $0) }
        #expect(Self.names(controller.fetchedObjects ?? []) == expected)
        #expect(Self.names(table.sections.first?.rows ?? []) == expected, "the table's batch updates give the same rows")
        #expect(!reads.isEmpty && reads.allSatisfy { $0 <= 10 + 2 }, "the window's rows and one for each object judged in memory, not all 1,000: \(reads)")

        // Saved, the window holds, and a fresh fetch agrees.
        try context.save()
        #expect(Self.names(controller.fetchedObjects ?? []) == expected)
        let fresh = TestSupport.context(context.persistentStoreCoordinator!)
        #expect(Self.names(try fresh.fetch(request)) == expected)
    }
}
