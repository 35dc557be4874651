import Foundation
import GRDB
@testable import OpenCoreDataCore
import OpenCoreData
import Testing

/// A store this project writes uses Core Data's layout, and bad files fail with Core Data's errors.
@Suite struct SQLiteLayoutTests {
    @Test func layoutMatchesCoreData() throws {
        let model = TestSupport.makeCompanyModel()
        let (coordinator, url) = try TestSupport.coordinator(model)
        let context = TestSupport.context(coordinator)
        let department = NSEntityDescription.insertNewObject(forEntityName: "Department", into: context)
        department.setValue("D", forKey: "name")
        let manager = NSEntityDescription.insertNewObject(forEntityName: "Manager", into: context)
        manager.setValue("M", forKey: "name")
        manager.setValue(Int64(5), forKey: "bonus")
        let hired = Date(timeIntervalSinceReferenceDate: 123_456.5)
        let badge = UUID()
        manager.setValue(hired, forKey: "hired")
        manager.setValue(badge, forKey: "badge")
        manager.setValue(department, forKey: "department")
        let project = NSEntityDescription.insertNewObject(forEntityName: "Project", into: context)
        project.setValue("P", forKey: "title")
        project.mutableSetValue(forKey: "members").add(manager)
        let team = NSEntityDescription.insertNewObject(forEntityName: "Team", into: context)
        department.mutableOrderedSetValue(forKey: "teams").add(team)
        try context.save()

        let queue = try DatabaseQueue(path: url!.path)
        try queue.read { db in
            let tables = try Set(String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'"))
            #expect(tables.isSuperset(of: ["ZCOMPANY", "ZDEPARTMENT", "ZEMPLOYEE", "ZPROJECT", "ZTEAM", "Z_PRIMARYKEY", "Z_METADATA"]))
            #expect(!tables.contains("ZMANAGER"), "one table per inheritance hierarchy")
            let columns = Set(try db.columns(in: "ZEMPLOYEE").map(\.name))
            #expect(columns.isSuperset(of: ["Z_PK", "Z_ENT", "Z_OPT", "ZNAME", "ZSALARY", "ZBONUS", "ZDEPARTMENT", "ZBOSS", "ZHIRED", "ZBADGE"]))
            #expect(!columns.contains("ZSCRATCH"), "transient attributes are not stored")
            #expect(Set(try db.columns(in: "ZTEAM").map(\.name)).contains("Z_FOK_DEPARTMENT"))
            let joinTables = tables.filter { $0.hasPrefix("Z_") && $0.hasSuffix("MEMBERS") || $0.hasSuffix("PROJECTS") }
            #expect(joinTables.count == 1, "one join table for the many-to-many relationship: \(tables.sorted())")
            let entities = try Row.fetchAll(db, sql: "SELECT Z_ENT, Z_NAME, Z_SUPER, Z_MAX FROM Z_PRIMARYKEY ORDER BY Z_ENT")
            let numbers = Dictionary(uniqueKeysWithValues: entities.map { ($0["Z_NAME"] as String, $0["Z_ENT"] as Int) })
            #expect(entities.first { $0["Z_NAME"] == "Manager" }?["Z_SUPER"] as Int? == numbers["Employee"])
            let row = try #require(try Row.fetchOne(db, sql: "SELECT Z_ENT, Z_OPT, ZHIRED, ZBADGE, ZDEPARTMENT FROM ZEMPLOYEE"))
            #expect(row["Z_ENT"] as Int == numbers["Manager"])
            #expect(row["Z_OPT"] as Int == 1)
            #expect(row["ZHIRED"] as Double == 123_456.5, "dates are seconds since 2001-01-01")
            #expect((row["ZBADGE"] as Data) == withUnsafeBytes(of: badge.uuid) { Data($0) }, "UUIDs are 16-byte blobs")
            #expect(row["ZDEPARTMENT"] as Int == 1)
            let metadata = try #require(try Row.fetchOne(db, sql: "SELECT Z_UUID, Z_PLIST FROM Z_METADATA"))
            let plist = try #require(try PropertyListSerialization.propertyList(from: metadata["Z_PLIST"] as Data, format: nil) as? [String: Any])
            #expect(plist[NSStoreUUIDKey] == nil, "the UUID lives in Z_UUID only, as in Apple's stores")
            #expect(context.persistentStoreCoordinator?.persistentStores.first?.identifier == metadata["Z_UUID"] as String)
            #expect(plist[NSStoreTypeKey] as? String == "SQLite")
            #expect((plist[NSStoreModelVersionHashesKey] as? [String: Data])?.count == 6)
            #expect(try String.fetchOne(db, sql: "PRAGMA journal_mode") == "wal")
        }
        // Updates bump Z_OPT.
        manager.setValue("M2", forKey: "name")
        try context.save()
        let version = try queue.read { db in try Int.fetchOne(db, sql: "SELECT Z_OPT FROM ZEMPLOYEE WHERE ZNAME = 'M2'") }
        #expect(version == 2)
        // Metadata is readable without opening the store, and the store reopens.
        let metadata = try NSPersistentStoreCoordinator.metadataForPersistentStore(ofType: NSSQLiteStoreType, at: url!)
        #expect(model.isConfiguration(withName: nil, compatibleWithStoreMetadata: metadata))
        let reopened = NSPersistentStoreCoordinator(managedObjectModel: model)
        try reopened.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url, options: nil)
        #expect(try TestSupport.context(reopened).count(for: NSFetchRequest<NSManagedObject>(entityName: "Employee")) == 1)
    }

    private func assertUntouched(_ url: URL, _ body: () throws -> Void) throws -> NSError {
        let before = try Data(contentsOf: url)
        let siblings = try FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path)
        let error = try #require(throws: NSError.self) { try body() }
        #expect(try Data(contentsOf: url) == before, "the file is left as it was")
        #expect(try FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path).sorted() == siblings.sorted(), "no file was created")
        return error
    }

    @Test func badFilesGiveCoreDataErrors() throws {
        let model = TestSupport.makeCompanyModel()
        let directory = TestSupport.temporaryDirectory()

        let text = directory.appendingPathComponent("text.sqlite")
        try Data("this is not a database, just some text that is long enough".utf8).write(to: text)
        let notSQLite = try assertUntouched(text) {
            try NSPersistentStoreCoordinator(managedObjectModel: model).addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: text, options: nil)
        }
        #expect(notSQLite.code == NSPersistentStoreInvalidTypeError)

        let plain = directory.appendingPathComponent("plain.sqlite")
        try DatabaseQueue(path: plain.path).write { try $0.execute(sql: "CREATE TABLE t (x)") }
        let notCoreData = try assertUntouched(plain) {
            try NSPersistentStoreCoordinator(managedObjectModel: model).addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: plain, options: nil)
        }
        #expect(notCoreData.code == NSPersistentStoreInvalidTypeError)

        // A valid header followed by garbage pages.
        let corrupt = directory.appendingPathComponent("corrupt.sqlite")
        var bytes = Array("SQLite format 3\0".utf8)
        bytes += [0x10, 0x00, 0x01, 0x01, 0x00, 0x40, 0x20, 0x20]
        bytes += (0..<8000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try Data(bytes).write(to: corrupt)
        let corruptError = try assertUntouched(corrupt) {
            try NSPersistentStoreCoordinator(managedObjectModel: model).addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: corrupt, options: nil)
        }
        #expect(corruptError.code == 259)

        // A store written with another model.
        let (_, storeURL) = try TestSupport.coordinator(try TestSupport.model("worldcup", "WorldCup"))
        let other = try #require(storeURL)
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: other.path + suffix) }
        let mismatch = try assertUntouched(other) {
            try NSPersistentStoreCoordinator(managedObjectModel: model).addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: other, options: nil)
        }
        #expect(mismatch.code == NSPersistentStoreIncompatibleVersionHashError)

        // Unknown store type.
        let unknown = try #require(throws: NSError.self) {
            try NSPersistentStoreCoordinator(managedObjectModel: model).addPersistentStore(ofType: "XML", configurationName: nil, at: text, options: nil)
        }
        #expect(unknown.code == NSPersistentStoreInvalidTypeError)
    }

    /// A large save writes its rows many to an INSERT statement: runs of one entity, of every
    /// column kind, with relationships to objects of the same save, and the remainders of runs
    /// that don't fill a statement, all read back exactly.
    @Test func rowsWrittenManyToAStatementReadBackExactly() throws {
        let (coordinator, url) = try TestSupport.coordinator(TestSupport.makeCompanyModel())
        let context = TestSupport.context(coordinator)
        let departments = (0..<16).map { index in
            let department = NSEntityDescription.insertNewObject(forEntityName: "Department", into: context)
            department.setValue("D\(index)", forKey: "name")
            return department
        }
        var expected: [String: (entity: String, salary: Int64?, rating: Double?, hired: Date?, photo: Data?, department: String?)] = [:]
        func employee(_ name: String, entity: String, index: Int) {
            let object = NSEntityDescription.insertNewObject(forEntityName: entity, into: context)
            object.setValue(name, forKey: "name")
            let salary: Int64? = index % 3 == 0 ? nil : Int64(index * 1000)
            let rating: Double? = index % 4 == 0 ? nil : Double(index) / 8
            let hired: Date? = index % 5 == 0 ? nil : Date(timeIntervalSinceReferenceDate: Double(index) * 86_400)
            let photo: Data? = index % 2 == 0 ? nil : Data([UInt8(index), 0, 255])
            let department = index % 7 == 0 ? nil : departments[index % departments.count]
            object.setValue(salary, forKey: "salary")
            object.setValue(rating, forKey: "rating")
            object.setValue(hired, forKey: "hired")
            object.setValue(photo, forKey: "photo")
            object.setValue(department, forKey: "department")
            expected[name] = (entity, salary, rating, hired, photo, department?.value(forKey: "name") as? String)
        }
        // Runs of 37 employees (two full statements and five rows), 20 managers (another entity of
        // the same table), 5 employees (fewer than a statement) and 16 departments (exactly one).
        for index in 0..<37 { employee("E\(index)", entity: "Employee", index: index) }
        for index in 37..<57 { employee("M\(index)", entity: "Manager", index: index) }
        for index in 57..<62 { employee("E\(index)", entity: "Employee", index: index) }
        let (_, log) = try SQLDebugLog.capturing { try context.save() }
        let inserts = log.filter { $0.hasPrefix("sql: INSERT INTO ZEMPLOYEE") }
        let multiRow = inserts.filter { $0.contains("), (") }.count
        #expect(multiRow == 3, "37 + 20 rows make three statements of 16 rows")
        #expect(inserts.count == 3 + 5 + 4 + 5)
        let departmentInserts = log.filter { $0.hasPrefix("sql: INSERT INTO ZDEPARTMENT") }
        #expect(departmentInserts.count == 1)

        let queue = try DatabaseQueue(path: url!.path)
        try queue.read { db in
            let numbers = Dictionary(uniqueKeysWithValues: try Row.fetchAll(db, sql: "SELECT Z_ENT, Z_NAME FROM Z_PRIMARYKEY").map { ($0["Z_NAME"] as String, $0["Z_ENT"] as Int) })
            let departmentNames = Dictionary(uniqueKeysWithValues: try Row.fetchAll(db, sql: "SELECT Z_PK, ZNAME FROM ZDEPARTMENT").map { ($0["Z_PK"] as Int64, $0["ZNAME"] as String) })
            #expect(departmentNames.count == 16)
            let rows = try Row.fetchAll(db, sql: "SELECT Z_PK, Z_ENT, Z_OPT, ZNAME, ZSALARY, ZRATING, ZHIRED, ZPHOTO, ZDEPARTMENT FROM ZEMPLOYEE")
            #expect(rows.count == 62)
            #expect(Set(rows.map { $0["Z_PK"] as Int64 }).count == 62, "each row its own primary key")
            for row in rows {
                let name: String = row["ZNAME"]
                let want = try #require(expected[name], "an unexpected row \(name)")
                #expect(row["Z_ENT"] as Int == numbers[want.entity], "\(name)")
                #expect(row["Z_OPT"] as Int == 1)
                #expect(row["ZSALARY"] as Int64? == want.salary, "\(name)")
                #expect(row["ZRATING"] as Double? == want.rating, "\(name)")
                #expect(row["ZHIRED"] as Double? == want.hired?.timeIntervalSinceReferenceDate, "\(name)")
                #expect(row["ZPHOTO"] as Data? == want.photo, "\(name)")
                #expect((row["ZDEPARTMENT"] as Int64?).flatMap { departmentNames[$0] } == want.department, "\(name)")
            }
        }
        let fresh = TestSupport.context(coordinator)
        let managers = try fresh.fetch(NSFetchRequest<NSManagedObject>(entityName: "Manager"))
        #expect(managers.count == 20)
        #expect(Set(managers.compactMap { $0.value(forKey: "name") as? String }) == Set((37..<57).map { "M\($0)" }))
    }

    @Test func aFailedSaveWritesNothing() throws {
        let model = TestSupport.makeCompanyModel()
        let (coordinator, url) = try TestSupport.coordinator(model)
        let context = TestSupport.context(coordinator)
        let person = NSEntityDescription.insertNewObject(forEntityName: "Employee", into: context)
        person.setValue("First", forKey: "name")
        try context.save()
        // A conflicting change from another context makes the next save fail in the store, after
        // this save has already inserted a row in the same transaction.
        let other = TestSupport.context(coordinator)
        try other.existingObject(with: person.objectID).setValue("Other", forKey: "name")
        try other.save()
        let newcomer = NSEntityDescription.insertNewObject(forEntityName: "Employee", into: context)
        newcomer.setValue("Newcomer", forKey: "name")
        person.setValue("Mine", forKey: "name")
        let error = try #require(throws: NSError.self) { try context.save() }
        #expect(error.code == NSManagedObjectMergeError)
        #expect(newcomer.objectID.isTemporaryID)
        #expect(context.insertedObjects.contains(newcomer))
        let queue = try DatabaseQueue(path: url!.path)
        let (rows, maximum) = try queue.read { db in
            (try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM ZEMPLOYEE"), try Int.fetchOne(db, sql: "SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_NAME = 'Employee'"))
        }
        #expect(rows == 1)
        #expect(maximum == 1)
    }

    /// `compoundIndexes`, the form of indexes before `NSFetchIndexDescription`, still makes
    /// indexes: each array of properties or names becomes an index of the store's table, and
    /// reads back as the index's properties.
    @Test func compoundIndexesBecomeIndexesOfTheTable() throws {
        let model = TestSupport.makeCompanyModel()
        let employee = try #require(model.entitiesByName["Employee"])
        let salary = try #require(employee.propertiesByName["salary"])
        let indexed: any CompoundIndexed = employee
        indexed.compoundIndexes = [["name", salary], ["hired"]]
        #expect(employee.indexes.map(\.name) == ["compoundIndex1", "compoundIndex2"])
        #expect(indexed.compoundIndexes.count == 2)
        #expect(indexed.compoundIndexes[0].last as? NSPropertyDescription === salary)

        let (coordinator, url) = try TestSupport.coordinator(model)
        #expect(indexed.compoundIndexes[0].compactMap { ($0 as? NSPropertyDescription)?.name } == ["name", "salary"],
                "names resolve to the entity's properties once the model is in use")
        try coordinator.remove(coordinator.persistentStores[0])
        let indexes = try DatabaseQueue(path: try #require(url).path).read { db in
            try [String: String](uniqueKeysWithValues: Row.fetchAll(db, sql: "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL").map { ($0["name"], $0["sql"]) })
        }
        #expect(indexes["Z_Employee_compoundIndex1"]?.hasSuffix("ON ZEMPLOYEE (ZNAME, ZSALARY)") == true, "\(indexes)")
        #expect(indexes["Z_Employee_compoundIndex2"]?.hasSuffix("ON ZEMPLOYEE (ZHIRED)") == true, "\(indexes)")
    }
}

/// `compoundIndexes` through a protocol, so that the test of the deprecated property compiles
/// without a deprecation warning.
protocol CompoundIndexed: AnyObject {
    var compoundIndexes: [[Any]] { get set }
}

extension NSEntityDescription: CompoundIndexed {}
