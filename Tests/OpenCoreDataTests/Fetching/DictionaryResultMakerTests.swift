import Foundation
@testable import OpenCoreDataCore
import Testing

/// A dictionary fetch's results are the `NSDictionary` Foundation makes of the same row: the
/// same class, the same types read back for every attribute type, the same bridge to
/// `[String: Any]`; the rows of one fetch share their key objects.
@Suite struct DictionaryResultMakerTests {
    let objectID = NSManagedObjectID(temporaryFor: NSEntityDescription(), number: 7)
    var row: [String: Any] { [
        "integer": Int64(42), "int32": Int32(-3), "int16": Int16(9), "double": 2.5, "float": Float(1.5), "bool": true,
        "decimal": Decimal(string: "10.25")!, "string": "Zoë", "date": Date(timeIntervalSinceReferenceDate: 86_400),
        "data": Data([1, 2, 3]), "uuid": UUID(uuidString: "89BEC7CC-6019-4B56-912A-8CD361A2B0C1")!,
        "url": URL(string: "https://example.com/a")!, "id": objectID, "count": 12,
    ] }

    static func typeName(_ value: Any?) -> String {
        guard let value else { return "nil" }
        return String(describing: type(of: value))
    }

    @Test func resultsAreWhatFoundationMakesOfTheRow() throws {
        let foundation = NSDictionary(dictionary: row)
        var results = DictionaryResultMaker()
        let made = results.make(row)
        #expect(type(of: made) == NSDictionary.self)
        #expect(made.count == foundation.count && made == foundation)
        for key in row.keys {
            let mine: Any? = made[key]
            let theirs: Any? = foundation[key]
            let (myType, theirType) = (Self.typeName(mine), Self.typeName(theirs))
            #expect(myType == theirType, "type of \(key)")
            #expect(mine as? AnyHashable == theirs as? AnyHashable, "value of \(key)")
        }
        let myValues = made.allValues.map(Self.typeName).sorted()
        let theirValues = foundation.allValues.map(Self.typeName).sorted()
        #expect(myValues == theirValues)
        #expect(made["integer"] as? Int == 42 && made["integer"] as? NSNumber == 42 && made["bool"] as? Bool == true)
        #expect(made["id"] as? NSManagedObjectID === objectID)
        // Each value is the object `as AnyObject` makes of it.
        for (key, value) in row {
            let mine = DictionaryResultMaker.object(value)
            let theirs = value as AnyObject
            #expect(String(describing: type(of: mine)) == String(describing: type(of: theirs)) && (mine as? NSObject)?.isEqual(theirs) == true, "object of \(key)")
        }
        let bridged = try #require(made as? [String: Any])
        #expect(bridged.count == row.count && bridged["string"] as? String == "Zoë" && bridged["integer"] as? Int64 == 42)
    }

    @Test func rowsOfAFetchShareTheirKeyObjects() throws {
        var results = DictionaryResultMaker()
        let first = results.make(["a": Int64(1), "b": "x"])
        let second = results.make(["b": "y"])
        let third = results.make([:])
        #expect(first.count == 2 && second.count == 1 && third.count == 0)
        #expect(second["b"] as? String == "y" && second["a"] == nil)
        let firstB = try #require(first.allKeys.compactMap { $0 as? NSString }.first { $0 == "b" })
        let secondB = try #require(second.allKeys.first as? NSString)
        let shared = firstB === secondB
        #expect(shared)
    }
}
