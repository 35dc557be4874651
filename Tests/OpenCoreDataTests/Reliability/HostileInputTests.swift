import Foundation
import OpenCoreData
import OpenCoreDataFuzzing
import Testing

/// Hostile text for the parsers: the inputs that crashed or hung them (found by hand and by the
/// fuzzers, scripts/fuzz), kept as regression tests. Each must give Core Data's error or a usable
/// result, quickly; a crash here takes the whole test run down.
@Suite struct HostileInputTests {
    /// Inputs whose trees were deep enough to overflow the stack (in the parser, the printer, the
    /// evaluator or when the tree was released), or whose parsing took exponential or quadratic time.
    static let deepPredicates: [(name: String, format: String)] = [
        ("100,000 '('", String(repeating: "(", count: 100_000)),
        ("100,000 NOT", String(repeating: "NOT ", count: 100_000) + "a == 1"),
        ("100,000 '{'", String(repeating: "{", count: 100_000)),
        ("100,000 unary minus", String(repeating: "-", count: 100_000) + "1 == a"),
        ("100,000 powers", "2" + String(repeating: " ** 2", count: 100_000) + " == 1"),
        ("100,000 indexes", "a" + String(repeating: "[0]", count: 100_000) + " == 1"),
        ("100,000 sums", "a" + String(repeating: " + a", count: 100_000) + " == 1"),
        ("100,000 products", "a" + String(repeating: " * a", count: 100_000) + " == 1"),
        ("100,000 unions", "a" + String(repeating: " UNION a", count: 100_000) + " == 1"),
        ("50,000 keys and indexes", "a" + String(repeating: ".b[0]", count: 50_000) + " == 1"),
        ("60 nested TERNARY", "a == " + String(repeating: "TERNARY((", count: 60) + "a == 1"),
        ("150 nested parentheses", String(repeating: "(", count: 150) + "a == 1" + String(repeating: ")", count: 150)),
    ]

    @Test(arguments: deepPredicates.map(\.name))
    func deepInputIsRejectedOrParsedWithoutCrashing(_ name: String) throws {
        let format = try #require(Self.deepPredicates.first { $0.name == name }?.format)
        #expect(PredicateFuzzCheck.check(Data(format.utf8)) == nil)
        // NSPredicate(format:) never traps: a malformed format gives an invalid predicate.
        let made = NSPredicate(format: format)
        do {
            let parsed = try NSPredicate.parse(format: format)
            #expect(made == parsed)
        } catch let error as PredicateFormatError {
            #expect((error as NSError).domain == NSCocoaErrorDomain && (error as NSError).code == PredicateFormatError.errorCode)
            #expect(made.formatError == error)
            #expect(made.evaluate(with: ["a": 1]) == false)
        }
    }

    @Test func tooDeepANestingIsAFormatError() throws {
        let error = try #require(throws: PredicateFormatError.self) {
            try NSPredicate.parse(format: String(repeating: "(", count: 100_000) + "a == 1" + String(repeating: ")", count: 100_000))
        }
        #expect(error.message.contains("nested too deeply"))
        #expect(error.kind == .tooComplex)
        let sums = try #require(throws: PredicateFormatError.self) {
            try NSPredicate.parse(format: "a" + String(repeating: " + a", count: 1_000) + " == 1")
        }
        #expect(sums.message.contains("nested too deeply") && sums.kind == .tooComplex)
    }

    @Test func aLongKeyPathIsOneKeyPath() throws {
        let predicate = try NSPredicate.parse(format: "a" + String(repeating: ".b", count: 100_000) + " == 1")
        let comparison = try #require(predicate as? NSComparisonPredicate)
        #expect(comparison.leftExpression.keyPath.count == 1 + 2 * 100_000)
    }

    @Test func ternaryNestingIsParsedOnce() throws {
        // Each TERNARY's condition starts with '(' (a predicate or an expression): parsed both
        // ways at every level, this took 2^40 steps.
        let format = "a == " + String(repeating: "TERNARY((b == 1), ", count: 40) + "1" + String(repeating: ", 2)", count: 40)
        let predicate = try NSPredicate.parse(format: format)
        #expect(predicate.evaluate(with: ["a": 1, "b": 1]))
        #expect(try NSPredicate.parse(format: predicate.predicateFormat) == predicate)
    }

    @Test func parenthesesTriedBothWaysAtManyDepthsAreTooComplex() throws {
        // Found by the fuzzer: 1.4 KB of mangled `TERNARY((` nesting near the depth limit, where
        // the memo could not help (each start was reached at many depths); it took 8 s to parse.
        let file = TestSupport.fixtures.appendingPathComponent("FuzzRegressions/predicate/nested-ternary-retried-at-many-depths")
        let format = String(decoding: try Data(contentsOf: file), as: UTF8.self)
        let error = try #require(throws: PredicateFormatError.self) { try NSPredicate.parse(format: format) }
        #expect(error.message.contains("too complex") && error.kind == .tooComplex)
        // Long ordinary formats, parentheses included, stay well within the budget.
        let terms = (0..<2_000).map { "(a\($0) == \($0) OR (b + \($0)) > c)" }.joined(separator: " AND ")
        let parsed = try NSPredicate.parse(format: terms)
        #expect((parsed as? NSCompoundPredicate)?.subpredicates.count == 2_000)
    }

    /// A model whose entity is its own parent, directly or through a cycle.
    static func modelXML(parents: [(entity: String, parent: String)]) -> Data {
        var xml = #"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><model type="com.apple.IDECoreDataModeler.DataModel">"#
        for (entity, parent) in parents {
            xml += #"<entity name="\#(entity)" representedClassName="\#(entity)" parentEntity="\#(parent)"><attribute name="x" attributeType="String"/></entity>"#
        }
        return Data((xml + "</model>").utf8)
    }

    @Test func anEntityThatInheritsFromItselfIsAModelError() throws {
        for parents in [[("A", "A")], [("A", "B"), ("B", "A")], [("A", "B"), ("B", "C"), ("C", "A")]] {
            let xml = Self.modelXML(parents: parents)
            #expect(ModelXMLFuzzCheck.check(xml) == nil)
            let directory = TestSupport.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let file = directory.appendingPathComponent("contents")
            try xml.write(to: file)
            let error = try #require(throws: NSError.self) { try NSManagedObjectModel.load(contentsOf: file) }
            #expect(error.code == 259)
            #expect(error.localizedDescription.contains("inherits from itself"))
        }
    }

    /// The inputs the fuzzers found (Fixtures/FuzzRegressions/<target>/), through the same checks.
    @Test(arguments: ["predicate", "model-xml", "compiled-model"])
    func inputsTheFuzzersFoundPassTheirChecks(_ target: String) throws {
        let folder = TestSupport.fixtures.appendingPathComponent("FuzzRegressions").appendingPathComponent(target)
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { !$0.hasPrefix(".") }
        #expect(!files.isEmpty)
        let check = switch target {
        case "predicate": PredicateFuzzCheck.check
        case "model-xml": ModelXMLFuzzCheck.check
        default: CompiledModelFuzzCheck.check
        }
        for file in files {
            let data = try Data(contentsOf: folder.appendingPathComponent(file))
            #expect(check(data) == nil, "\(target)/\(file)")
        }
    }
}
