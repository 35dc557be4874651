import Foundation
import OpenCoreData
import Testing

/// Programmer errors that Core Data answers with an exception trap here, with a message that says
/// what to fix, in debug and in optimized builds alike. Each runs in a child process.
@Suite struct ProgrammerErrorTests {
    /// What a child process that trapped wrote to standard error.
    static func message(_ result: ExitTest.Result?) -> String {
        String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    }

    @Test func unknownKeyTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let company = NSEntityDescription.insertNewObject(forEntityName: "Company", into: try TestSupport.companyContext())
            _ = company.value(forKey: "nonexistent")
        }
        #expect(Self.message(result).contains("valueForUndefinedKey:]: the entity Company is not key value coding-compliant for the key \"nonexistent\""))
        #expect(Self.message(result).contains("through an override of value(forUndefinedKey:)"))
    }

    @Test func aSectionKeyPathNoOneAnswersTraps() async {
        // Core Data raises for a section key path that is neither a property nor answered by the
        // class, whatever the batch size; the message says how a class answers one.
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let context = TestSupport.context(try TestSupport.coordinator(TestSupport.makeCompanyModel()).0)
            let company = NSEntityDescription.insertNewObject(forEntityName: "Company", into: context)
            company.setValue("Acme", forKey: "name")
            try context.save()
            let request = NSFetchRequest<NSManagedObject>(entityName: "Company")
            request.sortDescriptors = [NSSortDescriptor(key: "name", ascending: true)]
            request.fetchBatchSize = 20
            let controller = NSFetchedResultsController(fetchRequest: request, managedObjectContext: context, sectionNameKeyPath: "nameInitial", cacheName: nil)
            try controller.performFetch()
        }
        #expect(Self.message(result).contains("not key value coding-compliant for the key \"nameInitial\""))
        #expect(Self.message(result).contains("through an override of value(forUndefinedKey:)"))
    }

    @Test func insertingAnAbstractEntityTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let entity = NSEntityDescription(name: "Shape", properties: [])
            entity.isAbstract = true
            let model = NSManagedObjectModel()
            model.entities = [entity]
            let context = NSManagedObjectContext(concurrencyType: .confinementConcurrencyType)
            context.persistentStoreCoordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
            _ = NSManagedObject(entity: entity, insertInto: context)
        }
        #expect(Self.message(result).contains("Cannot create an object of the abstract entity Shape"))
    }

    @Test func anUnknownEntityNameTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = NSEntityDescription.insertNewObject(forEntityName: "Nope", into: try TestSupport.companyContext())
        }
        #expect(Self.message(result).contains("+entityForName: could not locate an entity named 'Nope' in this model."))
    }

    @Test func aContextWithBothAParentAndACoordinatorTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let context = try TestSupport.companyContext()
            let child = NSManagedObjectContext(concurrencyType: .confinementConcurrencyType)
            child.parent = context
            child.persistentStoreCoordinator = context.persistentStoreCoordinator
        }
        #expect(Self.message(result).contains("A context has either a parent context or a coordinator, not both."))
    }

    @Test func anObjectOfAnotherContextTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let first = try TestSupport.companyContext(), second = try TestSupport.companyContext()
            let company = NSEntityDescription.insertNewObject(forEntityName: "Company", into: first)
            second.insert(company)
            withExtendedLifetime(first) {}
        }
        #expect(Self.message(result).contains("An NSManagedObject may only be in (or observed by) a single NSManagedObjectContext."))
    }

    @Test func aToOneSetToSomethingElseTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let department = NSEntityDescription.insertNewObject(forEntityName: "Department", into: try TestSupport.companyContext())
            department.setValue("Acme", forKey: "company")
        }
        #expect(Self.message(result).contains("The to-one relationship company of Department takes a managed object; got String."))
    }

    @Test func aMutableSetOfAnAttributeTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let company = NSEntityDescription.insertNewObject(forEntityName: "Company", into: try TestSupport.companyContext())
            _ = company.mutableSetValue(forKey: "name")
        }
        #expect(Self.message(result).contains("mutableSetValue(forKey:) needs a to-many relationship; name is not one."))
    }

    @Test func changingAModelInUseTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let context = try TestSupport.companyContext()
            context.persistentStoreCoordinator!.managedObjectModel.entities = []
        }
        #expect(Self.message(result).contains("Can't modify a model that a persistent store coordinator is using."))
    }

    @Test func anUnsupportedSortSelectorTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = NSSortDescriptor(key: "name", ascending: true, selector: Selector("compareBackwards:"))
        }
        #expect(Self.message(result).contains("NSSortDescriptor: unsupported selector 'compareBackwards:'"))
    }

    @Test func aControllerIndexPathOutOfRangeTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let request = NSFetchRequest<NSManagedObject>(entityName: "Company")
            request.sortDescriptors = [NSSortDescriptor(key: "name", ascending: true)]
            let controller = NSFetchedResultsController(fetchRequest: request, managedObjectContext: try TestSupport.companyContext(),
                                                        sectionNameKeyPath: nil, cacheName: nil)
            try controller.performFetch()
            _ = controller.object(at: IndexPath(row: 3, section: 0))
        }
        #expect(Self.message(result).contains("NSFetchedResultsController: no object at index 3 in section 0."))
    }

    @Test func aFetchRequestExecutedOutsideAPerformBlockTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = try NSFetchRequest<NSManagedObject>(entityName: "Company").execute()
        }
        #expect(Self.message(result).contains("NSFetchRequest.execute() must be called inside a managed object context's perform block."))
    }

    @Test func assigningSomethingElseToAStoreTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let context = try TestSupport.companyContext()
            context.assign("Acme", to: context.persistentStoreCoordinator!.persistentStores[0])
        }
        #expect(Self.message(result).contains("assign(_:to:) takes a managed object; got String."))
    }

    @Test func aSnapshotItemWithoutASectionTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            var snapshot = NSDiffableDataSourceSnapshot<String, Int>()
            snapshot.appendItems([1])
        }
        #expect(Self.message(result).contains("appendItems needs a section: append one first."))
    }

    @Test func reversingAOneWayTransformerTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = OneWayTransformer().reverseTransformedValue("x")
        }
        #expect(Self.message(result).contains("OneWayTransformer does not allow reverse transformation."))
    }

    @Test func detectingConflictsOfAnotherContextsObjectTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let first = try TestSupport.companyContext(), second = try TestSupport.companyContext()
            let company = NSEntityDescription.insertNewObject(forEntityName: "Company", into: first)
            second.detectConflicts(for: company)
            withExtendedLifetime(first) {}
        }
        #expect(Self.message(result).contains("detectConflicts(for:): <x-coredata:///Company/"))
        #expect(Self.message(result).contains("is not in this context."))
    }

    @Test func aMutableOrderedSetOfAnAttributeTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let company = NSEntityDescription.insertNewObject(forEntityName: "Company", into: try TestSupport.companyContext())
            _ = company.mutableOrderedSetValue(forKey: "name")
        }
        #expect(Self.message(result).contains("mutableOrderedSetValue(forKey:) needs a to-many relationship; name is not one."))
    }

    @Test func aContainerWithoutItsModelTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = NSPersistentContainer(name: "NoSuchModel")
        }
        #expect(Self.message(result).contains("NSPersistentContainer: no model named NoSuchModel.xcdatamodeld was found in"))
    }
}

/// A transformer that can't go back.
final class OneWayTransformer: ValueTransformer, @unchecked Sendable {
    override class func allowsReverseTransformation() -> Bool { false }
}
