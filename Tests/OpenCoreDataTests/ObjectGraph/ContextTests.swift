import Foundation
import OpenCoreData
import Testing

/// Inserting, deleting, saving, rolling back and refreshing objects in a context.
@Suite struct ContextTests {
    private func make(_ type: String = NSSQLiteStoreType) throws -> (NSManagedObjectContext, NSPersistentStoreCoordinator) {
        let (coordinator, _) = try TestSupport.coordinator(TestSupport.makeCompanyModel(), type: type)
        return (TestSupport.context(coordinator), coordinator)
    }

    private func employee(_ name: String, in context: NSManagedObjectContext) -> NSManagedObject {
        let object = NSEntityDescription.insertNewObject(forEntityName: "Employee", into: context)
        object.setValue(name, forKey: "name")
        return object
    }

    /// A to-one relationship without an inverse still pointing at an object inserted and deleted
    /// before any save fails the save with Core Data's dangling-reference error (1550) and writes
    /// nothing: the key it would write belongs to no row. Clearing it lets the save through.
    @Test func aReferenceToAnObjectInsertedAndDeletedUnsavedFailsTheSave() throws {
        let note = NSEntityDescription(name: "Note", className: "NSManagedObject")
        let attachment = NSEntityDescription(name: "Attachment", className: "NSManagedObject")
        attachment.properties = [NSAttributeDescription(name: "name", type: .stringAttributeType)]
        note.properties = [NSAttributeDescription(name: "title", type: .stringAttributeType),
                           NSRelationshipDescription(name: "attachment", destination: attachment)]
        let model = NSManagedObjectModel()
        model.entities = [note, attachment]
        let context = TestSupport.context(try TestSupport.coordinator(model).0)
        let file = NSEntityDescription.insertNewObject(forEntityName: "Attachment", into: context)
        let memo = NSEntityDescription.insertNewObject(forEntityName: "Note", into: context)
        memo.setValue(file, forKey: "attachment")
        context.delete(file)

        let error = try #require(throws: NSError.self) { try context.save() }
        #expect(error.code == NSManagedObjectValidationError && error.userInfo[NSValidationKeyErrorKey] as? String == "attachment")
        #expect((error.userInfo[NSLocalizedDescriptionKey] as? String)?.contains("deleted before it was ever saved") == true)
        #expect(memo.isInserted && context.hasChanges)
        memo.setValue(nil, forKey: "attachment")
        try context.save()
        #expect(try context.count(for: NSFetchRequest<NSManagedObject>(entityName: "Note")) == 1)
    }

    @Test(arguments: [NSSQLiteStoreType, NSInMemoryStoreType, NSBinaryStoreType])
    func insertSaveAndIdentity(storeType: String) throws {
        let (context, coordinator) = try make(storeType)
        let alice = employee("Alice", in: context)
        #expect(alice.objectID.isTemporaryID)
        #expect(context.hasChanges)
        #expect(context.insertedObjects.contains(alice))
        #expect(alice.value(forKey: "salary") as? Int64 == 1000, "default value")
        #expect(alice.value(forKey: "active") as? Bool == true)
        try context.save()
        #expect(!alice.objectID.isTemporaryID)
        #expect(!context.hasChanges)
        #expect(!alice.isInserted)
        // One object per ID per context.
        #expect(context.object(with: alice.objectID) === alice)
        #expect(context.registeredObject(for: alice.objectID) === alice)
        let fetched = try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Employee"))
        #expect(fetched.count == 1 && fetched[0] === alice)
        // URIs round-trip.
        let uri = alice.objectID.uriRepresentation()
        #expect(uri.scheme == "x-coredata")
        #expect(uri.path.hasSuffix("/Employee/p1"))
        #expect(coordinator.managedObjectID(forURIRepresentation: uri) == alice.objectID)
        #expect(coordinator.managedObjectID(for: uri.absoluteString) == alice.objectID)
        #expect(coordinator.managedObjectID(for: "not a URI") == nil)
        // Another context sees the saved object as a fault with the same ID.
        let other = TestSupport.context(coordinator)
        let copy = try other.existingObject(with: alice.objectID)
        #expect(copy !== alice)
        #expect(copy.value(forKey: "name") as? String == "Alice")
        let unknown = try #require(coordinator.managedObjectID(forURIRepresentation: URL(string: uri.absoluteString.replacingOccurrences(of: "/p1", with: "/p99"))!))
        #expect(throws: NSError.self) { try other.existingObject(with: unknown) }
    }

    /// Objects share their context's weak reference to it: an object that outlives its context,
    /// inserted or fetched (with its row or as a fault), reports no context and keeps its values;
    /// one the context lets go while it lives (reset) reports none at once.
    @Test(arguments: [NSSQLiteStoreType, NSInMemoryStoreType])
    func objectsThatOutliveTheirContextHaveNone(storeType: String) throws {
        let (coordinator, _) = try TestSupport.coordinator(TestSupport.makeCompanyModel(), type: storeType)
        var kept: [NSManagedObject] = []
        weak var writerGone: NSManagedObjectContext?
        weak var readerGone: NSManagedObjectContext?
        do {
            let writer = TestSupport.context(coordinator)
            writerGone = writer
            let alice = employee("Alice", in: writer)
            try writer.save()
            let reader = TestSupport.context(coordinator)
            readerGone = reader
            let fetched = try reader.fetch(NSFetchRequest<NSManagedObject>(entityName: "Employee"))
            let fault = NSFetchRequest<NSManagedObject>(entityName: "Employee")
            fault.returnsObjectsAsFaults = true
            fault.includesPropertyValues = false
            let reset = TestSupport.context(coordinator)
            let dropped = try reset.fetch(fault)
            #expect(alice.managedObjectContext === writer)
            #expect(fetched.count == 1 && fetched[0].managedObjectContext === reader && fetched[0] !== alice)
            #expect(dropped.count == 1 && dropped[0].managedObjectContext === reset)
            reset.reset()
            #expect(dropped[0].managedObjectContext == nil)
            #expect(reader.registeredObjects.count == 1)
            kept = [alice, fetched[0]]
        }
        #expect(writerGone == nil && readerGone == nil)
        #expect(kept.allSatisfy { $0.managedObjectContext == nil })
        #expect(kept.map { $0.value(forKey: "name") as? String } == ["Alice", "Alice"])
    }

    @Test func keyValueCodingAndChanges() throws {
        let (context, _) = try make()
        let department = NSEntityDescription.insertNewObject(forEntityName: "Department", into: context)
        department.setValue("Sales", forKey: "name")
        let bob = employee("Bob", in: context)
        bob.setValue(department, forKey: "department")
        bob.setValue(42, forKey: "age")  // an Int is stored as the attribute's Int16
        #expect(bob.value(forKey: "age") as? Int16 == 42)
        #expect(bob.value(forKeyPath: "department.name") as? String == "Sales")
        #expect((department.value(forKey: "employees") as? Set<NSManagedObject>)?.contains(bob) == true)
        try context.save()
        #expect(bob.changedValues().isEmpty)
        bob.setValue("Robert", forKey: "name")
        #expect(bob.isUpdated)
        #expect(bob.changedValues()["name"] as? String == "Robert")
        #expect(bob.committedValues(forKeys: ["name"])["name"] as? String == "Bob")
        #expect(context.updatedObjects.contains(bob))
        bob.setPrimitiveValue("Bobby", forKey: "name")
        #expect(bob.primitiveValue(forKey: "name") as? String == "Bobby")
        // Setting the same value back leaves no persistent change.
        bob.setValue("Bob", forKey: "name")
        #expect(!bob.hasPersistentChangedValues)
        // mutableSetValue writes through and keeps inverses.
        let carol = employee("Carol", in: context)
        department.mutableSetValue(forKey: "employees").add(carol)
        #expect(carol.value(forKey: "department") as? NSManagedObject === department)
        department.mutableSetValue(forKey: "employees").remove(bob)
        #expect(bob.value(forKey: "department") == nil)
        #expect(bob.objectIDs(forRelationshipNamed: "department").isEmpty)
        #expect(department.objectIDs(forRelationshipNamed: "employees") == [carol.objectID])
    }

    @Test func manyToManyAndOrderedRelationshipsPersist() throws {
        let (context, coordinator) = try make()
        let project = NSEntityDescription.insertNewObject(forEntityName: "Project", into: context)
        project.setValue("Apollo", forKey: "title")
        let people = (0..<3).map { employee("P\($0)", in: context) }
        project.setValue(Set(people), forKey: "members")
        #expect((people[0].value(forKey: "projects") as? Set<NSManagedObject>)?.contains(project) == true)
        let department = NSEntityDescription.insertNewObject(forEntityName: "Department", into: context)
        department.setValue("Ops", forKey: "name")
        let teams = (0..<4).map { index -> NSManagedObject in
            let team = NSEntityDescription.insertNewObject(forEntityName: "Team", into: context)
            team.setValue("T\(index)", forKey: "title")
            return team
        }
        department.mutableOrderedSetValue(forKey: "teams").add(teams[2])
        department.mutableOrderedSetValue(forKey: "teams").add(teams[0])
        department.mutableOrderedSetValue(forKey: "teams").insert(teams[3], at: 1)
        try context.save()

        let fresh = TestSupport.context(coordinator)
        let request = NSFetchRequest<NSManagedObject>(entityName: "Project")
        let loaded = try #require(try fresh.fetch(request).first)
        let members = try #require(loaded.value(forKey: "members") as? Set<NSManagedObject>)
        #expect(Set(members.compactMap { $0.value(forKey: "name") as? String }) == ["P0", "P1", "P2"])
        let loadedDepartment = try #require(try fresh.fetch(NSFetchRequest<NSManagedObject>(entityName: "Department")).first)
        let ordered = try #require(loadedDepartment.value(forKey: "teams") as? NSOrderedSet)
        #expect(ordered.array.compactMap { ($0 as? NSManagedObject)?.value(forKey: "title") as? String } == ["T2", "T3", "T0"])
        // Removing a member on one side removes it on the other, in the store too.
        let first = try #require(members.first { $0.value(forKey: "name") as? String == "P0" })
        first.mutableSetValue(forKey: "projects").remove(loaded)
        try fresh.save()
        let third = TestSupport.context(coordinator)
        let again = try #require(try third.fetch(request).first)
        #expect((again.value(forKey: "members") as? Set<NSManagedObject>)?.count == 2)
    }

    @Test func deleteRules() throws {
        let (context, _) = try make()
        let company = NSEntityDescription.insertNewObject(forEntityName: "Company", into: context)
        company.setValue("Acme", forKey: "name")
        let department = NSEntityDescription.insertNewObject(forEntityName: "Department", into: context)
        department.setValue("R&D", forKey: "name")
        department.setValue(company, forKey: "company")
        let worker = employee("Worker", in: context)
        worker.setValue(department, forKey: "department")
        let boss = NSEntityDescription.insertNewObject(forEntityName: "Manager", into: context)
        boss.setValue("Boss", forKey: "name")
        worker.setValue(boss, forKey: "boss")
        try context.save()

        // Deny: a manager with reports can't be deleted.
        context.delete(boss)
        let denied = try #require(throws: NSError.self) { try context.save() }
        #expect(denied.code == NSValidationRelationshipDeniedDeleteError)
        #expect(denied.userInfo[NSValidationKeyErrorKey] as? String == "reports")
        #expect(context.deletedObjects.contains(boss), "the context keeps its changes after a failed save")
        context.rollback()
        #expect(!boss.isDeleted)
        #expect(worker.value(forKey: "boss") as? NSManagedObject === boss)

        // Cascade: deleting the company deletes its departments; Nullify clears the employees' link.
        context.delete(company)
        #expect(department.isDeleted)
        #expect(worker.value(forKey: "department") == nil)
        try context.save()
        #expect(try context.count(for: NSFetchRequest<NSManagedObject>(entityName: "Department")) == 0)
        #expect(try context.count(for: NSFetchRequest<NSManagedObject>(entityName: "Employee")) == 2)
    }

    /// Nullify reaches related objects that are still faults: deleting a department fetched in a
    /// fresh context (or a child context) clears the department of employees never read there.
    @Test(arguments: [false, true]) func deleteRulesReachFaults(inChild: Bool) throws {
        let (context, coordinator) = try make()
        let department = NSEntityDescription.insertNewObject(forEntityName: "Department", into: context)
        department.setValue("R&D", forKey: "name")
        for name in ["Ann", "Bob", "Cy"] { employee(name, in: context).setValue(department, forKey: "department") }
        try context.save()

        let fresh = TestSupport.context(coordinator)
        let working: NSManagedObjectContext
        if inChild {
            working = NSManagedObjectContext(concurrencyType: .confinementConcurrencyType)
            working.parent = fresh
        } else {
            working = fresh
        }
        let fetched = try #require(try working.fetch(NSFetchRequest<NSManagedObject>(entityName: "Department")).first)
        working.delete(fetched)
        #expect(working.updatedObjects.count == 3, "the three employees lose their department")
        try working.save()
        if inChild { try fresh.save() }

        let check = TestSupport.context(coordinator)
        let employees = try check.fetch(NSFetchRequest<NSManagedObject>(entityName: "Employee"))
        #expect(employees.count == 3)
        #expect(employees.allSatisfy { $0.value(forKey: "department") == nil })
    }

    /// A child context sees its parent's unsaved changes: the to-many relationships of objects
    /// the parent inserted, and its changed relationships in fetches by object
    /// (`department == %@` with the child's own object).
    @Test(arguments: [NSSQLiteStoreType, NSInMemoryStoreType]) func childSeesParentsUnsavedRelationships(storeType: String) throws {
        let (parent, _) = try make(storeType)
        let research = NSEntityDescription.insertNewObject(forEntityName: "Department", into: parent)
        research.setValue("Research", forKey: "name")
        let sales = NSEntityDescription.insertNewObject(forEntityName: "Department", into: parent)
        sales.setValue("Sales", forKey: "name")
        let ann = employee("Ann", in: parent)
        ann.setValue(sales, forKey: "department")
        try parent.save()
        // Unsaved in the parent: a new department with two employees, and Ann moved to Research.
        let design = NSEntityDescription.insertNewObject(forEntityName: "Department", into: parent)
        design.setValue("Design", forKey: "name")
        for name in ["Bob", "Cy"] { employee(name, in: parent).setValue(design, forKey: "department") }
        ann.setValue(research, forKey: "department")

        let child = NSManagedObjectContext(concurrencyType: .confinementConcurrencyType)
        child.parent = parent
        let childDesign = child.object(with: design.objectID)
        #expect((childDesign.value(forKey: "employees") as? Set<NSManagedObject>)?.count == 2)
        let staffed = NSFetchRequest<NSManagedObject>(entityName: "Department")
        staffed.predicate = NSPredicate(format: "employees.@count > 0")
        #expect(Set(try child.fetch(staffed).map { $0.value(forKey: "name") as? String }) == ["Design", "Research"])

        let inResearch = NSFetchRequest<NSManagedObject>(entityName: "Employee")
        inResearch.predicate = NSPredicate(format: "department == %@", child.object(with: research.objectID))
        #expect(try child.fetch(inResearch).map { $0.value(forKey: "name") as? String } == ["Ann"])
        #expect(try child.count(for: inResearch) == 1)
        inResearch.predicate = NSPredicate(format: "department IN %@", [child.object(with: sales.objectID), childDesign])
        #expect(Set(try child.fetch(inResearch).map { $0.value(forKey: "name") as? String }) == ["Bob", "Cy"])
    }

    /// A child's fetch by an object the child inserted and hasn't saved finds the child's objects
    /// that point at it, and leaves the parent able to take the object when the child saves.
    @Test func aChildsFetchByItsNewObjectThenSaves() throws {
        let (parent, coordinator) = try make()
        let child = NSManagedObjectContext(concurrencyType: .confinementConcurrencyType)
        child.parent = parent
        let design = NSEntityDescription.insertNewObject(forEntityName: "Department", into: child)
        design.setValue("Design", forKey: "name")
        employee("Ann", in: child).setValue(design, forKey: "department")
        let request = NSFetchRequest<NSManagedObject>(entityName: "Employee")
        request.predicate = NSPredicate(format: "department == %@", design)
        #expect(try child.fetch(request).map { $0.value(forKey: "name") as? String } == ["Ann"])
        #expect(try child.count(for: request) == 1)
        try child.save()
        try parent.save()
        let check = TestSupport.context(coordinator)
        let saved = try check.fetch(NSFetchRequest<NSManagedObject>(entityName: "Department"))
        #expect(saved.map { $0.value(forKey: "name") as? String } == ["Design"])
        #expect((saved.first?.value(forKey: "employees") as? Set<NSManagedObject>)?.count == 1)
    }

    @Test func validationErrorsKeepTheContextIntact() throws {
        let (context, coordinator) = try make()
        let nameless = NSEntityDescription.insertNewObject(forEntityName: "Employee", into: context)
        let missing = try #require(throws: NSError.self) { try context.save() }
        #expect(missing.domain == NSCocoaErrorDomain)
        #expect(missing.code == NSValidationMissingMandatoryPropertyError)
        #expect(missing.userInfo[NSValidationKeyErrorKey] as? String == "name")
        #expect(missing.userInfo[NSValidationObjectErrorKey] as? NSManagedObject === nameless)
        #expect(context.insertedObjects.contains(nameless))

        nameless.setValue("Ok", forKey: "name")
        nameless.setValue("not a number", forKey: "salary")
        let wrongType = try #require(throws: NSError.self) { try context.save() }
        #expect(wrongType.code == NSManagedObjectValidationError)
        #expect(wrongType.userInfo[NSValidationKeyErrorKey] as? String == "salary")

        nameless.setValue(Int64(-5), forKey: "salary")
        nameless.setValue("nobody", forKey: "email")
        let several = try #require(throws: NSError.self) { try context.save() }
        #expect(several.code == NSValidationMultipleErrorsError)
        let codes = Set((several.userInfo[NSDetailedErrorsKey] as? [NSError] ?? []).map(\.code))
        #expect(codes == [NSValidationNumberTooSmallError, NSValidationStringPatternMatchingError])
        // Nothing reached the store.
        let other = TestSupport.context(coordinator)
        #expect(try other.count(for: NSFetchRequest<NSManagedObject>(entityName: "Employee")) == 0)

        nameless.setValue(Int64(50), forKey: "salary")
        nameless.setValue("a@b.c", forKey: "email")
        try context.save()
        #expect(try other.count(for: NSFetchRequest<NSManagedObject>(entityName: "Employee")) == 1)
    }

    @Test func rollbackResetAndRefresh() throws {
        let (context, coordinator) = try make()
        let saved = employee("Saved", in: context)
        try context.save()
        let unsaved = employee("Unsaved", in: context)
        saved.setValue("Changed", forKey: "name")
        context.rollback()
        #expect(saved.value(forKey: "name") as? String == "Saved")
        #expect(unsaved.managedObjectContext == nil)
        #expect(!context.hasChanges)

        // Refresh brings in another context's saved change.
        let other = TestSupport.context(coordinator)
        let copy = try other.existingObject(with: saved.objectID)
        copy.setValue("From other", forKey: "name")
        try other.save()
        #expect(saved.value(forKey: "name") as? String == "Saved")
        context.refresh(saved, mergeChanges: false)
        #expect(saved.isFault)
        #expect(saved.value(forKey: "name") as? String == "From other")

        // refresh(mergeChanges: true) keeps local changes on top of the store's values.
        copy.setValue(Int64(7), forKey: "salary")
        try other.save()
        saved.setValue("Local", forKey: "name")
        context.refresh(saved, mergeChanges: true)
        #expect(saved.value(forKey: "name") as? String == "Local")
        #expect(saved.value(forKey: "salary") as? Int64 == 7)

        context.reset()
        #expect(context.registeredObjects.isEmpty)
        #expect(!context.hasChanges)
    }

    @Test func notifications() throws {
        let (context, _) = try make()
        let center = NotificationCenter.default
        let log = NotificationLog()
        let tokens = [
            center.addObserver(forName: .NSManagedObjectContextObjectsDidChange, object: context, queue: nil) { note in
                log.append("change", inserted: (note.userInfo?[NSInsertedObjectsKey] as? Set<NSManagedObject>)?.count ?? 0)
            },
            center.addObserver(forName: .NSManagedObjectContextWillSave, object: context, queue: nil) { _ in log.append("willSave", inserted: 0) },
            center.addObserver(forName: .NSManagedObjectContextDidSave, object: context, queue: nil) { note in
                log.append("didSave", inserted: (note.userInfo?[NSInsertedObjectsKey] as? Set<NSManagedObject>)?.count ?? 0)
            },
        ]
        defer { tokens.forEach(center.removeObserver) }
        _ = employee("A", in: context)
        _ = employee("B", in: context)
        context.processPendingChanges()
        try context.save()
        #expect(log.entries == ["change:2", "willSave:0", "didSave:2"])
    }

    @Test(arguments: [NSSQLiteStoreType, NSInMemoryStoreType])
    func fetchReflectsPendingChanges(storeType: String) throws {
        let (context, _) = try make(storeType)
        for (name, salary) in [("Ann", 100), ("Ben", 200), ("Cid", 300)] {
            employee(name, in: context).setValue(Int64(salary), forKey: "salary")
        }
        try context.save()
        let request = NSFetchRequest<NSManagedObject>(entityName: "Employee")
        request.predicate = NSPredicate(format: "salary >= 200")
        request.sortDescriptors = [NSSortDescriptor(key: "salary", ascending: true)]
        let names: () throws -> [String] = { try context.fetch(request).compactMap { $0.value(forKey: "name") as? String } }
        #expect(try names() == ["Ben", "Cid"])
        // Unsaved insert that matches, update that stops matching, update that starts matching, delete.
        employee("Dan", in: context).setValue(Int64(250), forKey: "salary")
        let all = try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Employee"))
        let byName = Dictionary(uniqueKeysWithValues: all.map { ($0.value(forKey: "name") as! String, $0) })
        byName["Ben"]!.setValue(Int64(10), forKey: "salary")
        byName["Ann"]!.setValue(Int64(500), forKey: "salary")
        context.delete(byName["Cid"]!)
        #expect(try names() == ["Dan", "Ann"])
        #expect(try context.count(for: request) == 2)
        request.includesPendingChanges = false
        #expect(try context.fetch(request).count == 2, "store rows only: Ben and Cid")
        request.includesPendingChanges = true
        request.fetchLimit = 1
        #expect(try names() == ["Dan"])
    }

    @Test func fetchOptions() throws {
        let (context, _) = try make()
        for index in 0..<10 { employee(String(format: "E%02d", index), in: context).setValue(Int64(index), forKey: "salary") }
        let boss = NSEntityDescription.insertNewObject(forEntityName: "Manager", into: context)
        boss.setValue("Zed", forKey: "name")
        try context.save()
        let fresh = TestSupport.context(context.persistentStoreCoordinator!)
        let request = NSFetchRequest<NSManagedObject>(entityName: "Employee")
        request.sortDescriptors = [NSSortDescriptor(key: "name", ascending: true)]
        request.fetchOffset = 2
        request.fetchLimit = 3
        #expect(try fresh.fetch(request).compactMap { $0.value(forKey: "name") as? String } == ["E02", "E03", "E04"])
        request.fetchOffset = 0
        request.fetchLimit = 0
        #expect(try fresh.count(for: request) == 11)
        request.includesSubentities = false
        #expect(try fresh.count(for: request) == 10)
        let managers = try fresh.fetch(NSFetchRequest<NSManagedObject>(entityName: "Manager"))
        #expect(managers.count == 1 && managers[0].entity.name == "Manager")
        // Faults and returnsObjectsAsFaults (objects already realized in a context stay realized).
        let faults = try TestSupport.context(context.persistentStoreCoordinator!).fetch(NSFetchRequest<NSManagedObject>(entityName: "Employee"))
        #expect(faults.allSatisfy { $0.isFault })
        #expect(try fresh.fetch(NSFetchRequest<NSManagedObject>(entityName: "Employee")).contains { !$0.isFault })
        let eager = NSFetchRequest<NSManagedObject>(entityName: "Employee")
        eager.returnsObjectsAsFaults = false
        let other = TestSupport.context(context.persistentStoreCoordinator!)
        #expect(try other.fetch(eager).allSatisfy { !$0.isFault })
        // Object IDs, counts and dictionaries.
        let ids = NSFetchRequest<NSManagedObjectID>(entityName: "Employee")
        ids.resultType = .managedObjectIDResultType
        #expect(try fresh.fetch(ids).count == 11)
        let count = NSFetchRequest<NSNumber>(entityName: "Employee")
        count.resultType = .countResultType
        #expect(try fresh.fetch(count).first?.intValue == 11)
        let dictionaries = NSFetchRequest<NSDictionary>(entityName: "Employee")
        dictionaries.resultType = .dictionaryResultType
        dictionaries.propertiesToFetch = ["name"]
        dictionaries.predicate = NSPredicate(format: "salary < 2")
        dictionaries.sortDescriptors = [NSSortDescriptor(key: "name", ascending: true)]
        #expect(try fresh.fetch(dictionaries).map { $0["name"] as? String } == ["E00", "E01"])
    }

    @Test func badFetchRequestsThrow() throws {
        let (context, _) = try make()
        let unknownEntity = NSFetchRequest<NSManagedObject>(entityName: "Nope")
        #expect(throws: NSError.self) { try context.fetch(unknownEntity) }
        let unknownKey = NSFetchRequest<NSManagedObject>(entityName: "Employee")
        unknownKey.predicate = NSPredicate(format: "nonsense == 1")
        let keyError = try #require(throws: NSError.self) { try context.fetch(unknownKey) }
        #expect(keyError.localizedDescription.contains("nonsense"))
        let badSort = NSFetchRequest<NSManagedObject>(entityName: "Employee")
        badSort.sortDescriptors = [NSSortDescriptor(key: "department.nothing", ascending: true)]
        #expect(throws: NSError.self) { try context.fetch(badSort) }
        let malformed = NSFetchRequest<NSManagedObject>(entityName: "Employee")
        malformed.predicate = NSPredicate(format: "name == ")
        #expect(throws: (any Error).self) { try context.fetch(malformed) }
        let toMany = NSFetchRequest<NSManagedObject>(entityName: "Department")
        toMany.predicate = NSPredicate(format: "employees.name == 'x'")
        let toManyError = try #require(throws: NSError.self) { try context.fetch(toMany) }
        #expect(toManyError.localizedDescription.contains("to-many"))
        let mismatch = NSFetchRequest<NSManagedObject>(entityName: "Employee")
        mismatch.predicate = NSPredicate(format: "salary == 'ten'")
        #expect(throws: NSError.self) { try context.fetch(mismatch) }
    }

    @Test func toManyQuantifiersRunInSQL() throws {
        let (context, _) = try make()
        let sales = NSEntityDescription.insertNewObject(forEntityName: "Department", into: context)
        sales.setValue("Sales", forKey: "name")
        let empty = NSEntityDescription.insertNewObject(forEntityName: "Department", into: context)
        empty.setValue("Empty", forKey: "name")
        for (name, salary) in [("a", 10), ("b", 500)] {
            let person = employee(name, in: context)
            person.setValue(Int64(salary), forKey: "salary")
            person.setValue(sales, forKey: "department")
        }
        try context.save()
        let fresh = TestSupport.context(context.persistentStoreCoordinator!)
        func names(_ format: String) throws -> [String] {
            let request = NSFetchRequest<NSManagedObject>(entityName: "Department")
            request.predicate = NSPredicate(format: format)
            request.sortDescriptors = [NSSortDescriptor(key: "name", ascending: true)]
            return try fresh.fetch(request).compactMap { $0.value(forKey: "name") as? String }
        }
        #expect(try names("ANY employees.salary > 100") == ["Sales"])
        #expect(try names("ALL employees.salary > 100") == ["Empty"])
        #expect(try names("NONE employees.salary > 1000") == ["Empty", "Sales"])
        #expect(try names("employees.@count == 2") == ["Sales"])
        #expect(try names("employees.@count == 0") == ["Empty"])
        #expect(try names("employees.@sum.salary > 400") == ["Sales"])
        #expect(try names("NOT (name == 'Sales')") == ["Empty"])
        #expect(try names("name BEGINSWITH[c] 'sa' OR name IN {'Empty'}") == ["Empty", "Sales"])
    }
}

/// Collects notification names in order.
final class NotificationLog: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [String] = []
    func append(_ name: String, inserted: Int) { lock.lock(); items.append("\(name):\(inserted)"); lock.unlock() }
    var entries: [String] { lock.lock(); defer { lock.unlock() }; return items }
}
