import Foundation
import OpenCoreData
import Testing

/// Generated predicates and sort descriptors over generated data with NULLs, Unicode and mixed
/// case, each run through the SQLite store (compiled to SQL), the in-memory store and the binary
/// store (evaluated in Swift): they must return the same objects in the same order, or refuse the
/// request with the same error.
///
/// `OPENCOREDATA_DIFFERENTIAL_COUNT` raises the number of predicates (default 2,000).
@Suite struct DifferentialTests {
    /// A small deterministic random number generator (SplitMix64), also for the standard
    /// library's `random(in:using:)`.
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func int(_ range: Range<Int>) -> Int { range.lowerBound + Int(next() % UInt64(range.count)) }
        mutating func pick<T>(_ items: [T]) -> T { items[int(0..<items.count)] }
        mutating func chance(_ percent: Int) -> Bool { int(0..<100) < percent }
    }

    /// `OPENCOREDATA_DIFFERENTIAL_COUNT`, or `fallback` when it isn't set.
    static func requestCount(default fallback: Int) -> Int {
        Int(ProcessInfo.processInfo.environment["OPENCOREDATA_DIFFERENTIAL_COUNT"] ?? "") ?? fallback
    }

    /// A context's groups as the `$GROUPn` variables of the generated predicates (`n` its code).
    static func groupVariables(_ context: NSManagedObjectContext) throws -> [String: Any] {
        let groups = try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Group"))
        return Dictionary(uniqueKeysWithValues: groups.map { ("GROUP\($0.value(forKey: "code") as! Int64)", $0 as Any) })
    }

    /// Whether two stores gave the same answer: equal results, or errors of the same domain and code.
    static func sameAnswer<T: Equatable>(_ a: Result<T, NSError>, _ b: Result<T, NSError>) -> Bool {
        switch (a, b) {
        case (.success(let x), .success(let y)): x == y
        case (.failure(let x), .failure(let y)): x.domain == y.domain && x.code == y.code
        default: false
        }
    }

    static let words = ["apple", "Apple", "APPLE", "éclair", "Eclair", "zebra", "Zoë", "zoe", "item2", "item10", "Item1", "straße", "strasse", "naïve", "naive", "", "a b", "ω", "東京", "42"]

    static func model() -> NSManagedObjectModel {
        let item = NSEntityDescription(name: "Item")
        let group = NSEntityDescription(name: "Group")
        let tag = NSEntityDescription(name: "Tag")
        let itemGroup = NSRelationshipDescription(name: "group", destination: group)
        let groupItems = NSRelationshipDescription(name: "items", destination: item, toMany: true)
        let itemTags = NSRelationshipDescription(name: "tags", destination: tag, toMany: true)
        let tagItem = NSRelationshipDescription(name: "item", destination: item)
        itemGroup.inverseRelationship = groupItems
        groupItems.inverseRelationship = itemGroup
        itemTags.inverseRelationship = tagItem
        tagItem.inverseRelationship = itemTags
        item.properties = [
            NSAttributeDescription(name: "id", type: .integer64AttributeType),
            NSAttributeDescription(name: "name", type: .stringAttributeType),
            NSAttributeDescription(name: "count", type: .integer64AttributeType),
            NSAttributeDescription(name: "score", type: .doubleAttributeType),
            NSAttributeDescription(name: "flag", type: .booleanAttributeType),
            NSAttributeDescription(name: "when", type: .dateAttributeType),
            itemGroup, itemTags,
        ]
        group.properties = [NSAttributeDescription(name: "code", type: .integer64AttributeType), NSAttributeDescription(name: "title", type: .stringAttributeType),
                            NSAttributeDescription(name: "rank", type: .integer32AttributeType), groupItems]
        tag.properties = [NSAttributeDescription(name: "label", type: .stringAttributeType), tagItem]
        let model = NSManagedObjectModel()
        model.entities = [item, group, tag]
        return model
    }

    /// Fills a store with the same generated objects whatever its type.
    static func populate(_ context: NSManagedObjectContext) throws {
        var random = Generator(state: 2026)
        let groups = (0..<6).map { index -> NSManagedObject in
            let group = NSEntityDescription.insertNewObject(forEntityName: "Group", into: context)
            group.setValue(Int64(index), forKey: "code")
            group.setValue(random.chance(15) ? nil : random.pick(words), forKey: "title")
            group.setValue(random.chance(10) ? nil : Int32(index % 3), forKey: "rank")
            return group
        }
        for index in 0..<160 {
            let item = NSEntityDescription.insertNewObject(forEntityName: "Item", into: context)
            item.setValue(Int64(index), forKey: "id")
            item.setValue(random.chance(12) ? nil : random.pick(words), forKey: "name")
            item.setValue(random.chance(12) ? nil : Int64(random.int(-5..<20)), forKey: "count")
            item.setValue(random.chance(12) ? nil : Double(random.int(-100..<100)) / 8, forKey: "score")
            item.setValue(random.chance(12) ? nil : random.chance(50), forKey: "flag")
            item.setValue(random.chance(12) ? nil : Date(timeIntervalSinceReferenceDate: Double(random.int(0..<5)) * 86_400), forKey: "when")
            if !random.chance(15) { item.setValue(random.pick(groups), forKey: "group") }
            for _ in 0..<random.int(0..<4) {
                let tag = NSEntityDescription.insertNewObject(forEntityName: "Tag", into: context)
                tag.setValue(random.chance(10) ? nil : random.pick(words), forKey: "label")
                tag.setValue(item, forKey: "item")
            }
        }
        try context.save()
    }

    /// One generated predicate format with its arguments.
    static func predicate(_ random: inout Generator, depth: Int = 0) -> NSPredicate {
        if depth < 2 && random.chance(30) {
            let left = predicate(&random, depth: depth + 1)
            let right = predicate(&random, depth: depth + 1)
            switch random.int(0..<3) {
            case 0: return NSCompoundPredicate(andPredicateWithSubpredicates: [left, right])
            case 1: return NSCompoundPredicate(orPredicateWithSubpredicates: [left, right])
            default: return NSCompoundPredicate(notPredicateWithSubpredicate: left)
            }
        }
        let comparisons = ["==", "!=", "<", "<=", ">", ">="]
        let stringOperators = ["==", "!=", "BEGINSWITH", "ENDSWITH", "CONTAINS", "LIKE", "<", ">="]
        let options = ["", "[c]", "[d]", "[cd]"]
        switch random.int(0..<36) {
        case 0: return NSPredicate(format: "count \(random.pick(comparisons)) %d", random.int(-3..<18))
        case 1: return NSPredicate(format: "score \(random.pick(comparisons)) %@", NSNumber(value: Double(random.int(-80..<80)) / 8))
        case 2:
            let op = random.pick(stringOperators)
            let option = op == "<" || op == ">=" ? "" : random.pick(options)
            var word = random.pick(words)
            if op == "LIKE" { word = String(word.prefix(2)) + random.pick(["*", "?", ""]) }
            return NSPredicate(format: "name \(op)\(option) %@", word)
        case 3: return NSPredicate(format: random.pick(["name == nil", "name != nil", "count == nil", "flag == YES", "flag == NO", "flag != YES", "group == nil", "when == nil"]))
        case 4: return NSPredicate(format: "count BETWEEN {%d, %d}", random.int(-5..<5), random.int(5..<20))
        case 5: return NSPredicate(format: "count IN %@", (0..<random.int(1..<5)).map { _ in random.int(-5..<20) })
        case 6: return NSPredicate(format: "name IN\(random.pick(["", "[c]"])) %@", (0..<3).map { _ in random.pick(words) })
        case 7: return NSPredicate(format: "group.title \(random.pick(["==", "BEGINSWITH", "CONTAINS"]))\(random.pick(options)) %@", random.pick(words))
        case 8: return NSPredicate(format: "group.rank \(random.pick(comparisons)) %d", random.int(0..<3))
        case 9: return NSPredicate(format: "\(random.pick(["ANY", "ALL", "NONE"])) tags.label \(random.pick(["==", "BEGINSWITH", "CONTAINS"]))\(random.pick(options)) %@", random.pick(words))
        case 10: return NSPredicate(format: "tags.@count \(random.pick(comparisons)) %d", random.int(0..<4))
        case 11: return NSPredicate(format: "SUBQUERY(tags, $t, $t.label \(random.pick(["==", "BEGINSWITH", "CONTAINS"]))\(random.pick(options)) %@).@count \(random.pick(comparisons)) %d", random.pick(words), random.int(0..<3))
        case 12: return NSPredicate(format: "count * %d \(random.pick(comparisons)) %d", random.int(-2..<4), random.int(-10..<30))
        case 13: return NSPredicate(format: "score + count \(random.pick(comparisons)) %@", NSNumber(value: Double(random.int(-40..<60)) / 4))
        case 14: return NSPredicate(format: "when \(random.pick(comparisons)) %@", Date(timeIntervalSinceReferenceDate: Double(random.int(0..<5)) * 86_400 + Double(random.pick([0, 1, -1]))))
        case 15: return NSPredicate(format: random.pick(["count \(random.pick(comparisons)) group.rank", "name \(random.pick(["==", "!=", "==[c]", "BEGINSWITH[cd]"])) group.title", "score \(random.pick(comparisons)) count"]))
        // Objects, named by variables that `compare` substitutes with each store's own objects.
        case 16: return NSPredicate(format: "group \(random.pick(["==", "!="])) $GROUP\(random.int(0..<6))")
        case 17: return NSPredicate(format: "group IN {$GROUP\(random.int(0..<6)), $GROUP\(random.int(0..<6))}")
        case 18: return NSPredicate(format: "group.items.@\(random.pick(["count", "sum.count", "max.count", "min.score", "avg.score"])) \(random.pick(comparisons)) %d", random.int(-2..<40))
        case 19: return NSPredicate(format: "\(random.pick(["ANY", "NONE"])) tags.label IN\(random.pick(["", "[c]"])) %@", (0..<2).map { _ in random.pick(words) })
        case 20: return NSPredicate(format: random.pick(["ANY tags.label == nil", "ALL tags.label != nil", "SUBQUERY(tags, $t, $t.label == nil OR $t.label BEGINSWITH 'a').@count > 0",
                                                          "TRUEPREDICATE", "FALSEPREDICATE", "tags.@count == 0 OR group.items.@count > 30"]))
        case 21: return NSPredicate(format: "\(random.pick(["flag", "count", "score"])) \(random.pick(["==", "!="])) %@", random.pick([NSNumber(value: true), NSNumber(value: 3.0), NSNumber(value: 0), NSNumber(value: 2.5)]))
        case 22: return NSPredicate(format: "name MATCHES\(random.pick(["", "[c]"])) %@", random.pick(["[a-z]+", "item[0-9]+", ".*e.*", "Z.*", ""]))
        case 23: return NSPredicate(format: "when BETWEEN %@", [Date(timeIntervalSinceReferenceDate: 86_400), Date(timeIntervalSinceReferenceDate: Double(random.int(1..<5)) * 86_400)])
        case 24: return NSPredicate(format: "name \(random.pick(["ENDSWITH", "CONTAINS", "LIKE"]))\(random.pick(options)) %@", random.pick(["", "E", "é", "*", "?", "ß", "SS"]))
        case 25: return NSPredicate(format: "count \(random.pick(["<", ">=", "=="])) %@", NSNumber(value: Double(random.int(-20..<40)) / 4))
        case 26: return NSPredicate(format: "SUBQUERY(group.items, $i, $i.count > %d).@count \(random.pick(comparisons)) %d", random.int(-2..<15), random.int(0..<20))
        case 27: return NSPredicate(format: "\(random.pick(["ANY", "NONE"])) tags.item.group == $GROUP\(random.int(0..<6))")
        case 28: return random.chance(50) ? NSPredicate(format: "\(random.pick(["name", "count"])) IN %@", [] as [Any])
            : NSPredicate(format: "name IN %@ OR count IN %@", [random.pick(words)], [random.int(-5..<20)])
        case 29: return NSPredicate(format: "group.code \(random.pick(["BETWEEN {1, 3}", "IN {0, 5}", "== nil", "!= 2", "> 3"]))")
        case 30: return NSPredicate(format: random.pick(["flag != NO", "flag != YES", "count != nil AND count == score", "NOT (group.rank == 1)", "NOT (name BEGINSWITH 'a')"]))
        case 31: return NSPredicate(format: "count + group.rank \(random.pick(comparisons)) %d", random.int(-3..<20))
        case 32: return NSPredicate(format: "tags.@count \(random.pick(comparisons)) group.rank")
        case 33: return NSPredicate(format: "name \(random.pick(["ENDSWITH", "BEGINSWITH", "CONTAINS"]))\(random.pick(options)) group.title")
        case 34: return NSPredicate(format: "\(random.pick(["ANY", "NONE"])) tags.label ==\(random.pick(["", "[c]"])) name")
        default: return NSPredicate(format: "group.items.@\(random.pick(["avg.count", "sum.score", "count"])) \(random.pick(["==", "!=", ">"])) %d", random.int(0..<12))
        }
    }

    static func sortDescriptors(_ random: inout Generator) -> [NSSortDescriptor] {
        var descriptors: [NSSortDescriptor] = []
        for _ in 0..<random.int(0..<3) {
            let key = random.pick(["name", "count", "score", "flag", "when", "group.title", "group.rank", "group.code"])
            let selector = key.hasSuffix("title") || key == "name"
                ? random.pick(["compare:", "caseInsensitiveCompare:", "localizedCompare:", "localizedStandardCompare:"]) : "compare:"
            descriptors.append(NSSortDescriptor(key: key, ascending: random.chance(50), selector: Selector(selector)))
        }
        descriptors.append(NSSortDescriptor(key: "id", ascending: true))
        return descriptors
    }

    @Test func sqlAndMemoryAgree() throws {
        let model = Self.model()
        let (sqlite, _) = try TestSupport.coordinator(model, type: NSSQLiteStoreType)
        let (memory, _) = try TestSupport.coordinator(model, type: NSInMemoryStoreType)
        let (binary, _) = try TestSupport.coordinator(model, type: NSBinaryStoreType)
        let contexts = [sqlite, memory, binary].map { TestSupport.context($0) }
        for context in contexts { try Self.populate(context) }
        let count = Self.requestCount(default: 2000)
        let (mismatches, nonEmpty) = try Self.compare(count: count, ("SQL", contexts[0]), ("memory", contexts[1]), ("binary", contexts[2]))
        #expect(mismatches.isEmpty, "\(mismatches.joined(separator: "\n"))")
        #expect(nonEmpty > count / 4, "the generated predicates select something")
    }

    /// Runs `count` generated requests through each context (each in its `performAndWait`) and
    /// compares every answer with the first context's: up to 10 descriptions of requests whose
    /// answers differ, and how many matched something.
    static func compare(count: Int, _ reference: (name: String, context: NSManagedObjectContext),
                        _ others: (name: String, context: NSManagedObjectContext)...) throws -> (mismatches: [String], nonEmpty: Int) {
        var random = Generator(state: 42)
        var mismatches: [String] = []
        var nonEmpty = 0
        // Each store answers with its own objects for the `$GROUPn` variables (the group of code n,
        // fetched once per store), or with the error it gives, which must be the same.
        var variablesByContext: [ObjectIdentifier: [String: Any]] = [:]
        for context in [reference.context] + others.map(\.context) {
            variablesByContext[ObjectIdentifier(context)] = try context.performAndWait { try groupVariables(context) }
        }
        func ids(_ context: NSManagedObjectContext, _ request: NSFetchRequest<NSDictionary>) -> Result<[Int64], NSError> {
            let variables = variablesByContext[ObjectIdentifier(context)]!
            return context.performAndWait {
                do {
                    let own = request.copy() as! NSFetchRequest<NSDictionary>
                    own.predicate = request.predicate?.withSubstitutionVariables(variables)
                    return .success(try context.fetch(own).map { $0["id"] as? Int64 ?? -1 })
                } catch {
                    return .failure(error as NSError)
                }
            }
        }
        func describe(_ answer: Result<[Int64], NSError>) -> String {
            switch answer {
            case .success(let ids): "\(ids.prefix(12))"
            case .failure(let error): "error \(error.code) \(error.localizedDescription)"
            }
        }
        for _ in 0..<count {
            let request = NSFetchRequest<NSDictionary>(entityName: "Item")
            request.resultType = .dictionaryResultType
            request.propertiesToFetch = ["id"]
            request.predicate = predicate(&random)
            request.sortDescriptors = sortDescriptors(&random)
            if random.chance(20) { request.fetchLimit = random.int(1..<20) }
            if random.chance(15) { request.fetchOffset = random.int(1..<30) }
            let expected = ids(reference.context, request)
            if case .success(let found) = expected, !found.isEmpty { nonEmpty += 1 }
            for other in others {
                let answer = ids(other.context, request)
                let same = sameAnswer(expected, answer)
                if !same && mismatches.count < 10 {
                    mismatches.append("\(request.predicate!) sorted by \(request.sortDescriptors!.map(\.description)): \(reference.name) \(describe(expected)) vs \(other.name) \(describe(answer))")
                }
            }
        }
        return (mismatches, nonEmpty)
    }
}
