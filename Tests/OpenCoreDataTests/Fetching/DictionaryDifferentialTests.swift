import Foundation
import OpenCoreData
import Testing

/// Generated dictionary requests (attributes and to-one key paths, `count:`, `sum:`, `average:`,
/// `min:` and `max:` expressions, `propertiesToGroupBy`, `havingPredicate`, distinct results, over
/// the generated predicates of `DifferentialTests`) through the SQLite store (SQL), the in-memory
/// store and the binary store: each must give the same rows with the same values, or the same error.
///
/// `OPENCOREDATA_DIFFERENTIAL_COUNT` raises the number of requests (default 2,000; a quarter of
/// that here).
@Suite struct DictionaryDifferentialTests {
    typealias Generator = DifferentialTests.Generator

    static let plainKeys = ["name", "count", "score", "flag", "when", "group.title", "group.rank", "group.code"]

    /// A generated dictionary request: what it fetches, and how.
    static func request(_ random: inout Generator) -> NSFetchRequest<NSDictionary> {
        let request = NSFetchRequest<NSDictionary>(entityName: "Item")
        request.resultType = .dictionaryResultType
        if random.chance(60) { request.predicate = DifferentialTests.predicate(&random) }
        var keys: [String] = []
        for _ in 0..<random.int(0..<3) {
            let key = random.pick(plainKeys)
            if !keys.contains(key) { keys.append(key) }
        }
        var properties: [Any] = keys
        let aggregating = random.chance(60)
        if aggregating {
            for index in 0..<random.int(1..<3) {
                let function = random.pick(["count:", "sum:", "average:", "min:", "max:"])
                let argument = function == "count:" ? random.pick(["count", "name", "score", "id"])
                    : function == "min:" || function == "max:" ? random.pick(["count", "score", "when", "name"]) : random.pick(["count", "score"])
                let description = NSExpressionDescription()
                description.name = "value\(index)"
                description.expression = NSExpression(forFunction: function, arguments: [NSExpression(forKeyPath: argument)])
                description.expressionResultType = function == "count:" ? .integer64AttributeType
                    : argument == "when" ? .dateAttributeType : argument == "name" ? .stringAttributeType
                    : function == "average:" || argument == "score" ? .doubleAttributeType : .integer64AttributeType
                properties.append(description)
            }
            request.propertiesToGroupBy = keys
            let numeric = ((properties[keys.count] as? NSExpressionDescription)?.expressionResultType).map { $0 != .dateAttributeType && $0 != .stringAttributeType } ?? false
            if !keys.isEmpty && numeric && random.chance(25) {
                request.havingPredicate = NSPredicate(format: "value0 \(random.pick([">", "<=", "!="])) %d", random.int(0..<6))
            }
        } else {
            if keys.isEmpty { keys = [random.pick(plainKeys)] ; properties = keys }
            request.returnsDistinctResults = random.chance(50)
        }
        request.propertiesToFetch = properties
        if !keys.isEmpty && random.chance(70) {
            request.sortDescriptors = keys.map { NSSortDescriptor(key: $0, ascending: random.chance(50)) }
        }
        return request
    }

    /// A row's values as comparable text: numbers rounded to six places, so an average summed
    /// in another order still matches.
    static func describe(_ row: NSDictionary) -> String {
        (row.allKeys as! [String]).sorted().map { key -> String in
            let value = row[key]
            let text: String = switch value {
            case let date as Date: "date \(date.timeIntervalSinceReferenceDate)"
            case let number as NSNumber: String(format: "%.6f", number.doubleValue)
            case let string as String: "'\(string)'"
            case nil: "nil"
            default: "\(type(of: value!)) \(value!)"
            }
            return "\(key)=\(text)"
        }.joined(separator: ", ")
    }

    @Test func storesAgreeOnDictionaries() throws {
        let model = DifferentialTests.model()
        let contexts = try [NSSQLiteStoreType, NSInMemoryStoreType, NSBinaryStoreType].map { type in
            let (coordinator, _) = try TestSupport.coordinator(model, type: type)
            let context = TestSupport.context(coordinator)
            try DifferentialTests.populate(context)
            return context
        }
        let count = DifferentialTests.requestCount(default: 2000) / 4
        let (mismatches, answered) = Self.compare(count: count, zip(["SQL", "memory", "binary"], contexts).map { ($0, $1) })
        #expect(mismatches.isEmpty, "\(mismatches.joined(separator: "\n"))")
        #expect(answered > count / 2, "most generated requests are answered")
    }

    /// Runs `count` generated requests through each context (in its `performAndWait`) and
    /// compares every answer with the first context's: up to 10 descriptions of requests whose
    /// answers differ, and how many the first answered.
    static func compare(count: Int, _ contexts: [(name: String, context: NSManagedObjectContext)]) -> (mismatches: [String], answered: Int) {
        var random = Generator(state: 99)
        var mismatches: [String] = []
        var answered = 0
        for _ in 0..<count {
            let request = Self.request(&random)
            // `$GROUPn` variables aren't substituted here: requests that name them are skipped.
            if request.predicate?.predicateFormat.contains("$GROUP") == true { continue }
            // Rows in an order the request doesn't define (no sort descriptors, or ties among
            // rows that differ in a key not sorted on) are compared sorted.
            let unordered = request.sortDescriptors == nil || Self.tiesOnly(request)
            let answers: [Result<[String], NSError>] = contexts.map { _, context in
                context.performAndWait {
                    do {
                        let rows = try context.fetch(request).map(Self.describe)
                        return .success(unordered ? rows.sorted() : rows)
                    } catch {
                        return .failure(error as NSError)
                    }
                }
            }
            if case .success = answers[0] { answered += 1 }
            for (index, answer) in answers.enumerated().dropFirst() {
                let same = DifferentialTests.sameAnswer(answers[0], answer)
                if !same && mismatches.count < 10 {
                    mismatches.append("\(Self.summary(request)): \(contexts[0].name) \(Self.brief(answers[0])) vs \(contexts[index].name) \(Self.brief(answer))")
                }
            }
        }
        return (mismatches, answered)
    }

    /// Whether rows the sort descriptors call equal may come in any order: when some fetched
    /// key isn't sorted on.
    static func tiesOnly(_ request: NSFetchRequest<NSDictionary>) -> Bool {
        (request.propertiesToFetch ?? []).count > (request.sortDescriptors ?? []).count
    }

    static func summary(_ request: NSFetchRequest<NSDictionary>) -> String {
        let properties = (request.propertiesToFetch ?? []).map { property -> String in
            if let description = property as? NSExpressionDescription { return "\(description.name)=\(description.expression!)" }
            return "\(property)"
        }
        return "fetch \(properties) where \(request.predicate?.predicateFormat ?? "-") group by \(request.propertiesToGroupBy ?? []) having \(request.havingPredicate?.predicateFormat ?? "-") distinct \(request.returnsDistinctResults) sorted \(request.sortDescriptors?.map(\.description) ?? [])"
    }

    static func brief(_ answer: Result<[String], NSError>) -> String {
        switch answer {
        case .success(let rows): "\(rows.count) rows \(rows.prefix(6))"
        case .failure(let error): "error \(error.code) \(error.localizedDescription)"
        }
    }
}
