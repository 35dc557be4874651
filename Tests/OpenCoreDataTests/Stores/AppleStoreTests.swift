import Foundation
import GRDB
import OpenCoreData
import Testing

/// The Failed Banks store was written by Apple's Core Data (framework version 320).
@Suite struct AppleStoreTests {
    private func openCopy() throws -> (NSManagedObjectContext, URL) {
        let directory = TestSupport.temporaryDirectory()
        let url = directory.appendingPathComponent("FailedBanksCD.sqlite")
        try FileManager.default.copyItem(at: TestSupport.fixtures.appendingPathComponent("failedbanks/FailedBanksCD.sqlite"), to: url)
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
}
