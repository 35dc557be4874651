import Foundation
@testable import OpenCoreDataCore
import OpenCoreData
import Testing

/// The shortcuts of the object graph's hot paths give the same answers as the general code:
/// bulk word writes, the all-words validation pass, per-context blocks of temporary IDs, identity
/// equality without a dynamic cast, and a save's records grouped by store with the last answer kept.
@Suite struct ObjectGraphFastPathTests {
    private static func numbersModel(optional: Bool = true) -> (NSManagedObjectModel, NSEntityDescription) {
        let attributes = (0..<3).map { index in
            let attribute = NSAttributeDescription(name: "n\(index)", type: .integer64AttributeType)
            attribute.isOptional = optional
            return attribute
        }
        let entity = NSEntityDescription(name: "Numbers", properties: attributes)
        let model = NSManagedObjectModel()
        model.entities = [entity]
        return (model, entity)
    }

    private static func context(_ model: NSManagedObjectModel, type: String = NSInMemoryStoreType, at url: URL? = nil) throws -> NSManagedObjectContext {
        TestSupport.context(try TestSupport.coordinator(model, type: type, url: url).0)
    }

    /// The code of the error a save throws, nil when it succeeds (a number, so a failed
    /// expectation prints no object graph).
    private static func saveErrorCode(_ context: NSManagedObjectContext) -> Int? {
        do {
            try context.save()
            return nil
        } catch {
            return (error as NSError).code
        }
    }

    @Test func wordWriterSetsWordsAndReplacesOverflowValues() {
        let layout = SlotLayout(kinds: [.int64, .double, .cell])
        var values = SlotValues(layout: layout)
        values[0] = "kept in the overflow"
        let shared = values
        values.writeRow { writer in
            writer.set(UInt64(bitPattern: -5), at: 0)
            writer.set((2.5).bitPattern, at: 1)
        }
        #expect(values[0] as? Int64 == -5, "a word written over an overflow value replaces it")
        #expect(values[1] as? Double == 2.5)
        #expect(values.word(at: 0) == UInt64(bitPattern: -5))
        #expect(shared[0] as? String == "kept in the overflow", "writing words copies shared storage first")
        #expect(shared[1] == nil)
    }

    @Test func onlyWordsMeansEverySlotHoldsAWord() {
        var values = SlotValues(layout: SlotLayout(kinds: [.int64, .bool]))
        #expect(!values.holdsOnlyWords, "nil slots")
        values[0] = Int64(1)
        #expect(!values.holdsOnlyWords, "one slot still nil")
        values[1] = true
        #expect(values.holdsOnlyWords)
        values[1] = "not a Bool"
        #expect(!values.holdsOnlyWords, "a value in the overflow")
        var withCell = SlotValues(layout: SlotLayout(kinds: [.int64, .cell]))
        withCell[0] = Int64(1)
        withCell[1] = "x"
        #expect(!withCell.holdsOnlyWords, "a layout with cells never qualifies")
    }

    @Test func validationStillRejectsMissingAndMistypedValues() throws {
        let (model, entity) = Self.numbersModel(optional: false)
        let context = try Self.context(model)
        let complete = NSManagedObject(entity: entity, insertInto: context)
        for key in ["n0", "n1", "n2"] { complete.setValue(Int64(1), forKey: key) }
        try context.save()

        let missing = NSManagedObject(entity: entity, insertInto: context)
        missing.setValue(Int64(1), forKey: "n0")
        missing.setValue(Int64(2), forKey: "n1")
        missing.setValue(nil, forKey: "n2")
        #expect(Self.saveErrorCode(context) == NSValidationMissingMandatoryPropertyError)
        missing.setValue(Int64(3), forKey: "n2")
        missing.setValue("three", forKey: "n1")
        #expect(Self.saveErrorCode(context) == NSManagedObjectValidationError)
        missing.setValue(Int64(3), forKey: "n1")
        try context.save()
        #expect(!context.hasChanges)
    }

    @Test func temporaryIDsAreUniqueAcrossContextsAndBecomePermanent() throws {
        let (model, entity) = Self.numbersModel()
        let first = try Self.context(model)
        let second = try Self.context(model)
        let objects = (0..<1500).map { index in
            NSManagedObject(entity: entity, insertInto: index % 2 == 0 ? first : second)
        }
        let temporary = objects.map(\.objectID)
        #expect(temporary.allSatisfy { $0.isTemporaryID })
        #expect(Set(temporary).count == objects.count, "no two new objects share a temporary ID")
        #expect(Set(temporary.map { $0.uriRepresentation() }).count == objects.count)
        for (object, id) in zip(objects, temporary) {
            #expect(object.objectID === id, "the ID stays the same object until the save")
            #expect(object.managedObjectContext?.registeredObject(for: id) === object)
        }
        try first.save()
        try second.save()
        for (object, id) in zip(objects, temporary) {
            let context = object.managedObjectContext!
            #expect(!object.objectID.isTemporaryID)
            #expect(context.registeredObject(for: object.objectID) === object)
            #expect(context.object(with: object.objectID) === object)
            #expect(context.registeredObject(for: id) == nil, "the temporary ID is retired")
        }
        // A child context's new objects get temporary IDs too, and permanent ones once saved up.
        let child = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        child.parent = first
        let childIDs = try child.performAndWait {
            let made = (0..<3).map { _ in NSManagedObject(entity: entity, insertInto: child) }
            #expect(Set(made.map(\.objectID)).count == 3)
            #expect(made.allSatisfy { $0.objectID.isTemporaryID })
            try child.save()
            return made.map(\.objectID)
        }
        for id in childIDs { #expect(first.registeredObject(for: id) != nil) }
        try first.save()
        #expect(first.insertedObjects.isEmpty)
    }

    @Test func objectEqualityIsIdentityWhateverWrapsTheObject() throws {
        let (model, entity) = Self.numbersModel()
        let context = try Self.context(model)
        let object = NSManagedObject(entity: entity, insertInto: context)
        let other = NSManagedObject(entity: entity, insertInto: context)
        #expect(object.isEqual(object))
        #expect(object.isEqual(object as NSObject))
        #expect(object.isEqual(AnyHashable(object)), "an object inside AnyHashable is still the object")
        #expect(object.isEqual(Optional(object) as Any))
        #expect(!object.isEqual(other))
        #expect(!object.isEqual(nil))
        #expect(!object.isEqual("text"))
        let address = Int(bitPattern: Unmanaged.passUnretained(object).toOpaque())
        #expect(!object.isEqual(address), "an integer equal to the object's address is not the object")
        #expect(Set([object, other, object]).count == 2)
    }

    @Test func objectIDEqualityComparesIdentityKeysAcrossInstances() throws {
        let (model, entity) = Self.numbersModel()
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let context = try Self.context(model, type: NSSQLiteStoreType, at: directory.appendingPathComponent("ids.sqlite"))
        let object = NSManagedObject(entity: entity, insertInto: context)
        let other = NSManagedObject(entity: entity, insertInto: context)
        try context.save()
        let id = object.objectID
        let coordinator = context.persistentStoreCoordinator!
        let copy = try #require(coordinator.managedObjectID(forURIRepresentation: id.uriRepresentation()))
        #expect(copy !== id, "a second instance for the same object")
        #expect(id.isEqual(copy))
        #expect(copy.isEqual(id))
        #expect(id.isEqual(AnyHashable(copy)))
        #expect(!id.isEqual(other.objectID))
        #expect(!id.isEqual(object), "an object is not its ID")
        #expect(!id.isEqual(nil))
        #expect(Set([id, copy, other.objectID]).count == 2)
        // Fetching, object(with:) and registeredObject(for:) find the one registered object by either instance.
        #expect(context.registeredObject(for: copy) === object)
        #expect(context.object(with: copy) === object)
        let fetched = try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Numbers"))
        #expect(fetched.contains { $0 === object })
        #expect(fetched.count == 2)
    }

    /// Objects fetched with their values from the SQLite store make their ID on first use: the
    /// same ID (and instance, whichever thread asks first) as one made at fetch time would be,
    /// after the store has left the coordinator too.
    @Test func objectsFetchedWithTheirValuesMakeTheirIDOnFirstUse() throws {
        let (model, entity) = Self.numbersModel()
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let writer = try Self.context(model, type: NSSQLiteStoreType, at: directory.appendingPathComponent("lazy.sqlite"))
        for index in 0..<200 { NSManagedObject(entity: entity, insertInto: writer).setValue(Int64(index), forKey: "n0") }
        try writer.save()
        let coordinator = try #require(writer.persistentStoreCoordinator)
        let store = try #require(coordinator.persistentStores.first)
        let storeIdentifier = try #require(store.identifier)
        let idRequest = NSFetchRequest<NSManagedObjectID>(entityName: "Numbers")
        idRequest.resultType = .managedObjectIDResultType
        idRequest.sortDescriptors = [NSSortDescriptor(key: "n0", ascending: true)]
        let ids = try writer.fetch(idRequest)

        let reader = TestSupport.context(coordinator)
        let request = NSFetchRequest<NSManagedObject>(entityName: "Numbers")
        request.sortDescriptors = [NSSortDescriptor(key: "n0", ascending: true)]
        let objects = try reader.fetch(request)
        #expect(objects.allSatisfy { $0.storedObjectID == nil }, "no ID object made by the fetch")
        #expect(MemoryLayout<FetchedRow>.stride <= 56, "a fetch holds one per row at once (in chunks freed as their objects are made)")
        #expect(objects.allSatisfy { reader.registeredObject(for: ids[Int($0.value(forKey: "n0") as! Int64)]) === $0 },
                "registered under their row's key")
        #expect(objects.allSatisfy { $0.storedObjectID == nil }, "looking them up by ID made none")

        // The first reads of an ID race from several threads: all get one instance.
        let firstHalf = Array(objects.prefix(100))
        let shared = UncheckedSendable(firstHalf)
        let seen = LockedValue<[Int: Set<ObjectIdentifier>]>([:])
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for (index, object) in shared.value.enumerated() {
                let id = ObjectIdentifier(object.objectID)
                seen.withLock { _ = $0[index, default: []].insert(id) }
            }
        }
        #expect(seen.withLock { $0.values.allSatisfy { $0.count == 1 } })
        for (index, object) in firstHalf.enumerated() {
            #expect(object.objectID == ids[index] && !object.objectID.isTemporaryID)
            #expect(object.objectID.uriRepresentation() == ids[index].uriRepresentation())
            #expect(object.objectID.persistentStore === store)
            #expect(reader.object(with: object.objectID) === object)
        }

        // An ID first asked for after the store is gone still names it.
        try coordinator.remove(store)
        let late = objects[150]
        #expect(late.storedObjectID == nil)
        #expect(late.objectID == ids[150])
        #expect(late.objectID.uriRepresentation().host == storeIdentifier)
    }

    /// A row whose store number the object can't keep beside its primary key gets its ID when
    /// its object is made; any other row's object makes the same ID on first use.
    @Test func aRowOfAStoreNumberedTooHighGetsItsIDAtFetch() throws {
        let (model, entity) = Self.numbersModel()
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let context = try Self.context(model, type: NSSQLiteStoreType, at: directory.appendingPathComponent("numbers.sqlite"))
        let store = try #require(context.persistentStoreCoordinator?.persistentStores.first)
        let ids = store.objectIDFactory
        let batch = SlotRowBatch.make(layout: entity.slotLayout, capacity: 2)
        let rows = (1...2).map { primaryKey in
            FetchedRow(entity, primaryKey: Int64(primaryKey), of: ids, row: batch.appendRow { _ in }, of: batch, version: 1)
        }
        let kept = NSManagedObject.makeFetched(rows[0], context: context)
        #expect(kept.storedObjectID == nil)
        #expect(kept.objectID == ids.objectID(for: entity, primaryKey: 1))
        let tooHigh = NSManagedObject.makeFetched(rows[1], context: context, storeNumberLimit: Int32(ids.storeNumber) - 1)
        #expect(tooHigh.storedObjectID == ids.objectID(for: entity, primaryKey: 2))
        #expect(tooHigh.objectKey == ids.key(for: entity, primaryKey: 2))
    }

    /// An object's fields fit the allocator's 128-byte block (120 usable bytes with glibc): a fetch
    /// of many objects pays 16 bytes an object more at the next size.
    @Test func objectsTakeTheSmallestBlock() throws {
        #if os(Linux)
        let (_, entity) = Self.numbersModel()
        let object = NSManagedObject(entity: entity, insertInto: nil)
        #expect(try #require(TestSupport.allocatedSize(of: object)) <= 120)
        #endif
    }

    /// `Numbers(context:)` keeps the entity it found in the context, for the class's next insert,
    /// and finds it again in a context of another model.
    @Test func insertingBySubclassKeepsTheEntityForTheNextInsert() throws {
        let (model, entity) = Self.numbersModel()
        entity.managedObjectClassName = "CachedNumbers"
        let context = try Self.context(model)
        let first = CachedNumbers(context: context)
        #expect(first.entity === entity)
        #expect(context.lastEntityByClass?.type == ObjectIdentifier(CachedNumbers.self))
        #expect(context.lastEntityByClass?.entity === entity)
        #expect(CachedNumbers(context: context).entity === entity)

        let (otherModel, otherEntity) = Self.numbersModel()
        otherEntity.managedObjectClassName = "CachedNumbers"
        let other = try Self.context(otherModel)
        #expect(CachedNumbers(context: other).entity === otherEntity)
        #expect(CachedNumbers(context: context).entity === entity)
    }

    /// The rows of a fetch come back in order across chunks and fetches, and are gone once consumed.
    @Test func fetchedRowsKeepTheirOrderAcrossChunks() {
        let (_, entity) = Self.numbersModel()
        let factory = ObjectIDFactory(storeIdentifier: "rows", storeNumber: 1)
        func rows(_ keys: ClosedRange<Int>) -> FetchedRows {
            var rows = FetchedRows()
            for key in keys { rows.append(FetchedRow(factory.objectID(for: entity, primaryKey: Int64(key)), nil)) }
            return rows
        }
        let chunk = FetchedRows.chunkCapacity
        var all = rows(1...(2 * chunk + 5))
        all.append(contentsOf: FetchedRows())
        all.append(contentsOf: rows((2 * chunk + 6)...(3 * chunk)))
        all.append(contentsOf: FetchedRows((3 * chunk + 1...3 * chunk + 3).map { FetchedRow(factory.objectID(for: entity, primaryKey: Int64($0)), nil) }))
        #expect(all.count == 3 * chunk + 3)
        #expect(all.first?.primaryKey == 1 && all.last?.primaryKey == Int64(3 * chunk + 3))
        var seen: [Int64] = []
        all.consume { seen.append($0.pointee.primaryKey) }
        #expect(seen == (1...(3 * chunk + 3)).map(Int64.init))
        #expect(all.isEmpty && all.first == nil)
    }

    @Test func aSaveSpanningTwoStoresSendsEachRecordToItsStore() throws {
        let model = TestSupport.makeCompanyModel()
        let entities = model.entitiesByName
        model.setEntities([entities["Company"]!], forConfigurationName: "LeftStore")
        model.setEntities([entities["Project"]!], forConfigurationName: "RightStore")
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let left = try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: "LeftStore", at: directory.appendingPathComponent("left.sqlite"), options: nil)
        let right = try coordinator.addPersistentStore(ofType: NSInMemoryStoreType, configurationName: "RightStore", at: nil, options: nil)
        let context = TestSupport.context(coordinator)
        // Alternating entities, so the kept answer changes with every record.
        let objects = (0..<20).map { index in
            let object = NSEntityDescription.insertNewObject(forEntityName: index % 2 == 0 ? "Company" : "Project", into: context)
            object.setValue("\(index)", forKey: index % 2 == 0 ? "name" : "title")
            return object
        }
        try context.save()
        let storesRight = objects.enumerated().allSatisfy { index, object in object.objectID.persistentStore === (index % 2 == 0 ? left : right) }
        #expect(storesRight)
        for (index, object) in objects.enumerated() {
            let key = index % 2 == 0 ? "name" : "title"
            if index % 3 == 0 {
                context.delete(object)
            } else {
                object.setValue("\(index * 10)", forKey: key)
            }
        }
        try context.save()
        let reader = TestSupport.context(coordinator)
        let leftValues = try reader.fetch(NSFetchRequest<NSManagedObject>(entityName: "Company")).compactMap { $0.value(forKey: "name") as? String }
        let rightValues = try reader.fetch(NSFetchRequest<NSManagedObject>(entityName: "Project")).compactMap { $0.value(forKey: "title") as? String }
        let leftSorted = leftValues.compactMap { Int($0) }.sorted()
        let rightSorted = rightValues.compactMap { Int($0) }.sorted()
        #expect(leftSorted == [20, 40, 80, 100, 140, 160])
        #expect(rightSorted == [10, 50, 70, 110, 130, 170, 190])
    }

    @Test func hashMapReplacesTheValueOfAKeyAlreadyPresent() {
        var map = FastHashMap<ObjectIdentifier, String>()
        let keys = (0..<100).map { _ in NSObject() }
        for key in keys { map[ObjectIdentifier(key)] = "first" }
        for key in keys.prefix(50) { map[ObjectIdentifier(key)] = "second" }
        #expect(map.count == 100)
        #expect(keys.prefix(50).allSatisfy { map[ObjectIdentifier($0)] == "second" })
        #expect(keys.suffix(50).allSatisfy { map[ObjectIdentifier($0)] == "first" })
    }

    /// A value held only by the map (its key is another object's identity).
    private final class Box {
        let number: Int
        init(_ number: Int) { self.number = number }
    }

    @Test func hashMapKeepsEveryValueAliveThroughGrowthAndReleasesThemWithIt() {
        let keys = (0..<5_000).map { _ in NSObject() }
        var watchers: [Weak<Box>] = []
        do {
            var map = FastHashMap<ObjectIdentifier, Box>()
            // Growing from empty moves the entries many times; the map alone holds the boxes.
            for (number, key) in keys.enumerated() {
                let box = Box(number)
                watchers.append(Weak(box))
                map[ObjectIdentifier(key)] = box
            }
            #expect(map.count == keys.count)
            #expect(keys.enumerated().allSatisfy { map[ObjectIdentifier($0.element)]?.number == $0.offset })
            #expect(watchers.allSatisfy { $0.value != nil })
        }
        #expect(watchers.allSatisfy { $0.value == nil })
    }

    @Test func aSaveCommitsRelationshipsToObjectsInsertedLaterWithTheirPermanentIDs() throws {
        // The employee is inserted before its department, the department before its company: each
        // one's committed values must name its destination by the permanent ID it got in the same save.
        let (coordinator, _) = try TestSupport.coordinator(TestSupport.makeCompanyModel())
        let context = TestSupport.context(coordinator)
        let employee = NSEntityDescription.insertNewObject(forEntityName: "Employee", into: context)
        employee.setValue("Ada", forKey: "name")
        let department = NSEntityDescription.insertNewObject(forEntityName: "Department", into: context)
        department.setValue("Engines", forKey: "name")
        let company = NSEntityDescription.insertNewObject(forEntityName: "Company", into: context)
        company.setValue("Analytical", forKey: "name")
        employee.setValue(department, forKey: "department")
        department.setValue(company, forKey: "company")
        try context.save()
        for (object, key, destination) in [(employee, "department", department), (department, "company", company)] {
            let slot = try #require(object.entity.fastSlot(forKey: key))
            let committed = try #require(object.committedValues?[slot] as? NSManagedObjectID)
            #expect(!committed.isTemporaryID)
            #expect(committed == destination.objectID)
        }
        #expect(employee.changedValues().isEmpty && department.changedValues().isEmpty && !context.hasChanges)
    }

    @Test func hashMapFindsRunsOfKeysAndKeysSharingTheirLowBitsAfterRemovals() {
        // Runs of primary keys of two origins fill neighbouring buckets; multiples of 16 all share
        // their low bits. Removing every third key shifts entries back along the probe runs.
        let roots = [NSObject(), NSObject()]
        var keys: [ObjectKey] = []
        for root in roots {
            keys += (1...6_000).map { ObjectKey(primaryKey: Int64($0), root: ObjectIdentifier(root), store: 1) }
            keys += (1...2_000).map { ObjectKey(primaryKey: Int64($0) * 16 + 1_000_000, root: ObjectIdentifier(root), store: 2) }
        }
        var map = FastHashMap<ObjectKey, Int>()
        for (index, key) in keys.enumerated() { map[key] = index }
        #expect(map.count == keys.count)
        for (index, key) in keys.enumerated() where index % 3 == 0 { #expect(map.removeValue(forKey: key) == index) }
        #expect(map.count == keys.count - (keys.count + 2) / 3)
        #expect(keys.enumerated().allSatisfy { map[$0.element] == ($0.offset % 3 == 0 ? nil : $0.offset) })
    }

    @Test func hashMapGivesUpItsValuesInAddressOrder() {
        let keys = (0..<2_000).map { _ in NSObject() }
        var map = FastHashMap<ObjectIdentifier, Box>()
        var watchers: [Weak<Box>] = []
        for (number, key) in keys.enumerated() {
            let box = Box(number)
            watchers.append(Weak(box))
            map[ObjectIdentifier(key)] = box
        }
        do {
            var values = map.removeAllValues()
            values.sortByAddress()
            #expect(map.isEmpty && map[ObjectIdentifier(keys[0])] == nil)
            #expect(values.map(\.number).sorted() == Array(0..<keys.count))
            #expect(zip(values, values.dropFirst()).allSatisfy { ObjectIdentifier($0) < ObjectIdentifier($1) })
            #expect(watchers.allSatisfy { $0.value != nil })
        }
        #expect(watchers.allSatisfy { $0.value == nil })
        // The emptied map works as a new one.
        map[ObjectIdentifier(keys[1])] = Box(7)
        #expect(map.count == 1 && map[ObjectIdentifier(keys[1])]?.number == 7)
    }

    @Test func sortingByAddressReadsOnlyTheReferences() {
        var objects = (0..<1_000).map { _ in NSObject() }.shuffled()
        let members = Set(objects.map(ObjectIdentifier.init))
        objects.sortByAddress()
        #expect(Set(objects.map(ObjectIdentifier.init)) == members)
        #expect(zip(objects, objects.dropFirst()).allSatisfy { ObjectIdentifier($0) < ObjectIdentifier($1) })
    }

    @Test func aContextFreesItsObjectsWhenItGoesAndInvalidatesThemOnReset() throws {
        let (model, entity) = Self.numbersModel()
        let (coordinator, _) = try TestSupport.coordinator(model, type: NSInMemoryStoreType)
        var watchers: [Weak<NSManagedObject>] = []
        do {
            let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
            context.persistentStoreCoordinator = coordinator
            try context.performAndWait {
                for number in 0..<300 {
                    NSManagedObject(entity: entity, insertInto: context).setValue(Int64(number), forKey: "n0")
                }
                try context.save()
                context.reset()
                let fetched = try context.fetch(NSFetchRequest<NSManagedObject>(entityName: entity.name!))
                #expect(fetched.count == 300)
                watchers = fetched.map { Weak($0) }
                context.reset()
                #expect(fetched.allSatisfy { $0.managedObjectContext == nil })
                #expect(context.registeredObjects.isEmpty)
                let again = try context.fetch(NSFetchRequest<NSManagedObject>(entityName: entity.name!))
                #expect(Set(again.map { $0.value(forKey: "n0") as? Int64 }) == Set((0..<300).map { Int64($0) }))
                watchers += again.map { Weak($0) }
            }
        }
        // Neither the reset objects nor those the context held when it went are kept alive.
        #expect(watchers.allSatisfy { $0.value == nil })
    }

    @Test func theRegistryKeepsNewObjectsByTemporaryNumberAcrossBlocks() {
        let (model, entity) = Self.numbersModel()
        model.freeze()
        let other = NSEntityDescription(name: "Other")
        let registry = ObjectRegistry()
        // Three blocks, with a number handed out elsewhere between the second and the third.
        var ids: [NSManagedObjectID] = []
        for index in 0..<Int(ObjectRegistry.blockSize) * 3 {
            if index == Int(ObjectRegistry.blockSize) * 2 { _ = NSManagedObjectID(temporaryFor: entity) }
            ids.append(NSManagedObjectID(temporaryFor: entity, number: registry.nextTemporaryNumber()))
        }
        let objects = ids.map { id in
            let object = NSManagedObject(entity: entity, insertInto: nil)
            object.objectID = id
            return object
        }
        for object in objects { registry[object.objectID.key] = object }
        // A temporary ID numbered elsewhere (another context's) and a permanent one use the map.
        let foreign = NSManagedObject(entity: entity, insertInto: nil)
        registry[foreign.objectID.key] = foreign
        let stored = NSManagedObject(entity: entity, insertInto: nil)
        stored.objectID = NSManagedObjectID(entity: entity, storeIdentifier: "S", storeNumber: 1, primaryKey: 7)
        registry[stored.objectID.key] = stored
        #expect(registry.count == objects.count + 2)
        for (index, object) in objects.enumerated() where index % 97 == 0 || index == objects.count - 1 {
            #expect(registry[object.objectID.key] === object)
        }
        #expect(registry[foreign.objectID.key] === foreign && registry[stored.objectID.key] === stored)
        // The same number under another root entity is another ID.
        let impostor = NSManagedObjectID(temporaryFor: other, number: -objects[5].objectID.key.primaryKey)
        #expect(registry[impostor.key] == nil)
        #expect(Set(registry.values.map(ObjectIdentifier.init)).count == objects.count + 2)
        // Removing every new object forgets the blocks; numbers handed out later still register.
        for object in objects { #expect(registry.removeValue(forKey: object.objectID.key) === object) }
        #expect(registry.count == 2)
        #expect(registry[objects[0].objectID.key] == nil)
        registry[objects[0].objectID.key] = objects[0]
        #expect(registry[objects[0].objectID.key] === objects[0], "a number from a forgotten block goes to the map")
        let later = NSManagedObject(entity: entity, insertInto: nil)
        later.objectID = NSManagedObjectID(temporaryFor: entity, number: registry.nextTemporaryNumber())
        registry[later.objectID.key] = later
        #expect(registry[later.objectID.key] === later && registry.count == 4)
        let all = registry.removeAllValuesInAddressOrder()
        #expect(all.count == 4 && registry.count == 0)
        #expect(all.map(ObjectIdentifier.init) == all.map(ObjectIdentifier.init).sorted())
    }

    /// Permanent keys in runs (consecutive primary keys), in the map, added in and out of order,
    /// over gaps, removed and reserved for: the registry answers as a dictionary would.
    @Test(arguments: [1, 2, 3, 4, 5, 6]) func theRegistryAnswersAsADictionaryWithPermanentKeysInRuns(seed: UInt64) {
        let (model, entity) = Self.numbersModel()
        let other = NSEntityDescription(name: "Other")
        model.entities = [entity, other]
        model.freeze()
        var generator = DifferentialTests.Generator(state: seed)
        let registry = ObjectRegistry()
        var expected: [ObjectKey: NSManagedObject] = [:]
        let origins: [(NSEntityDescription, Int)] = [(entity, 1), (entity, 2), (other, 1)]
        func randomKey() -> ObjectKey {
            let (root, store) = origins[Int.random(in: 0..<origins.count, using: &generator)]
            // Mostly ascending runs with small gaps, sometimes anywhere.
            let primaryKey = Int64.random(in: 1...400, using: &generator)
            return NSManagedObjectID(entity: root, storeIdentifier: "S\(store)", storeNumber: store, primaryKey: primaryKey).key
        }
        var next: [Int: Int64] = [:]
        for step in 0..<3000 {
            let choice = Int.random(in: 0..<100, using: &generator)
            let originIndex = Int.random(in: 0..<origins.count, using: &generator)
            let (root, store) = origins[originIndex]
            var key = randomKey()
            if choice < 55 {
                // The next key of an ascending run, sometimes past a gap.
                let primaryKey = (next[originIndex] ?? Int64.random(in: 1...50, using: &generator)) + (Int.random(in: 0..<10, using: &generator) == 0 ? Int64.random(in: 1...30, using: &generator) : 0)
                next[originIndex] = primaryKey + 1
                key = NSManagedObjectID(entity: root, storeIdentifier: "S\(store)", storeNumber: store, primaryKey: primaryKey).key
            }
            if choice < 70 {
                let object = NSManagedObject(entity: entity, insertInto: nil)
                registry[key] = object
                expected[key] = object
            } else if choice < 80 {
                let made = NSManagedObject(entity: entity, insertInto: nil)
                let (object, registered) = registry.object(forPermanentKey: key) { made }
                #expect(registered == (expected[key] == nil), "step \(step)")
                #expect(object === (expected[key] ?? made), "step \(step)")
                expected[key] = object
            } else if choice < 93 {
                #expect(registry.removeValue(forKey: key) === expected.removeValue(forKey: key), "step \(step)")
            } else if choice < 96 {
                registry[key] = nil
                expected[key] = nil
            } else if choice < 99 {
                let last = ObjectKey(primaryKey: key.primaryKey + Int64.random(in: 0...200, using: &generator), root: key.root, store: key.store)
                registry.reserveCapacity(forPermanentKeysFrom: key, to: last, count: Int(last.primaryKey - key.primaryKey) + 1)
            } else {
                #expect(Set(registry.values.map(ObjectIdentifier.init)) == Set(expected.values.map(ObjectIdentifier.init)), "step \(step)")
            }
            #expect(registry.count == expected.count, "step \(step)")
            let probe = randomKey()
            #expect(registry[probe] === expected[probe], "step \(step)")
        }
        for (key, object) in expected { #expect(registry[key] === object) }
        let all = registry.removeAllValuesInAddressOrder()
        #expect(Set(all.map(ObjectIdentifier.init)) == Set(expected.values.map(ObjectIdentifier.init)) && registry.count == 0)
    }

    /// A saved object's temporary ID object becomes its permanent one in place when nothing else
    /// holds it; a temporary ID someone kept stays temporary and the object gets a new ID, in
    /// both the SQLite and the in-memory store and through `obtainPermanentIDs(for:)`.
    @Test(arguments: [NSSQLiteStoreType, NSInMemoryStoreType]) func savedObjectsKeepTheirIDObjectUnlessSomeoneHoldsTheTemporaryID(type: String) throws {
        let (model, entity) = Self.numbersModel()
        let context = try Self.context(model, type: type)
        let coordinator = try #require(context.persistentStoreCoordinator)
        let unheld = NSManagedObject(entity: entity, insertInto: context)
        let held = NSManagedObject(entity: entity, insertInto: context)
        let early = NSManagedObject(entity: entity, insertInto: context)
        let unheldIdentity = ObjectIdentifier(unheld.objectID)
        let temporary = held.objectID
        let temporaryURI = temporary.uriRepresentation()
        try context.obtainPermanentIDs(for: [early])
        try context.save()

        #expect(ObjectIdentifier(unheld.objectID) == unheldIdentity)
        #expect(!unheld.objectID.isTemporaryID && unheld.objectID.persistentStore != nil)
        #expect(temporary.isTemporaryID && temporary.uriRepresentation() == temporaryURI)
        #expect(!held.objectID.isTemporaryID && held.objectID != temporary && held.objectID !== temporary)
        #expect(!early.objectID.isTemporaryID)
        let keys = Set([unheld, held, early].map(\.objectID))
        #expect(keys.count == 3)
        for object in [unheld, held, early] {
            #expect(context.registeredObject(for: object.objectID) === object)
            #expect(coordinator.managedObjectID(forURIRepresentation: object.objectID.uriRepresentation()) == object.objectID)
        }
        #expect(context.registeredObject(for: temporary) == nil)
    }

    /// A save's permanent IDs by temporary key: numbers in sequence, past gaps, out of order, from
    /// another range, replaced and removed, and merged: the mapping answers as a dictionary would.
    @Test(arguments: [1, 2, 3]) func permanentIDsAnswerAsADictionary(seed: UInt64) {
        let (model, entity) = Self.numbersModel()
        let other = NSEntityDescription(name: "Other")
        model.entities = [entity, other]
        model.freeze()
        var generator = DifferentialTests.Generator(state: seed)
        let base = NSManagedObjectID.reserveTemporaryNumbers(20_000).lowerBound
        func temporaryKey(_ offset: Int64, _ root: NSEntityDescription = entity) -> ObjectKey {
            NSManagedObjectID(temporaryFor: root, number: base + offset).key
        }
        var mapping = PermanentIDs()
        var expected: [ObjectKey: ObjectKey] = [:]
        var next: Int64 = 100
        for step in 0..<4000 {
            let choice = Int.random(in: 0..<100, using: &generator)
            let key: ObjectKey
            switch choice {
            case 0..<60:
                next += Int.random(in: 0..<20, using: &generator) == 0 ? Int64.random(in: 1...6000, using: &generator) : 1
                key = temporaryKey(min(next, 19_999))
            case 60..<80: key = temporaryKey(Int64.random(in: 0...19_999, using: &generator))
            case 80..<85: key = temporaryKey(Int64.random(in: 0...19_999, using: &generator), other)
            default: key = NSManagedObjectID(entity: entity, storeIdentifier: "S", storeNumber: 1, primaryKey: Int64.random(in: 1...50, using: &generator)).key
            }
            if choice % 10 == 9 {
                mapping.removeValue(forKey: key)
                expected[key] = nil
            } else {
                let permanent = ObjectKey(primaryKey: Int64(step + 1), root: key.root, store: 1)
                mapping.assign(permanent, storeIdentifier: "S", to: key)
                expected[key] = permanent
            }
            #expect(mapping.count == expected.count, "step \(step)")
            let probe = Int.random(in: 0..<2, using: &generator) == 0 ? key : temporaryKey(Int64.random(in: 0...19_999, using: &generator))
            #expect(mapping[probe] == expected[probe], "step \(step)")
        }
        for (key, permanent) in expected {
            #expect(mapping[key] == permanent && mapping.storeIdentifier(of: permanent) == "S")
        }
        var merged = PermanentIDs()
        merged.assign(NSManagedObjectID(entity: entity, storeIdentifier: "T", storeNumber: 2, primaryKey: 99_999).key, storeIdentifier: "T", to: temporaryKey(5))
        merged.merge(mapping)
        #expect(merged.count == expected.count + (expected[temporaryKey(5)] == nil ? 1 : 0))
        for (key, permanent) in expected { #expect(merged[key] == permanent && merged.storeIdentifier(of: permanent) == "S") }
        if expected[temporaryKey(5)] == nil, let kept = merged[temporaryKey(5)] { #expect(merged.storeIdentifier(of: kept) == "T") }
    }

    @Test func manyNewObjectsSaveWithOneNotificationSetAndStayFindable() throws {
        let (model, entity) = Self.numbersModel()
        let context = try Self.context(model)
        let objects = (0..<2500).map { index in
            let object = NSManagedObject(entity: entity, insertInto: context)
            object.setValue(Int64(index), forKey: "n0")
            return object
        }
        context.processPendingChanges()
        // One more object after the change notification: the did-save set must still hold it.
        let last = NSManagedObject(entity: entity, insertInto: context)
        let received = ReceivedObjects()
        let observer = NotificationCenter.default.addObserver(forName: .NSManagedObjectContextDidSave, object: context, queue: nil) { note in
            received.inserted = note.userInfo?[NSInsertedObjectsKey] as? Set<NSManagedObject> ?? []
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        try context.save()
        let saved = received.inserted
        #expect(saved.count == objects.count + 1 && saved.contains(last) && saved.contains(objects[0]))
        for object in objects + [last] {
            #expect(!object.objectID.isTemporaryID)
            #expect(context.registeredObject(for: object.objectID) === object)
        }
    }

    @Test func descriptionsForgetAnEntityThatIsGone() {
        let attribute = NSAttributeDescription(name: "n", type: .integer64AttributeType)
        let relationship = NSRelationshipDescription(name: "r", destination: nil)
        let index = NSFetchIndexDescription(name: "byN", elements: [])
        let element = NSFetchIndexElementDescription(property: attribute, collationType: .binary)
        let byElement = NSFetchIndexDescription(name: "byElement", elements: [element])
        #expect(element.indexDescription === byElement)
        withExtendedLifetime(byElement) {}
        do {
            let entity = NSEntityDescription(name: "Gone")
            let child = NSEntityDescription(name: "Child")
            entity.properties = [attribute, relationship]
            entity.indexes = [index]
            entity.subentities = [child]
            relationship.destinationEntity = entity
            #expect(attribute.entity === entity && index.entity === entity)
            #expect(relationship.destinationEntity === entity && child.superentity === entity)
            entity.subentities = []
            #expect(child.superentity == nil)
        }
        #expect(attribute.entity == nil && relationship.entity == nil && index.entity == nil)
        #expect(relationship.destinationEntity == nil)
    }
}

/// A weak reference, to see whether an object is still alive.
private struct Weak<Object: AnyObject> {
    weak var value: Object?
    init(_ value: Object) { self.value = value }
}

/// What a notification observer received (observers run on the posting thread, here the test's).
private final class ReceivedObjects: @unchecked Sendable {
    var inserted: Set<NSManagedObject> = []
}

/// A subclass found by its entity's class name (see `insertingBySubclassKeepsTheEntityForTheNextInsert`).
final class CachedNumbers: NSManagedObject {}
