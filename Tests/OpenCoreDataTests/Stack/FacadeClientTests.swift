// A client file exactly as users write it: Foundation and OpenCoreData imported together, with
// the porting switch. Every name Foundation also declares is used as a type and in an expression.
import Foundation
#if canImport(CoreData)
import CoreData
#else
import OpenCoreData
#endif
import Testing

@Suite struct FacadeClientTests {
    @Test func foundationNamesResolveToOpenCoreData() throws {
        let predicate: NSPredicate = NSPredicate(format: "wins > %d", 3)
        let comparison: NSComparisonPredicate? = predicate as? NSComparisonPredicate
        let compound: NSCompoundPredicate = NSCompoundPredicate(andPredicateWithSubpredicates: [predicate, NSPredicate(value: true)])
        let expression: NSExpression = NSExpression(forKeyPath: "wins")
        let sort: NSSortDescriptor = NSSortDescriptor(key: "wins", ascending: false)
        let sorts: [NSSortDescriptor] = [sort, NSSortDescriptor(key: "teamName", ascending: true, selector: Selector("localizedStandardCompare:"))]
        #expect(comparison?.leftExpression.keyPath == expression.keyPath)
        #expect(compound.subpredicates.count == 2)
        #expect(sorts.count == 2)
        #expect(predicate.evaluate(with: ["wins": 4]))
    }

    @Test func existentialFetchRequestsCompile() throws {
        let model = try TestSupport.model("worldcup", "WorldCup")
        let (coordinator, _) = try TestSupport.coordinator(model)
        let context = TestSupport.context(coordinator)
        let team = NSEntityDescription.insertNewObject(forEntityName: "Team", into: context)
        team.setValue("France", forKey: "teamName")
        try context.save()
        let request: NSFetchRequest<NSFetchRequestResult> = NSFetchRequest<NSFetchRequestResult>(entityName: "Team")
        let results: [NSFetchRequestResult] = try context.fetch(request)
        #expect((results.first as? NSManagedObject)?.value(forKey: "teamName") as? String == "France")
        let typed = NSFetchRequest<NSManagedObject>(entityName: "Team")
        let erased = typed as AnyObject as? NSFetchRequest<NSFetchRequestResult>
        #expect(erased == nil, "generic classes are invariant, as in Swift on Apple platforms")
        let ids = NSFetchRequest<NSManagedObjectID>(entityName: "Team")
        ids.resultType = .managedObjectIDResultType
        #expect(try context.fetch(ids) == [team.objectID])
    }

    @Test func containerFindsItsModelAndDefaultDirectory() throws {
        let directory = NSPersistentContainer.defaultDirectoryURL()
        #expect(FileManager.default.fileExists(atPath: directory.path))
        if let xdg = ProcessInfo.processInfo.environment["XDG_DATA_HOME"], !xdg.isEmpty {
            #expect(directory.path.hasPrefix(xdg))
        } else {
            #expect(directory.path.contains(".local/share"))
        }
        let container = NSPersistentContainer(name: "WorldCupTest", managedObjectModel: try TestSupport.model("worldcup", "WorldCup"))
        #expect(container.persistentStoreDescriptions.first?.url?.lastPathComponent == "WorldCupTest.sqlite")
        #expect(container.persistentStoreDescriptions.first?.type == NSSQLiteStoreType)
        let description = NSPersistentStoreDescription()
        description.type = NSInMemoryStoreType
        container.persistentStoreDescriptions = [description]
        var loaded: [String] = []
        container.loadPersistentStores { description, error in
            #expect(error == nil)
            loaded.append(description.type)
        }
        #expect(loaded == [NSInMemoryStoreType])
        #expect(container.viewContext.concurrencyType == .mainQueueConcurrencyType)
        // `init(name:)` finds `<name>.xcdatamodeld` among the resources next to the executable.
        let byName = NSPersistentContainer(name: "WorldCup")
        #expect(byName.managedObjectModel.entitiesByName["Team"] != nil)
        #expect(container.newBackgroundContext().concurrencyType == .privateQueueConcurrencyType)
    }

    /// `shouldAddStoreAsynchronously`: the store is added, and the handler called, on a background
    /// queue; by default both happen on the calling thread.
    @Test func storesAreAddedOnABackgroundQueueWhenAsked() async throws {
        for asynchronously in [false, true] {
            let container = NSPersistentContainer(name: "WorldCupAsync", managedObjectModel: try TestSupport.model("worldcup", "WorldCup"))
            let description = NSPersistentStoreDescription(url: TestSupport.temporaryDirectory().appendingPathComponent("Async.sqlite"))
            description.shouldAddStoreAsynchronously = asynchronously
            container.persistentStoreDescriptions = [description]
            // The handler reads, under a lock the caller holds until loadPersistentStores has
            // returned, whether it has: a handler on the calling thread re-enters the lock at once.
            final class Call: @unchecked Sendable {
                let lock = NSRecursiveLock()
                var returned = false
            }
            let call = Call()
            let (handledAfterReturn, failure): (Bool, String?) = await withCheckedContinuation { continuation in
                call.lock.lock()
                container.loadPersistentStores { _, error in
                    call.lock.lock()
                    let after = call.returned
                    call.lock.unlock()
                    continuation.resume(returning: (after, error.map { "\($0)" }))
                }
                call.returned = true
                call.lock.unlock()
            }
            #expect(failure == nil)
            #expect(handledAfterReturn == asynchronously, "asynchronously: \(asynchronously)")
            #expect(container.persistentStoreCoordinator.persistentStores.count == 1)
            let background = container.newBackgroundContext()
            try background.performAndWait {
                let team = NSEntityDescription.insertNewObject(forEntityName: "Team", into: background)
                team.setValue("France", forKey: "teamName")
                try background.save()
            }
        }
    }
}
