import Foundation
import GRDB
@testable import OpenCoreDataCore
import OpenCoreData
import Testing

/// Entity version hashes equal those Apple's Core Data and Xcode's model compiler recorded in the
/// Apple-written fixtures, stores written here carry them with Apple's metadata keys, and
/// compatibility is decided by them as Core Data decides it.
@Suite struct AppleVersionHashTests {
    private static let apple = TestSupport.fixtures.appendingPathComponent("apple-files")

    /// The metadata Apple's Core Data wrote into a store's Z_METADATA.
    private func appleMetadata(_ store: URL) throws -> [String: Any] {
        let queue = try DatabaseQueue(path: store.path, configuration: { var c = Configuration(); c.readonly = true; return c }())
        defer { try? queue.close() }
        let plist = try #require(try queue.read { db in try Data.fetchOne(db, sql: "SELECT Z_PLIST FROM Z_METADATA") })
        return try #require(try PropertyListSerialization.propertyList(from: plist, format: nil) as? [String: Any])
    }

    private func xcodeVersion(_ bundle: URL, _ version: String) throws -> NSManagedObjectModel {
        try NSManagedObjectModel.load(contentsOf: bundle.appendingPathComponent("\(version).xcdatamodel"))
    }

    @Test func reproducesTheHashesInAppleWrittenStores() throws {
        let cases: [(store: URL, model: NSManagedObjectModel)] = [
            (TestSupport.fixtures.appendingPathComponent("failedbanks/FailedBanksCD.sqlite"), try TestSupport.model("failedbanks", "FailedBanksCD")),
            (Self.apple.appendingPathComponent("bnr-testmodel/TestModel.sqlite"),
             try xcodeVersion(Self.apple.appendingPathComponent("bnr-testmodel/Sample.xcdatamodeld"), "TestModel")),
        ]
        var reproduced = 0
        for (store, model) in cases {
            let recorded = try #require(appleMetadata(store)[NSStoreModelVersionHashesKey] as? [String: Data])
            #expect(model.entityVersionHashesByName == recorded, "\(store.lastPathComponent)")
            reproduced += recorded.filter { model.entitiesByName[$0.key]?.versionHash == $0.value }.count
            let metadata = try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: NSSQLiteStoreType, at: store)
            #expect(model.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
        }
        #expect(reproduced == 4)
    }

    /// Every hash Xcode recorded in the compiled SwiftGen model's VersionInfo.plist, for both
    /// versions: abstract and sub-entities, derived attributes (`@count`, `now()`, `canonical:`),
    /// ordered and many-to-many relationships, a uniqueness constraint, transient attributes and a
    /// fetched property (neither hashed).
    @Test func reproducesTheHashesXcodeRecordedInACompiledModel() throws {
        let info = Self.apple.appendingPathComponent("swiftgen-momd/Model.momd/VersionInfo.plist")
        let plist = try #require(try PropertyListSerialization.propertyList(from: Data(contentsOf: info), format: nil) as? [String: Any])
        let versions = try #require(plist["NSManagedObjectModel_VersionHashes"] as? [String: [String: Data]])
        #expect(versions.count == 2)
        var reproduced = 0
        for (version, recorded) in versions {
            let model = try xcodeVersion(TestSupport.modelURL("swiftgen-kitchensink", "Model"), version)
            for (entity, hash) in recorded {
                #expect(model.entitiesByName[entity]?.versionHash == hash, "\(version).\(entity)")
                if model.entitiesByName[entity]?.versionHash == hash { reproduced += 1 }
            }
            #expect(Set(model.entityVersionHashesByName.keys) == Set(recorded.keys))
        }
        #expect(reproduced == 11)
    }

    /// The model's `versionChecksum` equals the checksum Xcode recorded for a real app's model
    /// (20 entities, transformable and URI attributes, ordered to-many relationships, compound
    /// uniqueness constraints), so checksums pasted from Xcode's build log name our models.
    @Test func reproducesTheChecksumXcodeRecordedForAModelVersion() throws {
        let model = try NSManagedObjectModel.load(contentsOf: TestSupport.fixtures.appendingPathComponent("sceyt/SceytChatModelV3.xcdatamodel"))
        #expect(model.entities.count == 20)
        #expect(model.versionChecksum == "qU4TwYYuTfM7y1OKmqCAx5oYrDqyNsd9T5K5m4SCCqQ=")
    }

    /// A property's hash depends on what changes its storage, not on class names, user info,
    /// defaults or delete rules.
    @Test func propertyHashesFollowTheSchemaOnly() throws {
        func attribute(_ configure: (NSAttributeDescription) -> Void = { _ in }) -> Data {
            let attribute = NSAttributeDescription(name: "title", type: .stringAttributeType)
            configure(attribute)
            return attribute.versionHash
        }
        let base = attribute()
        #expect(attribute { $0.userInfo = ["a": "b"] } == base)
        #expect(attribute { $0.defaultValue = "x" } == base)
        #expect(attribute { $0.renamingIdentifier = "name" } == base)
        #expect(attribute { $0.isOptional = false } != base)
        #expect(attribute { $0.isTransient = true } != base)
        #expect(attribute { $0.versionHashModifier = "2" } != base)
        #expect(attribute { $0.attributeType = .binaryDataAttributeType } != base)
        #expect(attribute { $0.attributeType = .binaryDataAttributeType; $0.allowsExternalBinaryDataStorage = true }
                != attribute { $0.attributeType = .binaryDataAttributeType })
        #expect(attribute { $0.preservesValueInHistoryOnDeletion = true } != base)
    }

    /// A model built in code keeps its hashes once the model itself is gone (the relationship's
    /// destination and inverse are weak references).
    @Test func hashesOutliveTheModel() throws {
        var model: NSManagedObjectModel? = TestSupport.makeCompanyModel()
        let employee = try #require(model?.entitiesByName["Employee"])
        let department = try #require(employee.relationshipsByName["department"])
        let before = (employee.versionHash, department.versionHash)
        #expect(department.destinationEntity != nil)
        model = nil
        #expect(department.destinationEntity == nil, "the destination went with its model")
        #expect(department.versionHash == before.1)
        #expect(employee.versionHash == before.0)
    }

    /// A new store records Apple's metadata keys: the hashes Apple would record for the same
    /// model, their digest and checksum, the hashes version, version identifiers, the framework
    /// version and the auto-vacuum level; the UUID lives in Z_UUID as in Apple's stores.
    @Test func aNewStoreCarriesApplesMetadata() throws {
        let model = try TestSupport.model("failedbanks", "FailedBanksCD")
        let url = TestSupport.temporaryDirectory().appendingPathComponent("Banks.sqlite")
        let (coordinator, _) = try TestSupport.coordinator(model, url: url)
        let store = try #require(coordinator.persistentStores.first)
        let applesHashes = try appleMetadata(TestSupport.fixtures.appendingPathComponent("failedbanks/FailedBanksCD.sqlite"))[NSStoreModelVersionHashesKey] as? [String: Data]
        #expect(store.metadata[NSStoreModelVersionHashesKey] as? [String: Data] == applesHashes)
        _ = coordinator

        let written = try appleMetadata(url)
        #expect(written[NSStoreModelVersionHashesKey] as? [String: Data] == applesHashes)
        #expect(written["NSStoreModelVersionHashesVersion"] as? Int == 3)
        #expect(written[NSStoreTypeKey] as? String == "SQLite")
        #expect(written[NSStoreModelVersionIdentifiersKey] as? [String] == [""])
        #expect((written[NSPersistenceFrameworkVersionKey] as? Int ?? 0) >= 637)
        #expect(written["_NSAutoVacuumLevel"] as? String == "2")
        #expect(written[NSStoreUUIDKey] == nil)
        #expect(written[NSStoreModelVersionChecksumKey] as? String == model.versionChecksum)

        // The digest: SHA-512 over name ‖ hash in name order; the checksum: SHA-256 over the hashes.
        let hashes = try #require(applesHashes)
        let checksumInput = hashes.keys.sorted().flatMap { hashes[$0]! }
        #expect(model.versionChecksum == Data(SHA256Digest.hash(checksumInput)).base64EncodedString())
        let digestInput = hashes.keys.sorted().flatMap { Array($0.utf8) + hashes[$0]! }
        #expect(written["NSStoreModelVersionHashesDigest"] as? String == Data(SHA512Digest.hash(digestInput)).base64EncodedString())

        let queue = try DatabaseQueue(path: url.path)
        defer { try? queue.close() }
        let uuid = try queue.read { db in try String.fetchOne(db, sql: "SELECT Z_UUID FROM Z_METADATA") }
        #expect(uuid == store.identifier)
    }

    /// The digests behind the model digest and checksum, against FIPS 180-4 test vectors (one
    /// block, and lengths around the padding boundary).
    @Test func digestsMatchKnownVectors() {
        func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
        #expect(hex(SHA512Digest.hash(Array("abc".utf8))) == "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f")
        #expect(hex(SHA512Digest.hash([UInt8](repeating: 97, count: 111))) == "fa9121c7b32b9e01733d034cfc78cbf67f926c7ed83e82200ef86818196921760b4beff48404df811b953828274461673c68d04e297b0eb7b2b4d60fc6b566a2")
        #expect(hex(SHA512Digest.hash([UInt8](repeating: 97, count: 112))) == "c01d080efd492776a1c43bd23dd99d0a2e626d481e16782e75d54c2503b5dc32bd05f0f1ba33e568b88fd2d970929b719ecbb152f58f130a407c8830604b70ca")
        #expect(hex(SHA512Digest.hash([UInt8](repeating: 97, count: 1000))) == "67ba5535a46e3f86dbfbed8cbbaf0125c76ed549ff8b0b9e03e0c88cf90fa634fa7b12b47d77b694de488ace8d9a65967dc96df599727d3292a8d9d447709c97")
    }

    /// Core Data's rule: hashes version above 3 or no hashes refuse, a different entity count
    /// refuses, version 3 compares every hash, below 3 only names.
    @Test func compatibilityFollowsCoreDatasRule() throws {
        let model = try TestSupport.model("failedbanks", "FailedBanksCD")
        let hashes = model.entityVersionHashesByName
        func compatible(_ metadata: [String: Any]) -> Bool {
            model.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata)
        }
        let base: [String: Any] = [NSStoreModelVersionHashesKey: hashes, "NSStoreModelVersionHashesVersion": 3]
        #expect(compatible(base))
        #expect(!compatible([:]))
        var newer = base; newer["NSStoreModelVersionHashesVersion"] = 4
        #expect(!compatible(newer))
        var changed = hashes; changed["FailedBankInfo"] = Data(repeating: 1, count: 32)
        #expect(!compatible([NSStoreModelVersionHashesKey: changed, "NSStoreModelVersionHashesVersion": 3]))
        #expect(compatible([NSStoreModelVersionHashesKey: changed, "NSStoreModelVersionHashesVersion": 2]), "names only below 3")
        var extra = hashes; extra["Regulator"] = Data(repeating: 2, count: 32)
        #expect(!compatible([NSStoreModelVersionHashesKey: extra, "NSStoreModelVersionHashesVersion": 2]))
        #expect(NSManagedObjectModel.mergedModel(from: [], forStoreMetadata: base) == nil)
    }

    /// `mergedModel(from:forStoreMetadata:)` picks, among the bundles' model versions, the one
    /// whose hashes are those Apple recorded in a store (here the test bundle's fixtures, which
    /// hold many models, among them both versions of the Big Nerd Ranch model).
    @Test func theBundlesModelForAnAppleStoreIsFoundByHash() throws {
        let store = Self.apple.appendingPathComponent("bnr-testmodel/TestModel.sqlite")
        let metadata = try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: NSSQLiteStoreType, at: store)
        let found = try #require(NSManagedObjectModel.mergedModel(from: [Bundle.module], forStoreMetadata: metadata))
        #expect(Set(found.entitiesByName.keys) == ["Author", "Book"], "TestModel, not TestModel 2 (which adds Publisher)")
        #expect(found.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
    }

    /// A store written by an earlier OpenCoreData, which recorded hashes of its own, still opens
    /// with its model and then records Apple's; with another model it is refused.
    @Test func aStoreWithEarlierOpenCoreDataHashesIsUpgraded() throws {
        let model = try TestSupport.model("failedbanks", "FailedBanksCD")
        let url = TestSupport.temporaryDirectory().appendingPathComponent("Old.sqlite")
        do {
            let (coordinator, _) = try TestSupport.coordinator(model, url: url)
            let context = TestSupport.context(coordinator)
            NSEntityDescription.insertNewObject(forEntityName: "FailedBankInfo", into: context).setValue("Old Bank", forKey: "name")
            try context.save()
            try coordinator.remove(coordinator.persistentStores[0])
        }
        var old = try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: NSSQLiteStoreType, at: url)
        old[NSStoreModelVersionHashesKey] = Dictionary(uniqueKeysWithValues: model.entities.map { ($0.name!, LegacyVersionHasher.hash(of: $0)) })
        old["OpenCoreDataStoreVersion"] = 1
        for key in ["NSStoreModelVersionHashesDigest", NSStoreModelVersionChecksumKey] { old.removeValue(forKey: key) }
        try NSPersistentStoreCoordinator.setMetadata(old, forPersistentStoreOfType: NSSQLiteStoreType, at: url)
        #expect(!model.isConfiguration(withName: nil, compatibleWithStoreMetadata: [NSStoreModelVersionHashesKey: old[NSStoreModelVersionHashesKey]!]))

        let changed = try TestSupport.model("failedbanks", "FailedBanksCD")
        changed.entitiesByName["FailedBankInfo"]?.attributesByName["city"]?.isOptional = false
        let refused = try #require(throws: NSError.self) { _ = try TestSupport.coordinator(changed, url: url) }
        #expect(refused.code == NSPersistentStoreIncompatibleVersionHashError)

        let (coordinator, _) = try TestSupport.coordinator(model, url: url)
        #expect(try TestSupport.context(coordinator).count(for: NSFetchRequest<NSManagedObject>(entityName: "FailedBankInfo")) == 1)
        let upgraded = try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: NSSQLiteStoreType, at: url)
        #expect(upgraded[NSStoreModelVersionHashesKey] as? [String: Data] == model.entityVersionHashesByName)
        #expect(upgraded["OpenCoreDataStoreVersion"] as? Int == 2)
        #expect(upgraded[NSStoreModelVersionChecksumKey] as? String == model.versionChecksum)
    }

    /// A store Apple wrote with the same entities but a changed attribute is refused (134100), as
    /// Apple refuses it, even though every column the model needs is there; the file is untouched.
    @Test func anAppleStoreOfAChangedModelIsRefused() throws {
        let url = TestSupport.temporaryDirectory().appendingPathComponent("FailedBanksCD.sqlite")
        try FileManager.default.copyItem(at: TestSupport.fixtures.appendingPathComponent("failedbanks/FailedBanksCD.sqlite"), to: url)
        let model = try TestSupport.model("failedbanks", "FailedBanksCD")
        let city = try #require(model.entitiesByName["FailedBankInfo"]?.attributesByName["city"])
        city.isOptional = false
        let before = try TestSupport.snapshot(url.deletingLastPathComponent())
        let error = try #require(throws: NSError.self) { _ = try TestSupport.coordinator(model, url: url) }
        #expect(error.domain == NSCocoaErrorDomain)
        #expect(error.code == NSPersistentStoreIncompatibleVersionHashError)
        #expect(error.localizedDescription.contains("FailedBankInfo"))
        #expect(try TestSupport.snapshot(url.deletingLastPathComponent()) == before)
    }
}
