import Foundation
@testable import OpenCoreDataCore
import OpenCoreData
import Testing

/// The model compiler writes archives that decode to the same tree as Xcode's compiler's, and
/// load back equal to their source.
@Suite struct ModelCompilerTests {
    private static let momd = TestSupport.fixtures.appendingPathComponent("apple-files/swiftgen-momd/Model.momd")

    private func source(_ version: String) throws -> NSManagedObjectModel {
        try NSManagedObjectModel.load(contentsOf: TestSupport.modelURL("swiftgen-kitchensink", "Model").appendingPathComponent("\(version).xcdatamodel"))
    }

    /// A keyed archive as an indented tree: objects expanded where they are owned, back
    /// references named, dictionaries and sets in sorted order, compiler version keys left out.
    /// Two archives of one model give equal trees whatever their object order.
    static func tree(_ bytes: [UInt8]) throws -> [String] {
        let archive = try KeyedArchive(bytes)
        let references: Set<String> = ["NSEntity", "NSManagedObjectModel", "NSSuperentity", "NSDestinationEntity", "NSInverseRelationship", "NSFetchIndexDescription"]
        let ignored: Set<String> = ["$class", "CDMCompilerToolVersion", "CDMCompilerXcodeVersion"]

        func label(_ object: KeyedArchive.Object) throws -> String {
            var name = try archive.string("NSEntityName", of: object)
            if name == nil { name = try archive.string("NSPropertyName", of: object) }
            if name == nil { name = try archive.string("NSIndexName", of: object) }
            return "→\(object.className)(\(name ?? ""))"
        }
        func scalar(_ value: PropertyListValue) -> String {
            switch value {
            case .real(let double): "\(double)"
            case .integer(let integer): "\(integer)"
            case .bool(let bool): "\(bool)"
            case .string(let string): "'\(string)'"
            case .data(let data): "data(\(data.count))"
            default: "\(value)"
            }
        }
        func render(_ value: PropertyListValue, _ indent: String, asReference: Bool) throws -> [String] {
            guard case .uid = value else { return [scalar(value)] }
            guard let object = try archive.object(value) else { return ["nil"] }
            guard case .dictionary(let fields) = object.fields else { return [scalar(object.fields)] }
            if asReference { return [try label(object)] }
            switch object.className {
            case "NSDecimalNumberPlaceholder": return ["decimal \(try archive.value(value).map { "\($0)" } ?? "nil")"]
            case "NSMutableString", "NSString": return ["'\(try archive.string(value) ?? "")'"]
            case "NSArray", "NSMutableArray", "NSSet", "NSMutableSet":
                var elements: [String] = []
                for element in try archive.elements(value) {
                    let rendered: [String] = try render(element, indent + "  ", asReference: false)
                    elements.append(rendered.joined(separator: "\n"))
                }
                if object.className.hasSuffix("Set") { elements.sort() }
                return ["\(object.className) ["] + elements.map { indent + "  " + $0 } + [indent + "]"]
            case "NSDictionary", "NSMutableDictionary", "NSKnownKeysDictionary1":
                var entries: [String] = []
                for entry in try archive.entries(value) {
                    let key = try archive.string(entry.key) ?? "?"
                    let rendered: [String] = try render(entry.value, indent + "  ", asReference: false)
                    entries.append("\(key): " + rendered.joined(separator: "\n"))
                }
                return ["\(object.className) {"] + entries.sorted().map { indent + "  " + $0 } + [indent + "}"]
            default:
                var out = ["\(object.className) {"]
                for (key, field) in fields.sorted(by: { $0.key < $1.key }) where !ignored.contains(key) {
                    let rendered = try render(field, indent + "  ", asReference: references.contains(key))
                    out.append(indent + "  \(key): " + rendered.joined(separator: "\n"))
                }
                return out + [indent + "}"]
            }
        }
        let lines = try render(.uid(UInt64(archive.root)), "", asReference: false)
        return lines.joined(separator: "\n").split(separator: "\n").map(String.init)
    }

    private func expectSameTree(_ ours: [String], _ xcode: [String]) {
        #expect(ours.count == xcode.count, "\(ours.count) lines against Xcode's \(xcode.count)")
        var shown = 0
        for (a, b) in zip(ours, xcode) where a != b && shown < 20 {
            Issue.record("ours:  \(a)\nxcode: \(b)")
            shown += 1
        }
    }

    /// Both versions of the SwiftGen model, compiled here from their XML, decode to the tree of
    /// Xcode's `.mom` files.
    @Test(arguments: ["Model", "Model 2"])
    func compiledArchiveDecodesToXcodesTree(version: String) throws {
        let ours = try CompiledModelEncoder.archive(try source(version))
        let xcode = Array(try Data(contentsOf: Self.momd.appendingPathComponent("\(version).mom")))
        expectSameTree(try Self.tree(ours), try Self.tree(xcode))
    }

    /// What the compiler writes loads back equal to its source, with the same hashes.
    @Test(arguments: ["Model", "Model 2"])
    func compiledArchiveLoadsEqualToItsSource(version: String) throws {
        let source = try source(version)
        let loaded = try CompiledModelLoader.decode(try CompiledModelEncoder.archive(source), file: URL(fileURLWithPath: "/compiled.mom"))
        #expect(CompiledModelTests.summary(loaded) == CompiledModelTests.summary(source))
        #expect(loaded.entityVersionHashesByName == source.entityVersionHashesByName)
    }
}
