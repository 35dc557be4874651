import Foundation
import OpenCoreData
import Testing

/// The generated predicates of `DifferentialTests` as the condition of batch requests on the
/// SQLite store, which run as `UPDATE` and `DELETE` statements of their own: a batch update
/// must report the objects a fetch with the same predicate finds, and a batch delete must leave
/// exactly the others.
///
/// `OPENCOREDATA_DIFFERENTIAL_COUNT` raises the number of predicates (default 2,000: a quarter of
/// that for updates, a twentieth for deletes, which each need a new store).
@Suite struct BatchRequestDifferentialTests {
    typealias Generator = DifferentialTests.Generator

    static var count: Int { DifferentialTests.requestCount(default: 2000) }

    /// A context on a new SQLite store holding the generated objects, and its `$GROUPn` variables.
    static func populatedStore() throws -> (NSManagedObjectContext, [String: Any]) {
        let (coordinator, _) = try TestSupport.coordinator(DifferentialTests.model(), type: NSSQLiteStoreType)
        let context = TestSupport.context(coordinator)
        try DifferentialTests.populate(context)
        return (context, try DifferentialTests.groupVariables(context))
    }

    /// The `id`s of the items a fetch with `predicate` finds, or its error.
    static func fetchedIDs(_ context: NSManagedObjectContext, _ predicate: NSPredicate?) -> Result<Set<Int64>, NSError> {
        let request = NSFetchRequest<NSDictionary>(entityName: "Item")
        request.resultType = .dictionaryResultType
        request.propertiesToFetch = ["id"]
        request.predicate = predicate
        do {
            return .success(Set(try context.fetch(request).compactMap { $0["id"] as? Int64 }))
        } catch {
            return .failure(error as NSError)
        }
    }

    @Test func batchUpdatesSelectWhatFetchesSelect() throws {
        let (context, variables) = try Self.populatedStore()
        let (mismatches, nonEmpty) = try Self.compareUpdates(count: Self.count / 4, context, variables)
        #expect(mismatches.isEmpty, "\(mismatches.joined(separator: "\n"))")
        #expect(nonEmpty > Self.count / 16, "the generated predicates select something")
    }

    /// Runs `count` generated predicates as batch updates that change nothing (each item's
    /// `count` set to itself) and as fetches in `context` (in its `performAndWait`): up to 10
    /// descriptions of those whose objects differ, and how many updated something.
    static func compareUpdates(count: Int, _ context: NSManagedObjectContext, _ variables: [String: Any]) throws -> (mismatches: [String], nonEmpty: Int) {
        let all = try context.performAndWait { try Self.fetchedIDs(context, nil).get() }
        var random = Generator(state: 11)
        var mismatches: [String] = []
        var nonEmpty = 0
        for _ in 0..<count {
            let predicate = DifferentialTests.predicate(&random).withSubstitutionVariables(variables)
            let update = NSBatchUpdateRequest(entityName: "Item")
            update.predicate = predicate
            update.propertiesToUpdate = ["count": NSExpression(forKeyPath: "count")]
            update.resultType = .updatedObjectIDsResultType
            let (expected, updated) = context.performAndWait { () -> (Result<Set<Int64>, NSError>, Result<Set<Int64>, NSError>) in
                let expected = Self.fetchedIDs(context, predicate)
                do {
                    let result = try context.execute(update) as! NSBatchUpdateResult
                    let ids = Set(result.result as? [NSManagedObjectID] ?? [])
                    return (expected, .success(Set(ids.compactMap { context.object(with: $0).value(forKey: "id") as? Int64 })))
                } catch {
                    return (expected, .failure(error as NSError))
                }
            }
            if !DifferentialTests.sameAnswer(expected, updated) && mismatches.count < 10 {
                mismatches.append("\(predicate): fetch \(expected) vs batch update \(updated)")
            }
            if case .success(let ids) = updated, !ids.isEmpty { nonEmpty += 1 }
        }
        if try context.performAndWait({ try Self.fetchedIDs(context, nil).get() }) != all { mismatches.append("the batch updates changed the rows") }
        return (mismatches, nonEmpty)
    }

    @Test func batchDeletesRemoveWhatFetchesSelect() throws {
        var random = Generator(state: 12)
        var mismatches: [String] = []
        var nonEmpty = 0
        let rounds = max(20, Self.count / 20)
        for _ in 0..<rounds {
            let (context, variables) = try Self.populatedStore()
            let all = try Self.fetchedIDs(context, nil).get()
            let predicate = DifferentialTests.predicate(&random).withSubstitutionVariables(variables)
            let expected = Self.fetchedIDs(context, predicate)
            let delete = NSBatchDeleteRequest(fetchRequest: NSFetchRequest<NSFetchRequestResult>(entityName: "Item"))
            delete.fetchRequest.predicate = predicate
            delete.resultType = .resultTypeCount
            let removed: Result<Set<Int64>, NSError>
            do {
                _ = try context.execute(delete)
                context.reset()
                removed = .success(all.subtracting(try Self.fetchedIDs(context, nil).get()))
            } catch {
                removed = .failure(error as NSError)
            }
            if !DifferentialTests.sameAnswer(expected, removed) && mismatches.count < 10 {
                mismatches.append("\(predicate): fetch \(expected) vs batch delete \(removed)")
            }
            if case .success(let ids) = removed, !ids.isEmpty { nonEmpty += 1 }
        }
        #expect(nonEmpty > rounds / 4, "the generated predicates select something")
        #expect(mismatches.isEmpty, "\(mismatches.joined(separator: "\n"))")
    }
}
