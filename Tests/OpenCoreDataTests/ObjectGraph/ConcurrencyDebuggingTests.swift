import Foundation
import OpenCoreData
import OpenCoreDataTestKit
import Testing

/// Core Data's concurrency debugging (`-com.apple.CoreData.ConcurrencyDebug 1`): this whole suite
/// runs with it on (Tests/ConcurrencyDebugOn), so every test that passes used its contexts on
/// their queues; these tests check that misuse traps with a message saying which queue was
/// expected, and that the ways Core Data allows are not flagged.
@Suite struct ConcurrencyDebuggingTests {
    @Test func theSuiteRunsWithConcurrencyDebuggingOn() {
        #expect(ProcessInfo.processInfo.environment["OPENCOREDATA_CONCURRENCY_DEBUG"] == "1")
    }

    @Test func aPrivateContextFetchingOutsideItsBlocksTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let context = try TestSupport.companyContext(.privateQueueConcurrencyType)
            _ = try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Company"))
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("CoreData concurrency violation: fetch(_:) used the context"))
        #expect(message.contains("its private queue: call it inside the context's perform or performAndWait block"))
    }

    @Test func anObjectReadOffItsContextsQueueTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let context = try TestSupport.companyContext(.privateQueueConcurrencyType)
            context.name = "background"
            let company = context.performAndWait {
                let company = NSEntityDescription.insertNewObject(forEntityName: "Company", into: context)
                company.setValue("Acme", forKey: "name")
                return company
            }
            _ = company.value(forKey: "name")
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("a property access of <x-coredata:///Company/"))
        #expect(message.contains("the context \"background\" (privateQueueConcurrencyType)"))
    }

    @Test func aMainQueueContextUsedOffTheMainQueueTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let context = try TestSupport.companyContext(.mainQueueConcurrencyType)
            // A global queue's thread is neither the main thread nor the main queue.
            DispatchQueue.global().sync {
                context.insert(NSManagedObject(entity: context.persistentStoreCoordinator!.managedObjectModel.entitiesByName["Company"]!, insertInto: nil))
            }
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("insert(_:) used the context (mainQueueConcurrencyType) off its queue"))
        #expect(message.contains("call it on the main thread (the main actor)"))
    }

    @Test func aControllerReadOffItsContextsQueueTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let context = try TestSupport.companyContext(.privateQueueConcurrencyType)
            let request = NSFetchRequest<NSManagedObject>(entityName: "Company")
            request.sortDescriptors = [NSSortDescriptor(key: "name", ascending: true)]
            let controller = NSFetchedResultsController(fetchRequest: request, managedObjectContext: context, sectionNameKeyPath: nil, cacheName: nil)
            try context.performAndWait { try controller.performFetch() }
            _ = controller.fetchedObjects
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("NSFetchedResultsController.fetchedObjects used the context"))
    }

    @Test func aConfinementContextUsedFromAnotherThreadTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let context = try TestSupport.companyContext(.confinementConcurrencyType)
            let thread = Thread { _ = context.hasChanges }
            thread.start()
            _ = DispatchSemaphore(value: 0).wait(timeout: .now() + 10)
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("hasChanges used the context (confinementConcurrencyType)"))
        #expect(message.contains("the thread that created it"))
    }

    /// What Core Data allows: blocks of the context, a child's `performAndWait` inside its
    /// parent's block, `perform` on another queue, a confinement context on its own thread, and
    /// a main-queue context on the main actor.
    @Test func theWaysCoreDataAllowsAreNotFlagged() async throws {
        let coordinator = try TestSupport.coordinator(TestSupport.makeCompanyModel(), type: NSInMemoryStoreType).0
        let parent = TestSupport.context(coordinator, concurrencyType: .privateQueueConcurrencyType)
        let child = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        child.parent = parent
        let company = try parent.performAndWait {
            let company = NSEntityDescription.insertNewObject(forEntityName: "Company", into: parent)
            company.setValue("Acme", forKey: "name")
            try parent.save()
            // Inside the parent's block, the child's performAndWait runs here; the parent's
            // objects stay usable inside it.
            let seen = try child.performAndWait {
                #expect(company.value(forKey: "name") as? String == "Acme")
                return try child.count(for: NSFetchRequest<NSManagedObject>(entityName: "Company"))
            }
            #expect(seen == 1)
            return company
        }
        let id = company.objectID
        let name = await parent.perform { parent.object(with: id).value(forKey: "name") as? String }
        #expect(name == "Acme")

        let confined = TestSupport.context(coordinator)
        #expect(try confined.count(for: NSFetchRequest<NSManagedObject>(entityName: "Company")) == 1)

        let count = try await Self.countOnTheMainActor(coordinator)
        #expect(count == 1)
    }

    @MainActor
    private static func countOnTheMainActor(_ coordinator: NSPersistentStoreCoordinator) throws -> Int {
        let view = TestSupport.context(coordinator, concurrencyType: .mainQueueConcurrencyType)
        return try view.count(for: NSFetchRequest<NSManagedObject>(entityName: "Company"))
    }

    /// Apple's launch argument turns it on in a process whose environment says nothing; without
    /// either, nothing is checked.
    @Test func theLaunchArgumentTurnsItOn() throws {
        let quiet = try Self.runWorker(["off-queue-fetch"])
        #expect(quiet.status == 0)
        #expect(quiet.output.contains("no trap"))
        let checked = try Self.runWorker(["off-queue-fetch", "-com.apple.CoreData.ConcurrencyDebug", "1"])
        #expect(checked.status != 0)
        #expect(!checked.output.contains("no trap"))
        #expect(checked.errors.contains("CoreData concurrency violation: fetch(_:)"))
    }

    /// Runs ReliabilityWorker with concurrency debugging off in its environment.
    static func runWorker(_ arguments: [String]) throws -> (status: Int32, output: String, errors: String) {
        let process = Process()
        process.executableURL = ReliabilityTests.worker
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["OPENCOREDATA_CONCURRENCY_DEBUG"] = "0"
        environment["SWIFT_BACKTRACE"] = "enable=no"
        process.environment = environment
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        let errorData = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: outputData, as: UTF8.self), String(decoding: errorData, as: UTF8.self))
    }
}
