import Foundation
import OpenCoreData
import Testing

/// The "Intermediate Fetching" tutorial's data: 30 bubble-tea venues. Expected figures are computed
/// from the JSON directly, and each query runs against both the SQLite and the in-memory store.
@Suite struct BubbleTeaTests {
    struct Venue {
        let name: String
        let price: String?
        let specials: Int
        let distance: Double
        let checkins: Int
    }

    static let venues: [Venue] = {
        let url = TestSupport.fixtures.appendingPathComponent("bubbletea/seed.json")
        let json = try! JSONSerialization.jsonObject(with: Data(contentsOf: url)) as! [String: Any]
        let list = (json["response"] as! [String: Any])["venues"] as! [[String: Any]]
        return list.map { venue in
            Venue(
                name: venue["name"] as! String,
                price: (venue["price"] as? [String: Any])?["currency"] as? String,
                specials: (venue["specials"] as? [String: Any])?["count"] as? Int ?? 0,
                distance: ((venue["location"] as? [String: Any])?["distance"] as? NSNumber)?.doubleValue ?? 0,
                checkins: (venue["stats"] as? [String: Any])?["checkinsCount"] as? Int ?? 0
            )
        }
    }()

    /// Imports the venues as the tutorial's importer does.
    static func context(_ storeType: String, url: URL? = nil) throws -> NSManagedObjectContext {
        let (coordinator, _) = try TestSupport.coordinator(try TestSupport.model("bubbletea", "BubbleTeaFinder"), type: storeType, url: url)
        let context = TestSupport.context(coordinator)
        for venue in venues {
            let object = NSEntityDescription.insertNewObject(forEntityName: "Venue", into: context)
            object.setValue(venue.name, forKey: "name")
            object.setValue(venue.specials, forKey: "specialCount")
            let price = NSEntityDescription.insertNewObject(forEntityName: "PriceInfo", into: context)
            price.setValue(venue.price, forKey: "priceCategory")
            object.setValue(price, forKey: "priceInfo")
            let location = NSEntityDescription.insertNewObject(forEntityName: "Location", into: context)
            location.setValue(Float(venue.distance), forKey: "distance")
            object.setValue(location, forKey: "location")
            let stats = NSEntityDescription.insertNewObject(forEntityName: "Stats", into: context)
            stats.setValue(venue.checkins, forKey: "checkinsCount")
            object.setValue(stats, forKey: "stats")
        }
        try context.save()
        return TestSupport.context(coordinator)
    }

    static let storeTypes = [NSSQLiteStoreType, NSInMemoryStoreType]

    @Test(arguments: storeTypes)
    func countsByPriceCategory(storeType: String) throws {
        let context = try Self.context(storeType)
        for category in ["$", "$$", "$$$"] {
            let request = NSFetchRequest<NSNumber>(entityName: "Venue")
            request.resultType = .countResultType
            request.predicate = NSPredicate(format: "%K == %@", "priceInfo.priceCategory", category)
            let count = try context.fetch(request).first!.intValue
            #expect(count == Self.venues.filter { $0.price == category }.count, "\(category)")
        }
    }

    @Test(arguments: storeTypes)
    func sumOfDealsWithAnExpressionDescription(storeType: String) throws {
        let context = try Self.context(storeType)
        let request = NSFetchRequest<NSDictionary>(entityName: "Venue")
        request.resultType = .dictionaryResultType
        let sum = NSExpressionDescription()
        sum.name = "sumDeals"
        sum.expression = NSExpression(forFunction: "sum:", arguments: [NSExpression(forKeyPath: "specialCount")])
        sum.expressionResultType = .integer32AttributeType
        request.propertiesToFetch = [sum]
        let result = try #require(try context.fetch(request).first)
        #expect(result["sumDeals"] as? Int32 == Int32(Self.venues.reduce(0) { $0 + $1.specials }))
    }

    @Test(arguments: storeTypes)
    func groupedAggregates(storeType: String) throws {
        let context = try Self.context(storeType)
        let request = NSFetchRequest<NSDictionary>(entityName: "Venue")
        request.resultType = .dictionaryResultType
        let count = NSExpressionDescription()
        count.name = "venues"
        count.expression = NSExpression(forFunction: "count:", arguments: [NSExpression(forKeyPath: "name")])
        count.expressionResultType = .integer64AttributeType
        let maxCheckins = NSExpressionDescription()
        maxCheckins.name = "mostCheckins"
        maxCheckins.expression = NSExpression(forFunction: "max:", arguments: [NSExpression(forKeyPath: "stats.checkinsCount")])
        maxCheckins.expressionResultType = .integer32AttributeType
        request.propertiesToFetch = ["priceInfo.priceCategory", count, maxCheckins]
        request.propertiesToGroupBy = ["priceInfo.priceCategory"]
        request.havingPredicate = NSPredicate(format: "venues > 1")
        request.sortDescriptors = [NSSortDescriptor(key: "priceInfo.priceCategory", ascending: true)]
        let rows = try context.fetch(request)
        let groups = Dictionary(grouping: Self.venues.filter { $0.price != nil }, by: { $0.price! }).filter { $0.value.count > 1 }
        #expect(rows.count == groups.count)
        for row in rows {
            let category = try #require(row["priceInfo.priceCategory"] as? String)
            let expected = try #require(groups[category])
            #expect(row["venues"] as? Int64 == Int64(expected.count), "\(category) count")
            #expect(row["mostCheckins"] as? Int32 == Int32(expected.map(\.checkins).max()!), "\(category) max")
        }
        #expect(rows.compactMap { $0["priceInfo.priceCategory"] as? String } == groups.keys.sorted())
    }

    @Test(arguments: storeTypes)
    func filtersAndSorts(storeType: String) throws {
        let context = try Self.context(storeType)
        let request = NSFetchRequest<NSManagedObject>(entityName: "Venue")
        request.predicate = NSPredicate(format: "location.distance < 500")
        request.sortDescriptors = [NSSortDescriptor(key: "location.distance", ascending: true), NSSortDescriptor(key: "name", ascending: true)]
        let names = try context.fetch(request).compactMap { $0.value(forKey: "name") as? String }
        let expected = Self.venues.filter { $0.distance < 500 }.sorted { ($0.distance, $0.name) < ($1.distance, $1.name) }.map(\.name)
        #expect(names == expected)
        let byName = NSFetchRequest<NSManagedObject>(entityName: "Venue")
        byName.sortDescriptors = [NSSortDescriptor(key: "name", ascending: false)]
        byName.fetchLimit = 5
        #expect(try context.fetch(byName).compactMap { $0.value(forKey: "name") as? String } == Array(Self.venues.map(\.name).sorted(by: >).prefix(5)))
        let deals = NSFetchRequest<NSManagedObject>(entityName: "Venue")
        deals.predicate = NSPredicate(format: "specialCount > 0 OR stats.checkinsCount >= %d", 1000)
        #expect(try context.count(for: deals) == Self.venues.filter { $0.specials > 0 || $0.checkins >= 1000 }.count)
        // Comparisons of two constants, as Xcode writes "match everything" (`true == true`).
        for (format, matches) in [("true == true", 30), ("YES == NO", 0), ("1 < 2 AND name != nil", 30), ("2 < 1 OR specialCount > 0", Self.venues.filter { $0.specials > 0 }.count)] {
            let constant = NSFetchRequest<NSManagedObject>(entityName: "Venue")
            constant.predicate = NSPredicate(format: format)
            #expect(try context.count(for: constant) == matches, "\(format)")
        }
    }

    @Test(arguments: storeTypes)
    func batchUpdateDeleteAndInsert(storeType: String) throws {
        try Self.batchRequestsWork(in: try Self.context(storeType))
    }

    /// Batch update (constants, a wrong type), delete (through a to-one key path; the rows that
    /// pointed at deleted ones are cleared) and insert (dictionaries, handlers, many rows) on the
    /// venues of `context(_:url:)`: the same checks for every store type.
    static func batchRequestsWork(in context: NSManagedObjectContext) throws {
        let update = NSBatchUpdateRequest(entityName: "Venue")
        update.propertiesToUpdate = ["favorite": true]
        update.affectedStores = context.persistentStoreCoordinator?.persistentStores
        update.resultType = .updatedObjectsCountResultType
        let updated = try #require(try context.execute(update) as? NSBatchUpdateResult)
        #expect(updated.result as? Int == 30)
        let favorites = NSFetchRequest<NSManagedObject>(entityName: "Venue")
        favorites.predicate = NSPredicate(format: "favorite == YES")
        #expect(try context.count(for: favorites) == 30)

        let wrongType = NSBatchUpdateRequest(entityName: "Venue")
        wrongType.propertiesToUpdate = ["specialCount": "many"]
        #expect(throws: NSError.self) { try context.execute(wrongType) }

        let cheap = NSFetchRequest<NSFetchRequestResult>(entityName: "Venue")
        cheap.predicate = NSPredicate(format: "priceInfo.priceCategory == %@", "$")
        let delete = NSBatchDeleteRequest(fetchRequest: cheap)
        delete.resultType = .resultTypeObjectIDs
        let deleted = try #require(try context.execute(delete) as? NSBatchDeleteResult)
        let deletedIDs = try #require(deleted.result as? [NSManagedObjectID])
        #expect(deletedIDs.count == Self.venues.filter { $0.price == "$" }.count)
        #expect(try context.count(for: NSFetchRequest<NSManagedObject>(entityName: "Venue")) == 30 - deletedIDs.count)
        // The price records that pointed at deleted venues no longer do.
        let orphans = NSFetchRequest<NSManagedObject>(entityName: "PriceInfo")
        orphans.predicate = NSPredicate(format: "venue == nil")
        #expect(try context.count(for: orphans) == deletedIDs.count)
        NSManagedObjectContext.mergeChanges(fromRemoteContextSave: [NSDeletedObjectsKey: deletedIDs], into: [context])

        let insert = NSBatchInsertRequest(entityName: "Venue", objects: [["name": "New Tea", "specialCount": 3], ["name": "Other Tea"]])
        insert.resultType = .objectIDs
        let inserted = try #require(try context.execute(insert) as? NSBatchInsertResult)
        let ids = try #require(inserted.result as? [NSManagedObjectID])
        #expect(ids.count == 2)
        #expect(try context.existingObject(with: ids[0]).value(forKey: "specialCount") as? Int32 == 3)
        let badInsert = NSBatchInsertRequest(entityName: "Venue", objects: [["nope": 1]])
        #expect(throws: NSError.self) { try context.execute(badInsert) }
        var remaining = 3
        let handled = NSBatchInsertRequest(entityName: "Venue", dictionaryHandler: { dictionary in
            if remaining == 0 { return true }
            dictionary["name"] = "Handled \(remaining)"
            remaining -= 1
            return false
        })
        handled.resultType = .count
        #expect((try context.execute(handled) as? NSBatchInsertResult)?.result as? Int == 3)
        var made = 0
        let venueEntity = try #require(context.persistentStoreCoordinator?.managedObjectModel.entitiesByName["Venue"])
        let objects = NSBatchInsertRequest(entity: venueEntity, managedObjectHandler: { object in
            if made == 2 { return true }
            made += 1
            object.setValue("Object \(made)", forKey: "name")
            object.setValue(made * 10, forKey: "specialCount")
            return false
        })
        objects.resultType = .objectIDs
        let objectIDs = try #require((try context.execute(objects) as? NSBatchInsertResult)?.result as? [NSManagedObjectID])
        #expect(objectIDs.count == 2)
        #expect(try context.existingObject(with: objectIDs[1]).value(forKey: "specialCount") as? Int32 == 20)
        // Enough rows that the store writes them many to a statement, with a remainder.
        let bulk = NSBatchInsertRequest(entityName: "Venue", objects: (0..<37).map { ["name": "Bulk \($0)", "specialCount": $0] })
        bulk.resultType = .objectIDs
        let bulkIDs = try #require((try context.execute(bulk) as? NSBatchInsertResult)?.result as? [NSManagedObjectID])
        #expect(bulkIDs.count == 37)
        for (index, id) in bulkIDs.enumerated() {
            let venue = try context.existingObject(with: id)
            #expect(venue.value(forKey: "name") as? String == "Bulk \(index)")
            #expect(venue.value(forKey: "specialCount") as? Int32 == Int32(index))
        }
    }

    @Test func asynchronousFetch() async throws {
        let context = try Self.context(NSSQLiteStoreType)
        let background = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        background.persistentStoreCoordinator = context.persistentStoreCoordinator
        let request = NSFetchRequest<NSManagedObject>(entityName: "Venue")
        request.sortDescriptors = [NSSortDescriptor(key: "name", ascending: true)]
        let names: [String] = try await withCheckedThrowingContinuation { continuation in
            let asynchronous = NSAsynchronousFetchRequest(fetchRequest: request) { result in
                if let error = result.operationError { continuation.resume(throwing: error); return }
                continuation.resume(returning: (result.finalResult ?? []).compactMap { $0.value(forKey: "name") as? String })
            }
            background.perform {
                do {
                    let started = try background.execute(asynchronous)
                    #expect(started is NSAsynchronousFetchResult<NSManagedObject>)
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
        #expect(names == Self.venues.map(\.name).sorted())

        // A cancelled fetch reports NSUserCancelledError and no result.
        let cancelled: Int = await withCheckedContinuation { continuation in
            let asynchronous = NSAsynchronousFetchRequest(fetchRequest: request) { result in
                continuation.resume(returning: (result.operationError as NSError?)?.code ?? 0)
            }
            background.perform {
                let result = try? background.execute(asynchronous) as? NSAsynchronousFetchResult<NSManagedObject>
                result?.cancel()
            }
        }
        #expect(cancelled == NSUserCancelledError)
    }
}
