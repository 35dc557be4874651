import Foundation
import OpenCoreData
import Testing

/// Records the targets' values so tests can see what undo and redo did.
private final class Counter {
    var value = 0

    func set(_ newValue: Int, undoManager: UndoManager) {
        let old = value
        undoManager.registerUndo(withTarget: self) { counter in counter.set(old, undoManager: undoManager) }
        value = newValue
    }
}

/// `UndoManager` on its own: grouping, nesting, levels, redo, names, registration switch.
@Suite struct UndoManagerTests {
    @Test func eventGroupUndoAndRedo() {
        let manager = UndoManager()
        let counter = Counter()
        #expect(!manager.canUndo && !manager.canRedo)
        counter.set(1, undoManager: manager)
        counter.set(2, undoManager: manager)
        #expect(manager.groupingLevel == 1, "the first registration opened the event's group")
        #expect(manager.canUndo)
        manager.undo()
        #expect(counter.value == 0, "both changes of the event are one step")
        #expect(manager.canRedo && !manager.canUndo)
        manager.redo()
        #expect(counter.value == 2)
        #expect(manager.canUndo && !manager.canRedo)
    }

    @Test func explicitAndNestedGroups() {
        let manager = UndoManager()
        manager.groupsByEvent = false
        let counter = Counter()
        manager.beginUndoGrouping()
        counter.set(1, undoManager: manager)
        manager.endUndoGrouping()
        manager.beginUndoGrouping()
        counter.set(2, undoManager: manager)
        manager.beginUndoGrouping()
        #expect(manager.groupingLevel == 2)
        counter.set(3, undoManager: manager)
        manager.endUndoGrouping()
        counter.set(4, undoManager: manager)
        // undo() with a group still open does nothing.
        manager.undo()
        #expect(counter.value == 4)
        manager.endUndoGrouping()
        manager.undo()
        #expect(counter.value == 1, "the outer group, with its nested group, is one step")
        manager.undo()
        #expect(counter.value == 0)
        manager.redo()
        manager.redo()
        #expect(counter.value == 4)
    }

    @Test func newRegistrationClearsRedo() {
        let manager = UndoManager()
        let counter = Counter()
        counter.set(1, undoManager: manager)
        manager.undo()
        #expect(manager.canRedo)
        counter.set(5, undoManager: manager)
        #expect(!manager.canRedo)
        manager.undo()
        #expect(counter.value == 0)
    }

    @Test func levelsOfUndoDropsOldestGroups() {
        let manager = UndoManager()
        manager.groupsByEvent = false
        manager.levelsOfUndo = 2
        let counter = Counter()
        for value in 1...4 {
            manager.beginUndoGrouping()
            counter.set(value, undoManager: manager)
            manager.endUndoGrouping()
        }
        manager.undo()
        manager.undo()
        #expect(counter.value == 2)
        #expect(!manager.canUndo)
        manager.undo()
        #expect(counter.value == 2)
    }

    @Test func actionNamesFollowTheStacks() {
        let manager = UndoManager()
        let counter = Counter()
        counter.set(1, undoManager: manager)
        manager.setActionName("Typing")
        #expect(manager.undoActionName == "Typing")
        #expect(manager.undoMenuItemTitle == "Undo Typing")
        manager.undo()
        #expect(manager.undoActionName == "")
        #expect(manager.redoActionName == "Typing")
        #expect(manager.redoMenuItemTitle == "Redo Typing")
        manager.redo()
        #expect(manager.undoActionName == "Typing")
    }

    @Test func disabledRegistrationAndTargetRemoval() {
        let manager = UndoManager()
        let counter = Counter()
        let other = Counter()
        manager.disableUndoRegistration()
        manager.disableUndoRegistration()
        counter.set(1, undoManager: manager)
        manager.enableUndoRegistration()
        #expect(!manager.isUndoRegistrationEnabled)
        manager.enableUndoRegistration()
        #expect(manager.isUndoRegistrationEnabled)
        #expect(!manager.canUndo)
        counter.set(2, undoManager: manager)
        other.set(7, undoManager: manager)
        manager.removeAllActions(withTarget: counter)
        manager.undo()
        #expect(counter.value == 2 && other.value == 0)
        manager.removeAllActions()
        #expect(!manager.canUndo && !manager.canRedo)
    }

    @Test func undoingAndRedoingFlagsAndNotifications() {
        let manager = UndoManager()
        let counter = Counter()
        final class Seen: @unchecked Sendable { var names: [Notification.Name] = []; var undoing = false }
        let seen = Seen()
        let names: [Notification.Name] = [.NSUndoManagerWillUndoChange, .NSUndoManagerDidUndoChange, .NSUndoManagerWillRedoChange, .NSUndoManagerDidRedoChange]
        let observers = names.map { name in
            NotificationCenter.default.addObserver(forName: name, object: manager, queue: nil) { note in seen.names.append(note.name) }
        }
        defer { for observer in observers { NotificationCenter.default.removeObserver(observer) } }
        counter.set(1, undoManager: manager)
        manager.registerUndo(withTarget: counter) { _ in seen.undoing = manager.isUndoing && !manager.isRedoing }
        manager.undo()
        manager.redo()
        #expect(seen.undoing)
        #expect(!manager.isUndoing && !manager.isRedoing)
        #expect(seen.names == names)
        #expect(Notification.Name.NSUndoManagerDidUndoChange.rawValue == "NSUndoManagerDidUndoChangeNotification")
    }
}

/// A context with an undo manager: undo and redo restore the object graph exactly.
@MainActor
@Suite struct ContextUndoTests {
    private func make() throws -> NSManagedObjectContext {
        let (coordinator, _) = try TestSupport.coordinator(TestSupport.makeCompanyModel(), type: NSInMemoryStoreType)
        let context = TestSupport.context(coordinator)
        #expect(context.undoManager == nil, "contexts have no undo manager by default")
        context.undoManager = UndoManager()
        return context
    }

    private func insert(_ entity: String, _ name: String, in context: NSManagedObjectContext) -> NSManagedObject {
        let object = NSEntityDescription.insertNewObject(forEntityName: entity, into: context)
        object.setValue(name, forKey: entity == "Team" ? "title" : "name")
        return object
    }

    private func names(_ value: Any?) -> Set<String> {
        Set(((value as? Set<NSManagedObject>) ?? []).compactMap { $0.value(forKey: "name") as? String })
    }

    @Test func undoAndRedoAnInsert() throws {
        let context = try make()
        let acme = insert("Company", "Acme", in: context)
        context.processPendingChanges()
        #expect(context.insertedObjects == [acme])
        context.undo()
        #expect(!context.hasChanges)
        #expect(context.insertedObjects.isEmpty)
        #expect(acme.managedObjectContext == nil)
        #expect(context.registeredObject(for: acme.objectID) == nil)
        context.redo()
        #expect(context.insertedObjects == [acme])
        #expect(acme.managedObjectContext === context)
        #expect(acme.value(forKey: "name") as? String == "Acme")
        try context.save()
        #expect(try context.count(for: NSFetchRequest<NSManagedObject>(entityName: "Company")) == 1)
    }

    @Test func undoAndRedoAnAttributeChange() throws {
        let context = try make()
        let acme = insert("Company", "Acme", in: context)
        try context.save()
        acme.setValue("Acme Corp", forKey: "name")
        context.processPendingChanges()
        #expect(context.updatedObjects == [acme])
        context.undo()
        #expect(acme.value(forKey: "name") as? String == "Acme")
        #expect(!context.hasChanges && !acme.isUpdated)
        context.redo()
        #expect(acme.value(forKey: "name") as? String == "Acme Corp")
        #expect(context.updatedObjects == [acme])
        // Undo the insert too, across the save: the saved object is now deleted.
        context.undo()
        context.undo()
        #expect(context.deletedObjects == [acme])
        try context.save()
        #expect(try context.count(for: NSFetchRequest<NSManagedObject>(entityName: "Company")) == 0)
    }

    @Test func undoAndRedoADeleteWithCascade() throws {
        let context = try make()
        let acme = insert("Company", "Acme", in: context)
        let sales = insert("Department", "Sales", in: context)
        let labs = insert("Department", "Labs", in: context)
        sales.setValue(acme, forKey: "company")
        labs.setValue(acme, forKey: "company")
        let ann = insert("Employee", "Ann", in: context)
        ann.setValue(sales, forKey: "department")
        try context.save()

        context.delete(acme)
        context.processPendingChanges()
        #expect(context.deletedObjects == [acme, sales, labs])
        #expect(ann.value(forKey: "department") == nil, "Nullify emptied the employee's side")
        context.undo()
        #expect(!context.hasChanges)
        #expect(context.deletedObjects.isEmpty && context.updatedObjects.isEmpty)
        #expect(names(acme.value(forKey: "departments")) == ["Sales", "Labs"])
        #expect(sales.value(forKey: "company") as? NSManagedObject === acme)
        #expect(ann.value(forKey: "department") as? NSManagedObject === sales)
        #expect(names(sales.value(forKey: "employees")) == ["Ann"])
        context.redo()
        #expect(context.deletedObjects == [acme, sales, labs])
        #expect(context.updatedObjects == [ann])
        #expect(ann.value(forKey: "department") == nil)
        try context.save()
        #expect(try context.count(for: NSFetchRequest<NSManagedObject>(entityName: "Department")) == 0)
        #expect(try context.count(for: NSFetchRequest<NSManagedObject>(entityName: "Employee")) == 1)
    }

    @Test(arguments: [NSInMemoryStoreType, NSSQLiteStoreType])
    func undoingASavedDeleteInsertsTheObjectAgain(storeType: String) throws {
        let (coordinator, url) = try TestSupport.coordinator(TestSupport.makeCompanyModel(), type: storeType)
        defer { if let url { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) } }
        let context = TestSupport.context(coordinator)
        context.undoManager = UndoManager()
        let acme = insert("Company", "Acme", in: context)
        try context.save()
        context.delete(acme)
        try context.save()
        #expect(try context.count(for: NSFetchRequest<NSManagedObject>(entityName: "Company")) == 0)
        context.undo()
        #expect(context.insertedObjects == [acme])
        #expect(acme.value(forKey: "name") as? String == "Acme")
        try context.save()
        let fetched = try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Company"))
        #expect(fetched.map { $0.value(forKey: "name") as? String } == ["Acme"])
    }

    @Test func undoAndRedoARelationshipChangeWithItsInverses() throws {
        let context = try make()
        let sales = insert("Department", "Sales", in: context)
        let labs = insert("Department", "Labs", in: context)
        let ann = insert("Employee", "Ann", in: context)
        ann.setValue(sales, forKey: "department")
        try context.save()

        ann.setValue(labs, forKey: "department")
        context.processPendingChanges()
        #expect(context.updatedObjects == [ann, sales, labs])
        context.undo()
        #expect(!context.hasChanges)
        #expect(ann.value(forKey: "department") as? NSManagedObject === sales)
        #expect(names(sales.value(forKey: "employees")) == ["Ann"])
        #expect(names(labs.value(forKey: "employees")).isEmpty)
        context.redo()
        #expect(context.updatedObjects == [ann, sales, labs])
        #expect(ann.value(forKey: "department") as? NSManagedObject === labs)
        #expect(names(sales.value(forKey: "employees")).isEmpty)
        #expect(names(labs.value(forKey: "employees")) == ["Ann"])
        try context.save()
        context.reset()
        let fetched = try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Employee"))
        #expect((fetched.first?.value(forKey: "department") as? NSManagedObject)?.value(forKey: "name") as? String == "Labs")
    }

    @Test func undoingAnInsertTakesItOutOfRelationshipsAndOrderedSets() throws {
        let context = try make()
        let sales = insert("Department", "Sales", in: context)
        let alpha = insert("Team", "Alpha", in: context)
        alpha.setValue(sales, forKey: "department")
        try context.save()

        let ann = insert("Employee", "Ann", in: context)
        ann.setValue(sales, forKey: "department")
        let beta = insert("Team", "Beta", in: context)
        sales.mutableOrderedSetValue(forKey: "teams").insert(beta, at: 0)
        final class Seen: @unchecked Sendable { var deleted: Set<NSManagedObject> = [] }
        let seen = Seen()
        let observer = NotificationCenter.default.addObserver(forName: .NSManagedObjectContextObjectsDidChange, object: context, queue: nil) { note in
            seen.deleted.formUnion(note.userInfo?[NSDeletedObjectsKey] as? Set<NSManagedObject> ?? [])
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        context.undo()
        #expect(!context.hasChanges)
        #expect(names(sales.value(forKey: "employees")).isEmpty)
        #expect((sales.value(forKey: "teams") as? NSOrderedSet)?.array as? [NSManagedObject] == [alpha])
        #expect(seen.deleted == [ann, beta], "observers hear that the inserted objects went away")
        context.redo()
        #expect(context.insertedObjects == [ann, beta])
        #expect(context.updatedObjects == [sales])
        #expect((sales.value(forKey: "teams") as? NSOrderedSet)?.array as? [NSManagedObject] == [beta, alpha])
        #expect(beta.value(forKey: "department") as? NSManagedObject === sales)
    }

    @Test func eachEventIsOneStepAndRollbackClearsTheStack() throws {
        let context = try make()
        let acme = insert("Company", "Acme", in: context)
        context.processPendingChanges()
        acme.setValue("B", forKey: "name")
        acme.setValue("C", forKey: "name")
        context.processPendingChanges()
        context.undo()
        #expect(acme.value(forKey: "name") as? String == "Acme")
        #expect(context.insertedObjects == [acme])
        #expect(context.undoManager?.canUndo == true)
        context.rollback()
        #expect(context.undoManager?.canUndo == false)
        #expect(context.undoManager?.canRedo == false)
    }

    @Test func childSavesAreNotPartOfTheParentsUndo() throws {
        let parent = try make()
        let acme = insert("Company", "Acme", in: parent)
        parent.processPendingChanges()
        let child = NSManagedObjectContext(concurrencyType: .mainQueueConcurrencyType)
        child.parent = parent
        let childAcme = child.object(with: acme.objectID)
        childAcme.setValue("Acme Corp", forKey: "name")
        _ = insert("Company", "Globex", in: child)
        try child.save()
        #expect(parent.insertedObjects.count == 2)
        parent.undo()
        #expect(parent.insertedObjects.count == 1, "undo reversed the parent's own insert only")
        #expect(acme.managedObjectContext == nil)
        #expect(parent.undoManager?.canUndo == false)
    }

    @Test func disabledRegistrationRecordsNothing() throws {
        let context = try make()
        context.undoManager?.disableUndoRegistration()
        _ = insert("Company", "Acme", in: context)
        context.processPendingChanges()
        context.undoManager?.enableUndoRegistration()
        #expect(context.undoManager?.canUndo == false)
        context.undo()
        #expect(context.insertedObjects.count == 1)
    }
}
