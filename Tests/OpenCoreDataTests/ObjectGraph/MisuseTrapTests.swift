import Foundation
import OpenCoreData
import Testing

/// A subclass that declares `Company.name` (a string) with the wrong type.
final class MisdeclaredCompany: NSManagedObject {
    @Managed var name: Date
}

/// A subclass no entity names, so no model knows it.
final class UnmodelledThing: NSManagedObject {}

/// More of the traps Core Data answers with an exception: relationships, typed properties,
/// saving, assigning to stores, models in use, the controller and snapshots. Each runs in a child
/// process and checks the message.
@Suite struct MisuseTrapTests {
    private static func message(_ result: ExitTest.Result?) -> String { ProgrammerErrorTests.message(result) }

    // MARK: Objects and relationships

    @Test func aToManySetToSomethingElseTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let company = NSEntityDescription.insertNewObject(forEntityName: "Company", into: try TestSupport.companyContext())
            company.setValue("Sales", forKey: "departments")
        }
        #expect(Self.message(result).contains("A to-many relationship takes a set, ordered set or array of managed objects; got String."))
    }

    @Test func addingSomethingElseToAToManyTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let company = NSEntityDescription.insertNewObject(forEntityName: "Company", into: try TestSupport.companyContext())
            company.mutableSetValue(forKey: "departments").add("Sales")
        }
        #expect(Self.message(result).contains("A to-many relationship holds managed objects; got String."))
    }

    @Test func relationshipHelpersOfAnAttributeTrap() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let company = NSEntityDescription.insertNewObject(forEntityName: "Company", into: try TestSupport.companyContext())
            company._managedRelationship("name").add(company)
        }
        #expect(Self.message(result).contains("name is not a to-many relationship of Company, so it has no add/remove helpers."))
    }

    @Test func aManagedPropertyOfTheWrongTypeTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let context = try TestSupport.companyContext()
            let entity = try #require(context.persistentStoreCoordinator?.managedObjectModel.entitiesByName["Company"])
            let company = MisdeclaredCompany(entity: entity, insertInto: context)
            company.setValue("Acme", forKey: "name")
            _ = company.name
        }
        #expect(Self.message(result).contains("@Managed property Company.name is declared as Date but holds String; declare it with the attribute's type."))
    }

    @Test func aClassNoEntityRepresentsTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = UnmodelledThing(context: try TestSupport.companyContext())
        }
        #expect(Self.message(result).contains("No entity in the context's model is represented by class UnmodelledThing"))
    }

    @Test func theEntityOfAClassNoModelKnowsTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = UnmodelledThing.entity()
        }
        #expect(Self.message(result).contains("No loaded model has an entity whose class is UnmodelledThing."))
    }

    @Test func aFaultOutsideItsContextTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let (context, _, _, employeeID) = try FaultErrorTests.savedCompany()
            let employee = context.object(with: employeeID)
            context.reset()
            _ = employee.value(forKey: "name")
        }
        #expect(Self.message(result).contains("can't be fulfilled: the object is no longer in a context."))
    }

    // MARK: Saving and stores

    @Test func saveCalledFromItsOwnWillSaveTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let context = try TestSupport.companyContext()
            let company = NSEntityDescription.insertNewObject(forEntityName: "Company", into: context)
            company.setValue("Acme", forKey: "name")
            let observer = NotificationCenter.default.addObserver(forName: .NSManagedObjectContextWillSave, object: context, queue: nil) { _ in
                try? context.save()
            }
            try context.save()
            NotificationCenter.default.removeObserver(observer)
        }
        #expect(Self.message(result).contains("save() was called recursively, from willSave() or a notification of the same context."))
    }

    @Test func assigningASavedObjectTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let context = try TestSupport.companyContext()
            let company = NSEntityDescription.insertNewObject(forEntityName: "Company", into: context)
            company.setValue("Acme", forKey: "name")
            try context.save()
            context.assign(company, to: try #require(context.persistentStoreCoordinator?.persistentStores.first))
        }
        #expect(Self.message(result).contains("is not an object inserted in this context."))
    }

    @Test func assigningAnObjectWithAPermanentIDTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let context = try TestSupport.companyContext()
            let company = NSEntityDescription.insertNewObject(forEntityName: "Company", into: context)
            try context.obtainPermanentIDs(for: [company])
            context.assign(company, to: try #require(context.persistentStoreCoordinator?.persistentStores.first))
        }
        #expect(Self.message(result).contains("already has its store (obtainPermanentIDs); an object can't move to another."))
    }

    @Test func assigningToAnotherCoordinatorsStoreTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let context = try TestSupport.companyContext(), other = try TestSupport.companyContext()
            let company = NSEntityDescription.insertNewObject(forEntityName: "Company", into: context)
            context.assign(company, to: try #require(other.persistentStoreCoordinator?.persistentStores.first))
        }
        #expect(Self.message(result).contains("assign(_:to:): the store is not one of this context's coordinator's stores."))
    }

    @Test func assigningToAStoreWithoutTheEntityTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let model = TestSupport.makeCompanyModel()
            model.setEntities([try #require(model.entitiesByName["Company"])], forConfigurationName: "Companies")
            let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
            let store = try coordinator.addPersistentStore(ofType: NSInMemoryStoreType, configurationName: "Companies", at: nil, options: nil)
            let context = TestSupport.context(coordinator)
            let department = NSEntityDescription.insertNewObject(forEntityName: "Department", into: context)
            context.assign(department, to: store)
        }
        #expect(Self.message(result).contains("assign(_:to:): the store's configuration Companies doesn't include the entity Department."))
    }

    // MARK: Models in use

    @Test func changingAnEntityInUseTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let context = try TestSupport.companyContext()
            let entity = try #require(context.persistentStoreCoordinator?.managedObjectModel.entitiesByName["Company"])
            entity.properties = []
        }
        #expect(Self.message(result).contains("Can't modify an entity of a model that a persistent store coordinator is using."))
    }

    @Test func changingAPropertyInUseTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let context = try TestSupport.companyContext()
            let entity = try #require(context.persistentStoreCoordinator?.managedObjectModel.entitiesByName["Company"])
            try #require(entity.propertiesByName["name"]).isOptional = true
        }
        #expect(Self.message(result).contains("Can't modify a property of a model that a persistent store coordinator is using."))
    }

    @Test func settingConfigurationsOfAModelInUseTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let context = try TestSupport.companyContext()
            let model = try #require(context.persistentStoreCoordinator?.managedObjectModel)
            model.setEntities(model.entities, forConfigurationName: "All")
        }
        #expect(Self.message(result).contains("Can't modify a model that a persistent store coordinator is using."))
    }

    // MARK: The controller and snapshots

    @Test func aControllerObjectOfTheWrongClassTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let context = try TestSupport.companyContext()
            let company = NSEntityDescription.insertNewObject(forEntityName: "Company", into: context)
            company.setValue("Acme", forKey: "name")
            try context.save()
            let request = NSFetchRequest<MisdeclaredCompany>(entityName: "Company")
            request.sortDescriptors = [NSSortDescriptor(key: "name", ascending: true)]
            let controller = NSFetchedResultsController(fetchRequest: request, managedObjectContext: context, sectionNameKeyPath: nil, cacheName: nil)
            try controller.performFetch()
            _ = controller.object(at: IndexPath(row: 0, section: 0))
        }
        #expect(Self.message(result).contains("is a NSManagedObject, not a MisdeclaredCompany."))
    }

    @Test func aSectionAppendedTwiceTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            var snapshot = NSDiffableDataSourceSnapshot<String, Int>()
            snapshot.appendSections(["A", "A"])
        }
        #expect(Self.message(result).contains("Section identifier A is already in the snapshot."))
    }

    @Test func itemsForAMissingSectionTrap() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            var snapshot = NSDiffableDataSourceSnapshot<String, Int>()
            snapshot.appendSections(["A"])
            snapshot.appendItems([1], toSection: "B")
        }
        #expect(Self.message(result).contains("Section identifier B is not in the snapshot."))
    }

    @Test func anItemAppendedTwiceTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            var snapshot = NSDiffableDataSourceSnapshot<String, Int>()
            snapshot.appendSections(["A"])
            snapshot.appendItems([1, 1])
        }
        #expect(Self.message(result).contains("Item identifier 1 is already in the snapshot."))
    }

    @Test func insertingBeforeAMissingItemTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            var snapshot = NSDiffableDataSourceSnapshot<String, Int>()
            snapshot.appendSections(["A"])
            snapshot.appendItems([1])
            snapshot.insertItems([2], beforeItem: 7)
        }
        #expect(Self.message(result).contains("Item identifier 7 is not in the snapshot."))
    }

    // MARK: Stores of your own

    @Test func registeringAClassThatIsNoStoreTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            NSPersistentStoreCoordinator.registerStoreClass(NSManagedObject.self, forStoreType: "NotAStore")
        }
        #expect(Self.message(result).contains("is not a subclass of NSPersistentStore (subclass NSIncrementalStore or NSAtomicStore)."))
    }

    @Test func registeringABuiltInTypeTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            NSPersistentStoreCoordinator.registerStoreClass(NSIncrementalStore.self, forStoreType: NSSQLiteStoreType)
        }
        #expect(Self.message(result).contains("'SQLite' is a built-in store type; register your class under a type of its own."))
    }

    @Test func anIDFromANonHashableReferenceTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            LibraryJSONStore.register()
            let coordinator = NSPersistentStoreCoordinator(managedObjectModel: LibraryModel.make())
            let store = try coordinator.addPersistentStore(ofType: LibraryJSONStore.storeType, configurationName: nil,
                                                           at: TestSupport.temporaryDirectory().appendingPathComponent("library.json"),
                                                           options: nil) as! NSIncrementalStore
            _ = store.newObjectID(for: coordinator.managedObjectModel.entitiesByName["Author"]!, referenceObject: { () in })
        }
        #expect(Self.message(result).contains("is not Hashable; use a string, a number or another Hashable value."))
    }
}
