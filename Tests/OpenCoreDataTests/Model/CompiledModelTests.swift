import Foundation
import GRDB
@testable import OpenCoreDataCore
import OpenCoreData
import Testing

/// Compiled models (Xcode's `.momd`/`.mom`, and the model a SQLite store keeps in
/// `Z_MODELCACHE`) load equal to their source, with the same hashes.
@Suite struct CompiledModelTests {
    private static let momd = TestSupport.fixtures.appendingPathComponent("apple-files/swiftgen-momd/Model.momd")

    private func source(_ version: String) throws -> NSManagedObjectModel {
        try NSManagedObjectModel.load(contentsOf: TestSupport.modelURL("swiftgen-kitchensink", "Model").appendingPathComponent("\(version).xcdatamodel"))
    }

    /// Everything a program sees of a model, as text, for comparing two loads.
    static func summary(_ model: NSManagedObjectModel) -> [String] {
        var lines: [String] = []
        for entity in model.entities.sorted(by: { $0.name! < $1.name! }) {
            lines.append("entity \(entity.name!) class=\(entity.managedObjectClassName ?? "") abstract=\(entity.isAbstract) super=\(entity.superentity?.name ?? "-") subs=\(entity.subentities.compactMap(\.name).sorted()) userInfo=\(Self.sorted(entity.userInfo)) unique=\(entity.uniquenessConstraints.map { $0.map { "\($0)" } })")
            for index in entity.indexes {
                lines.append("  index \(index.name) \(index.elements.map { "\($0.propertyName ?? "?"):\($0.isAscending):\($0.collationType.rawValue)" })")
            }
            for property in entity.properties.sorted(by: { $0.name < $1.name }) {
                var line = "  \(type(of: property)) \(property.name) opt=\(property.isOptional) transient=\(property.isTransient) indexed=\(property.isIndexed) userInfo=\(Self.sorted(property.userInfo)) renamed=\(property.renamingIdentifier ?? "-")"
                if let attribute = property as? NSAttributeDescription {
                    line += " type=\(attribute.attributeType.rawValue) default=\(attribute.defaultValue.map { "\($0) (\(type(of: $0)))" } ?? "nil") class=\(attribute.attributeValueClassName ?? "-") transformer=\(attribute.valueTransformerName ?? "-")"
                }
                if let derived = property as? NSDerivedAttributeDescription { line += " derivation=\(derived.derivationExpression.map { "\($0)" } ?? "-")" }
                if let relationship = property as? NSRelationshipDescription {
                    line += " -> \(relationship.destinationEntity?.name ?? "?") inverse=\(relationship.inverseRelationship?.name ?? "-") \(relationship.minCount)...\(relationship.maxCount) rule=\(relationship.deleteRule.rawValue) ordered=\(relationship.isOrdered)"
                }
                if let fetched = property as? NSFetchedPropertyDescription {
                    line += " fetch=\(fetched.fetchRequest?.entityName ?? fetched.fetchRequest?.entity?.name ?? "?") \(fetched.fetchRequest?.predicate.map { "\($0)" } ?? "-")"
                }
                line += " hash=\(property.versionHash.base64EncodedString())"
                lines.append(line)
            }
            lines.append("  hash=\(entity.versionHash.base64EncodedString())")
        }
        for (name, request) in model.fetchRequestTemplatesByName.sorted(by: { $0.key < $1.key }) {
            lines.append("template \(name) entity=\(request.entity?.name ?? "?") predicate=\(request.predicate.map { "\($0)" } ?? "-") result=\(request.resultType.rawValue) distinct=\(request.returnsDistinctResults) subentities=\(request.includesSubentities) values=\(request.includesPropertyValues) faults=\(request.returnsObjectsAsFaults)")
        }
        for name in model.configurations.sorted() {
            lines.append("configuration \(name) \((model.entities(forConfigurationName: name) ?? []).compactMap(\.name).sorted())")
        }
        lines.append("identifiers \(model.versionIdentifiers.map { "\($0)" }.sorted())")
        return lines
    }

    private static func sorted(_ info: [AnyHashable: Any]?) -> String {
        (info ?? [:]).map { "\($0.key)=\($0.value)" }.sorted().joined(separator: ",")
    }

    private func expectSameLines(_ compiled: [String], _ source: [String]) {
        #expect(compiled.count == source.count)
        for (a, b) in zip(compiled, source) where a != b { Issue.record("compiled: \(a)\nsource:   \(b)") }
    }

    /// The `.momd` loads its current version ("Model 2"), equal to the XML it was compiled from:
    /// entities, inheritance, every attribute type and default, derived attributes, ordered and
    /// many-to-many relationships, a fetched property, fetch request templates with variables,
    /// a configuration, a fetch index and a uniqueness constraint; and Xcode's recorded hashes.
    @Test func aCompiledModelLoadsEqualToItsSource() throws {
        let compiled = try #require(NSManagedObjectModel(contentsOf: Self.momd))
        let source = try source("Model 2")
        expectSameLines(Self.summary(compiled), Self.summary(source))
        #expect(compiled.entitiesByName == source.entitiesByName)
        #expect(compiled.entityVersionHashesByName == source.entityVersionHashesByName)
        let info = try #require(try PropertyListSerialization.propertyList(from: Data(contentsOf: Self.momd.appendingPathComponent("VersionInfo.plist")), format: nil) as? [String: Any])
        let recorded = try #require((info["NSManagedObjectModel_VersionHashes"] as? [String: [String: Data]])?["Model 2"])
        #expect(compiled.entityVersionHashesByName == recorded)
        let template = try #require(compiled.fetchRequestFromTemplate(withName: "ObjectIDFetchRequest", substitutionVariables: ["NAME": "n", "NEEDLE": "x"]))
        #expect(template.predicate?.predicateFormat == #"oneToOne.name == "n" OR string == "x""#)
    }

    /// The first version, a `.mom` of its own.
    @Test func anOlderVersionLoadsFromItsMomFile() throws {
        let compiled = try NSManagedObjectModel.load(contentsOf: Self.momd.appendingPathComponent("Model.mom"))
        expectSameLines(Self.summary(compiled), Self.summary(try source("Model")))
    }

    /// The model a store written by Apple keeps in Z_MODELCACHE (raw DEFLATE of a compiled model)
    /// decodes equal to the model the store was written with.
    @Test func aStoresModelCacheDecodesToItsModel() throws {
        let store = TestSupport.fixtures.appendingPathComponent("apple-files/bnr-testmodel/TestModel.sqlite")
        let queue = try DatabaseQueue(path: store.path, configuration: { var c = Configuration(); c.readonly = true; return c }())
        let blob = try #require(try queue.read { db in try Data.fetchOne(db, sql: "SELECT Z_CONTENT FROM Z_MODELCACHE") })
        try queue.close()
        let cached = try CompiledModelLoader.decode(try RawDeflate.inflate(Array(blob)), file: store)
        let source = try NSManagedObjectModel.load(contentsOf: TestSupport.fixtures.appendingPathComponent("apple-files/bnr-testmodel/Sample.xcdatamodeld/TestModel.xcdatamodel"))
        expectSameLines(Self.summary(cached), Self.summary(source))
        let metadata = try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: NSSQLiteStoreType, at: store)
        #expect(cached.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
    }

    /// Damaged compiled models are 259 errors that name the file, never a crash.
    @Test func damagedCompiledModelsAreErrors() throws {
        let good = try Data(contentsOf: Self.momd.appendingPathComponent("Model 2.mom"))
        let directory = TestSupport.temporaryDirectory()
        var inputs: [(String, Data)] = [
            ("empty", Data()),
            ("text", Data("not a model".utf8)),
            ("truncated", good.prefix(good.count / 2)),
            ("no trailer", good.dropLast(20)),
            ("a plain plist", try PropertyListSerialization.data(fromPropertyList: ["a": 1], format: .binary, options: 0)),
        ]
        var flipped = good
        for offset in stride(from: 9, to: flipped.count - 40, by: 97) { flipped[offset] ^= 0x5A }
        inputs.append(("flipped bytes", flipped))
        for (name, bytes) in inputs {
            let url = directory.appendingPathComponent("\(name).mom")
            try bytes.write(to: url)
            let error = try #require(throws: NSError.self, "\(name)") { _ = try NSManagedObjectModel.load(contentsOf: url) }
            #expect(error.domain == NSCocoaErrorDomain)
            #expect(error.code == NSFileReadCorruptFileError, "\(name): \(error)")
            #expect(error.localizedDescription.contains(url.path), "\(name)")
            #expect(NSManagedObjectModel(contentsOf: url) == nil)
        }
    }

    /// Raw DEFLATE: stored blocks written here read back, and corrupt data is an error.
    @Test func rawDeflateRoundTripsAndRefusesDamage() throws {
        let text = Array(String(repeating: "Core Data model cache ", count: 5000).utf8)
        #expect(try RawDeflate.inflate(RawDeflate.deflateStored(text)) == text)
        #expect(try RawDeflate.inflate(RawDeflate.deflateStored([])) == [])
        #expect(throws: RawDeflate.FormatError.self) { try RawDeflate.inflate([0xFF, 0xFF, 0xFF]) }
        #expect(throws: RawDeflate.FormatError.self) { try RawDeflate.inflate(Array(RawDeflate.deflateStored(text).prefix(100))) }
        #expect(throws: RawDeflate.FormatError.self) { try RawDeflate.inflate(RawDeflate.deflateStored(text), limit: 1000) }
    }

    /// Binary property lists written here read back equal, UIDs included.
    @Test func binaryPropertyListsRoundTrip() throws {
        let value = PropertyListValue.dictionary([
            ("$archiver", .string("NSKeyedArchiver")),
            ("numbers", .array([.integer(0), .integer(-1), .integer(300), .integer(Int64.max), .real(2.5), .bool(true), .bool(false)])),
            ("strings", .array([.string(""), .string("ascii"), .string("ünïcødé ✓"), .string(String(repeating: "x", count: 40))])),
            ("refs", .set([.uid(0), .uid(255), .uid(70000)])),
            ("data", .data(Array(0...255))),
            ("date", .date(12345.5)),
        ])
        #expect(try BinaryPropertyList.read(BinaryPropertyList.write(value)) == value)
        // Foundation reads what is written here (without UIDs, which it can't expose on Linux).
        let plain = PropertyListValue.dictionary([("a", .integer(1)), ("b", .array([.string("x"), .real(1.5)]))])
        let decoded = try #require(try PropertyListSerialization.propertyList(from: Data(BinaryPropertyList.write(plain)), format: nil) as? [String: Any])
        #expect(decoded["a"] as? Int == 1)
        #expect((decoded["b"] as? [Any])?.first as? String == "x")
    }
}

/// `NSPersistentContainer(name:)` finds a compiled `<name>.momd` as Apple's does in an app bundle.
@Suite struct CompiledModelLocationTests {
    @Test func aContainerFindsTheCompiledModelByName() throws {
        let directory = TestSupport.temporaryDirectory()
        try FileManager.default.copyItem(at: TestSupport.fixtures.appendingPathComponent("apple-files/swiftgen-momd/Model.momd"),
                                         to: directory.appendingPathComponent("Model.momd"))
        let model = try #require(ModelLocator.model(named: "Model", in: [directory]))
        #expect(model.entitiesByName["NewEntity"] != nil, "the current version, Model 2")
        #expect(ModelLocator.model(named: "Missing", in: [directory]) == nil)
    }
}
