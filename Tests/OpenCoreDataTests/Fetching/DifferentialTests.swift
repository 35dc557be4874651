import Foundation
import OpenCoreData
import Testing

/// Generated predicates and sort descriptors over generated data with NULLs, Unicode and mixed
/// case, each run through the SQLite store (compiled to SQL) and the in-memory store (evaluated in
/// Swift): the two must return the same objects in the same order.
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
        group.properties = [NSAttributeDescription(name: "title", type: .stringAttributeType), NSAttributeDescription(name: "rank", type: .integer32AttributeType), groupItems]
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
        switch random.int(0..<14) {
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
        default: return NSPredicate(format: "score + count \(random.pick(comparisons)) %@", NSNumber(value: Double(random.int(-40..<60)) / 4))
        }
    }

    static func sortDescriptors(_ random: inout Generator) -> [NSSortDescriptor] {
        var descriptors: [NSSortDescriptor] = []
        for _ in 0..<random.int(0..<3) {
            let key = random.pick(["name", "count", "score", "flag", "when", "group.title", "group.rank"])
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
        let sqliteContext = TestSupport.context(sqlite)
        let memoryContext = TestSupport.context(memory)
        try Self.populate(sqliteContext)
        try Self.populate(memoryContext)
        let count = Int(ProcessInfo.processInfo.environment["OPENCOREDATA_DIFFERENTIAL_COUNT"] ?? "") ?? 2000
        let (mismatches, nonEmpty) = try Self.compare(count: count, ("SQL", sqliteContext), ("memory", memoryContext))
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
        func ids(_ context: NSManagedObjectContext, _ request: NSFetchRequest<NSDictionary>) throws -> [Int64] {
            try context.performAndWait { try context.fetch(request).map { $0["id"] as? Int64 ?? -1 } }
        }
        for _ in 0..<count {
            let request = NSFetchRequest<NSDictionary>(entityName: "Item")
            request.resultType = .dictionaryResultType
            request.propertiesToFetch = ["id"]
            request.predicate = predicate(&random)
            request.sortDescriptors = sortDescriptors(&random)
            let expected = try ids(reference.context, request)
            if !expected.isEmpty { nonEmpty += 1 }
            for other in others {
                let answer = try ids(other.context, request)
                if answer != expected && mismatches.count < 10 {
                    mismatches.append("\(request.predicate!) sorted by \(request.sortDescriptors!.map(\.description)): \(reference.name) \(expected.prefix(12)) vs \(other.name) \(answer.prefix(12))")
                }
            }
        }
        return (mismatches, nonEmpty)
    }
}
