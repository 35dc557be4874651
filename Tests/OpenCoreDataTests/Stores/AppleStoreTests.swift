import Foundation
import GRDB
import OpenCoreData
import Testing

/// The Failed Banks store was written by Apple's Core Data (framework version 320).
@Suite struct AppleStoreTests {
    /// A copy of the Apple-written store, alone in a new directory.
    private func copyOfStore() throws -> URL {
        let url = TestSupport.temporaryDirectory().appendingPathComponent("FailedBanksCD.sqlite")
        try FileManager.default.copyItem(at: TestSupport.fixtures.appendingPathComponent("failedbanks/FailedBanksCD.sqlite"), to: url)
        return url
    }

    private func openCopy() throws -> (NSManagedObjectContext, URL) {
        let url = try copyOfStore()
        let model = try TestSupport.model("failedbanks", "FailedBanksCD")
        let (coordinator, _) = try TestSupport.coordinator(model, url: url)
        return (TestSupport.context(coordinator), url)
    }

    /// The CSV the store was built from: name, city, state, cert (stored as zip), closing date.
    private func csvRows() throws -> [[String]] {
        let text = try String(contentsOf: TestSupport.fixtures.appendingPathComponent("failedbanks/banklist.csv"), encoding: .utf8)
        return text.split(whereSeparator: \.isNewline).dropFirst().map { line in
            var fields: [String] = []
            var field = ""
            var quoted = false
            for character in line {
                if character == "\"" { quoted.toggle() } else if character == "," && !quoted { fields.append(field); field = "" } else { field.append(character) }
            }
            fields.append(field)
            return fields
        }
    }

    @Test func readsAllBanksWithDetails() throws {
        let (context, _) = try openCopy()
        let request = NSFetchRequest<NSManagedObject>(entityName: "FailedBankInfo")
        request.sortDescriptors = [NSSortDescriptor(key: "name", ascending: true)]
        let banks = try context.fetch(request)
        #expect(banks.count == 233)
        #expect(try context.count(for: NSFetchRequest<NSManagedObject>(entityName: "FailedBankDetails")) == 233)

        let csv = try csvRows()
        #expect(csv.count == 233)
        let byName = Dictionary(csv.map { ($0[0] + "|" + $0[1], $0) }, uniquingKeysWith: { first, _ in first })
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "d-MMM-yy"
        var matched = 0
        for bank in banks {
            #expect(bank.isFault)
            let name = try #require(bank.value(forKey: "name") as? String)
            let city = try #require(bank.value(forKey: "city") as? String)
            let details = try #require(bank.value(forKey: "details") as? NSManagedObject)
            #expect(details.value(forKey: "info") as? NSManagedObject === bank, "inverse of details")
            let closeDate = try #require(details.value(forKey: "closeDate") as? Date)
            let zip = try #require(details.value(forKey: "zip") as? Int32)
            guard let row = byName[name + "|" + city] else { continue }
            matched += 1
            #expect(bank.value(forKey: "state") as? String == row[2])
            #expect(String(zip) == row[3])
            #expect(formatter.string(from: closeDate) == row[4], "\(name) close date")
        }
        #expect(matched >= 230)
    }

    /// Opening Apple's store and reading all of it changes nothing in the file but what WAL mode
    /// changes in SQLite's 100-byte header (Apple's Core Data opens a store in WAL mode too): no
    /// metadata rewritten, no tables added, no page touched.
    @Test func readingLeavesTheFileAsAppleWroteIt() throws {
        let url = try copyOfStore()
        let original = try Data(contentsOf: url)
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: try TestSupport.model("failedbanks", "FailedBanksCD"))
        let store = try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url, options: nil)
        let context = TestSupport.context(coordinator)
        let banks = try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "FailedBankInfo"))
        #expect(banks.count > 200)
        for bank in banks { _ = bank.value(forKeyPath: "details.closeDate") }
        try coordinator.remove(store)
        let reread = try Data(contentsOf: url)
        #expect(reread.count == original.count)
        #expect(reread.dropFirst(100) == original.dropFirst(100), "the Apple-written file changed though nothing was saved")
        #expect(reread.prefix(18) == original.prefix(18))
    }

    @Test func firstBankIsExact() throws {
        let (context, _) = try openCopy()
        let request = NSFetchRequest<NSManagedObject>(entityName: "FailedBankDetails")
        request.predicate = NSPredicate(format: "info.name == %@", "Desert Hills Bank")
        let details = try #require(try context.fetch(request).first)
        #expect(details.value(forKey: "zip") as? Int32 == 57060)
        #expect((details.value(forKey: "closeDate") as? Date)?.timeIntervalSinceReferenceDate == 291254400)
        #expect(details.value(forKeyPath: "info.city") as? String == "Phoenix")
        #expect(details.objectID.uriRepresentation().absoluteString == "x-coredata://E51F430B-02F4-42D5-9886-DDC3CA5ED8F4/FailedBankDetails/p1")
        let metadata = try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: NSSQLiteStoreType, at: TestSupport.fixtures.appendingPathComponent("failedbanks/FailedBanksCD.sqlite"))
        #expect(metadata[NSStoreUUIDKey] as? String == "E51F430B-02F4-42D5-9886-DDC3CA5ED8F4")
        #expect(metadata[NSPersistenceFrameworkVersionKey] as? Int == 320)
        #expect((metadata[NSStoreModelVersionHashesKey] as? [String: Data])?.count == 2)
    }

    @Test func sortedByCloseDateThroughToOne() throws {
        let (context, _) = try openCopy()
        let request = NSFetchRequest<NSManagedObject>(entityName: "FailedBankInfo")
        request.sortDescriptors = [NSSortDescriptor(key: "details.closeDate", ascending: false), NSSortDescriptor(key: "name", ascending: true)]
        request.fetchLimit = 20
        let banks = try context.fetch(request)
        #expect(banks.count == 20)
        let dates = banks.compactMap { $0.value(forKeyPath: "details.closeDate") as? Date }
        #expect(dates == dates.sorted(by: >))
    }

    @Test func writesBackInTheSameLayout() throws {
        let (context, url) = try openCopy()
        let info = NSEntityDescription.insertNewObject(forEntityName: "FailedBankInfo", into: context)
        info.setValue("OpenCoreData Bank", forKey: "name")
        let details = NSEntityDescription.insertNewObject(forEntityName: "FailedBankDetails", into: context)
        details.setValue(Int32(12345), forKey: "zip")
        details.setValue(info, forKey: "info")
        try context.save()
        #expect(info.objectID.uriRepresentation().absoluteString.hasSuffix("/FailedBankInfo/p234"))
        let queue = try DatabaseQueue(path: url.path)
        try queue.read { db in
            #expect(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM ZFAILEDBANKINFO") == 234)
            #expect(try Int.fetchOne(db, sql: "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'FailedBankInfo'") == 234)
            let row = try #require(try Row.fetchOne(db, sql: "SELECT Z_ENT, Z_OPT, ZDETAILS, ZNAME FROM ZFAILEDBANKINFO WHERE Z_PK = 234"))
            #expect(row["Z_ENT"] as Int == 2)
            #expect(row["Z_OPT"] as Int == 1)
            #expect(row["ZDETAILS"] as Int == 234)
            #expect(row["ZNAME"] as String == "OpenCoreData Bank")
            #expect(try String.fetchOne(db, sql: "PRAGMA journal_mode") == "wal")
        }
    }

    /// A later version of the Failed Banks model: the bank gains a `website`, and a new entity
    /// `Regulator` appears.
    private func laterVersion() throws -> NSManagedObjectModel {
        let model = try TestSupport.model("failedbanks", "FailedBanksCD")
        let info = try #require(model.entitiesByName["FailedBankInfo"])
        info.properties = info.properties + [NSAttributeDescription(name: "website", type: .stringAttributeType)]
        let regulator = NSEntityDescription(name: "Regulator", properties: [NSAttributeDescription(name: "name", type: .stringAttributeType)])
        model.entities = model.entities + [regulator]
        return model
    }

    /// An earlier version in which the bank had no `state`: the Apple-written store has a column
    /// this version would not make, so it is not the store's version.
    private func earlierVersion() throws -> NSManagedObjectModel {
        let model = try TestSupport.model("failedbanks", "FailedBanksCD")
        let info = try #require(model.entitiesByName["FailedBankInfo"])
        info.properties = info.properties.filter { $0.name != "state" }
        return model
    }

    /// Automatic migration that may take the earlier version, or the store's own.
    private func migratingFromKnownVersions() throws -> [AnyHashable: Any] {
        TestSupport.migrating(from: [try earlierVersion(), try TestSupport.model("failedbanks", "FailedBanksCD")])
    }

    /// A store an Apple device wrote with an older model version migrates to the current one: its
    /// version is found by the entity version hashes Apple recorded, and every bank keeps its values.
    @Test func migratesAStoreAppleWroteWithAnOlderVersion() throws {
        let url = try copyOfStore()
        let directory = url.deletingLastPathComponent()
        let identifier = try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: NSSQLiteStoreType, at: url)[NSStoreUUIDKey] as? String

        // Without migration the later version can't open the file, which stays as it was.
        let before = try TestSupport.snapshot(directory)
        let refused = try #require(throws: NSError.self) { _ = try TestSupport.coordinator(try laterVersion(), url: url) }
        #expect(refused.code == NSPersistentStoreIncompatibleVersionHashError)
        #expect(try TestSupport.snapshot(directory) == before)

        let later = try laterVersion()
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: later)
        let options = try migratingFromKnownVersions()
        try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url, options: options)
        let context = TestSupport.context(coordinator)
        let banks = try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "FailedBankInfo"))
        #expect(banks.count == 233)
        #expect(banks.allSatisfy { $0.value(forKey: "website") == nil })
        #expect(banks.filter { ($0.value(forKey: "state") as? String)?.isEmpty == false }.count == 233, "the state column was kept: the earlier version was not taken for the store's")
        let request = NSFetchRequest<NSManagedObject>(entityName: "FailedBankDetails")
        request.predicate = NSPredicate(format: "info.name == %@", "Desert Hills Bank")
        let details = try #require(try context.fetch(request).first)
        #expect(details.value(forKey: "zip") as? Int32 == 57060)
        #expect(details.value(forKeyPath: "info.city") as? String == "Phoenix")
        #expect(details.objectID.uriRepresentation().absoluteString == "x-coredata://E51F430B-02F4-42D5-9886-DDC3CA5ED8F4/FailedBankDetails/p1",
                "object IDs stay valid: the store keeps its identifier and primary keys")
        #expect(try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: NSSQLiteStoreType, at: url)[NSStoreUUIDKey] as? String == identifier)

        // New objects of the new version save, and the migrated file opens again without migrating.
        let regulator = NSEntityDescription.insertNewObject(forEntityName: "Regulator", into: context)
        regulator.setValue("FDIC", forKey: "name")
        banks[0].setValue("https://example.org", forKey: "website")
        try context.save()
        let (reopened, _) = try TestSupport.coordinator(try laterVersion(), url: url)
        let fresh = TestSupport.context(reopened)
        #expect(try fresh.count(for: NSFetchRequest<NSManagedObject>(entityName: "Regulator")) == 1)
        let withWebsite = NSFetchRequest<NSManagedObject>(entityName: "FailedBankInfo")
        withWebsite.predicate = NSPredicate(format: "website != nil")
        #expect(try fresh.count(for: withWebsite) == 1)
    }

    /// An Apple-written store whose version hashes match no version found is not migrated:
    /// 134130, and the file is left untouched.
    @Test func anAppleStoreOfNoKnownVersionIsLeftAlone() throws {
        let url = try copyOfStore()
        let directory = url.deletingLastPathComponent()
        // Hashes no version of the model has (as if written by a version the app doesn't ship).
        let queue = try DatabaseQueue(path: url.path)
        try queue.write { db in
            let plist = try #require(try Data.fetchOne(db, sql: "SELECT Z_PLIST FROM Z_METADATA"))
            var metadata = try #require(try PropertyListSerialization.propertyList(from: plist, format: nil) as? [String: Any])
            var hashes = try #require(metadata["NSStoreModelVersionHashes"] as? [String: Data])
            hashes["FailedBankInfo"] = Data(repeating: 7, count: 32)
            metadata["NSStoreModelVersionHashes"] = hashes
            try db.execute(sql: "UPDATE Z_METADATA SET Z_PLIST = ?",
                           arguments: [try PropertyListSerialization.data(fromPropertyList: metadata, format: .binary, options: 0)])
        }
        try queue.close()
        let before = try TestSupport.snapshot(directory)
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: try laterVersion())
        let options = try migratingFromKnownVersions()
        let error = try #require(throws: NSError.self) {
            try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url, options: options)
        }
        #expect(error.code == NSMigrationMissingSourceModelError)
        #expect(error.localizedDescription.contains("version hashes match none"))
        #expect(try TestSupport.snapshot(directory) == before)
    }
}
