import Foundation
import OpenCoreData
import Testing
@testable import OpenCoreDataPostgreSQL

/// The PostgreSQL store through Core Data's API, on a real server: each test works in a schema of
/// its own, dropped at the end.
@Suite(.enabled(if: PostgreSQLTestServer.isAvailable, PostgreSQLTestServer.skipReason))
struct PostgreSQLStoreTests {
    /// A store URL in a schema of the test's own, and a way to drop it.
    final class Database {
        let schema = "ocd_\(UUID().uuidString.prefix(12).lowercased().replacingOccurrences(of: "-", with: ""))"
        var url: URL {
            var components = URLComponents(url: PostgreSQLTestServer.url!, resolvingAgainstBaseURL: false)!
            components.query = "schema=\(schema)"
            return components.url!
        }

        /// A coordinator with the store added (the model is shared, as one app's would be).
        func coordinator(_ model: NSManagedObjectModel, options: [AnyHashable: Any]? = nil) throws -> NSPersistentStoreCoordinator {
            let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
            try coordinator.addPersistentStore(ofType: NSPostgreSQLStoreType, configurationName: nil, at: url, options: options)
            return coordinator
        }

        func context(_ model: NSManagedObjectModel) throws -> NSManagedObjectContext {
            let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
            context.persistentStoreCoordinator = try coordinator(model)
            return context
        }

        /// Runs SQL in the schema directly, as another program would.
        func sql(_ statement: String) throws {
            let connection = try PostgreSQLConnection.open(PostgreSQLTestServer.location())
            defer { connection.close() }
            try connection.query("SET search_path TO \(schema)")
            try connection.query(statement)
        }

        deinit {
            if let connection = try? PostgreSQLConnection.open(PostgreSQLTestServer.location()) {
                _ = try? connection.query("DROP SCHEMA IF EXISTS \(schema) CASCADE")
                connection.close()
            }
        }
    }

    static let model = TestSupport.makeCompanyModel()

    @Test func anEntityComparisonPicksTheObjectsOfThatEntity() throws {
        let database = Database()
        let context = try database.context(Self.model)
        try context.performAndWait { try EntityPredicateTests.checkEntityComparisons(in: context, model: Self.model) }
    }

    /// Fills a context with a company: departments, employees (one a manager), projects, teams.
    static func fill(_ context: NSManagedObjectContext) throws {
        try context.performAndWait {
            let company = NSEntityDescription.insertNewObject(forEntityName: "Company", into: context)
            company.setValue("Initech", forKey: "name")
            company.setValue(Date(timeIntervalSinceReferenceDate: 86_400), forKey: "founded")
            var departments: [NSManagedObject] = []
            for (index, name) in ["Sales", "Engineering", "Accounts"].enumerated() {
                let department = NSEntityDescription.insertNewObject(forEntityName: "Department", into: context)
                department.setValue(name, forKey: "name")
                department.setValue(Decimal(string: "\(index + 1)000.25")!, forKey: "budget")
                department.setValue(company, forKey: "company")
                for title in ["Blue", "Red"] {
                    let team = NSEntityDescription.insertNewObject(forEntityName: "Team", into: context)
                    team.setValue("\(name) \(title)", forKey: "title")
                    department.mutableOrderedSetValue(forKey: "teams").add(team)
                }
                departments.append(department)
            }
            let boss = NSEntityDescription.insertNewObject(forEntityName: "Manager", into: context)
            boss.setValue("Lumbergh", forKey: "name")
            boss.setValue(Int64(9_000), forKey: "salary")
            boss.setValue(Int64(500), forKey: "bonus")
            boss.setValue(departments[1], forKey: "department")
            let projects = ["TPS", "Y2K"].map { title -> NSManagedObject in
                let project = NSEntityDescription.insertNewObject(forEntityName: "Project", into: context)
                project.setValue(title, forKey: "title")
                return project
            }
            let people: [(String, Int64, Int16, Bool)] = [("Peter", 4_000, 31, true), ("Milton", 1_000, 52, false), ("Samir", 4_500, 29, true),
                                                          ("Michael", 4_500, 30, true), ("Joanna", 2_000, 28, true), ("Bob", 7_000, 45, false)]
            for (index, (name, salary, age, active)) in people.enumerated() {
                let employee = NSEntityDescription.insertNewObject(forEntityName: "Employee", into: context)
                employee.setValue(name, forKey: "name")
                employee.setValue(salary, forKey: "salary")
                employee.setValue(age, forKey: "age")
                employee.setValue(Int32(index), forKey: "level")
                employee.setValue(Double(index) * 1.5, forKey: "rating")
                employee.setValue(Float(index) / 4, forKey: "score")
                employee.setValue(active, forKey: "active")
                employee.setValue(Date(timeIntervalSinceReferenceDate: Double(index) * 1_000), forKey: "hired")
                employee.setValue(Data([UInt8(index), 0, 255]), forKey: "photo")
                employee.setValue(UUID(uuidString: "00000000-0000-0000-0000-00000000000\(index)")!, forKey: "badge")
                employee.setValue(URL(string: "https://initech.example/\(name)")!, forKey: "homepage")
                employee.setValue("\(name.lowercased())@initech.example", forKey: "email")
                employee.setValue(departments[index % 3], forKey: "department")
                employee.setValue(boss, forKey: "boss")
                employee.mutableSetValue(forKey: "projects").add(projects[index % 2])
                if index == 0 { employee.mutableSetValue(forKey: "projects").add(projects[1]) }
            }
            try context.save()
        }
    }

    @Test func theStoreTypeIsPostgreSQL() {
        #expect(NSPostgreSQLStoreType == "PostgreSQL")
        #expect(NSPersistentStore.StoreType.postgreSQL.rawValue == "PostgreSQL")
    }

    @Test func objectsSavedThroughOneCoordinatorAreReadWholeThroughAnother() throws {
        let database = Database()
        try Self.fill(try database.context(Self.model))

        let reader = try database.context(Self.model)
        try reader.performAndWait {
            let request = NSFetchRequest<NSManagedObject>(entityName: "Employee")
            request.predicate = NSPredicate(format: "name == %@", "Peter")
            let peter = try #require(try reader.fetch(request).first)
            #expect(peter.value(forKey: "salary") as? Int64 == 4_000)
            #expect(peter.value(forKey: "age") as? Int16 == 31)
            #expect(peter.value(forKey: "level") as? Int32 == 0)
            #expect(peter.value(forKey: "active") as? Bool == true)
            #expect(peter.value(forKey: "score") as? Float == 0)
            #expect(peter.value(forKey: "hired") as? Date == Date(timeIntervalSinceReferenceDate: 0))
            #expect(peter.value(forKey: "photo") as? Data == Data([0, 0, 255]))
            #expect(peter.value(forKey: "badge") as? UUID == UUID(uuidString: "00000000-0000-0000-0000-000000000000"))
            #expect(peter.value(forKey: "homepage") as? URL == URL(string: "https://initech.example/Peter"))
            let department = try #require(peter.value(forKey: "department") as? NSManagedObject)
            #expect(department.value(forKey: "name") as? String == "Sales")
            #expect(department.value(forKey: "budget") as? Decimal == Decimal(string: "1000.25"))
            #expect((department.value(forKey: "company") as? NSManagedObject)?.value(forKey: "founded") as? Date == Date(timeIntervalSinceReferenceDate: 86_400))
            let teams = try #require(department.value(forKey: "teams") as? NSOrderedSet)
            #expect(teams.array.compactMap { ($0 as? NSManagedObject)?.value(forKey: "title") as? String } == ["Sales Blue", "Sales Red"])
            let projects = (peter.value(forKey: "projects") as? Set<NSManagedObject>) ?? []
            #expect(Set(projects.compactMap { $0.value(forKey: "title") as? String }) == ["TPS", "Y2K"])
            let boss = try #require(peter.value(forKey: "boss") as? NSManagedObject)
            #expect(boss.entity.name == "Manager")
            #expect(boss.value(forKey: "bonus") as? Int64 == 500)
            #expect((boss.value(forKey: "reports") as? Set<NSManagedObject>)?.count == 6)
            let members = try #require(projects.first { $0.value(forKey: "title") as? String == "Y2K" }?.value(forKey: "members") as? Set<NSManagedObject>)
            #expect(Set(members.compactMap { $0.value(forKey: "name") as? String }) == ["Peter", "Milton", "Michael", "Bob"])
            #expect(try reader.count(for: NSFetchRequest<NSManagedObject>(entityName: "Employee")) == 7)
            let plain = NSFetchRequest<NSManagedObject>(entityName: "Employee")
            plain.includesSubentities = false
            #expect(try reader.count(for: plain) == 6)
        }
    }

    /// The same requests against this store and a SQLite store with the same objects give the
    /// same objects in the same order.
    @Test func fetchesAnswerAsTheSQLiteStoreDoes() throws {
        let database = Database()
        try Self.fill(try database.context(Self.model))
        let server = try database.context(Self.model)
        let file = TestSupport.temporaryDirectory().appendingPathComponent("company.sqlite")
        let sqliteCoordinator = NSPersistentStoreCoordinator(managedObjectModel: Self.model)
        try sqliteCoordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: file)
        let sqlite = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        sqlite.persistentStoreCoordinator = sqliteCoordinator
        try Self.fill(sqlite)

        let cases: [(String, NSPredicate?, [NSSortDescriptor])] = [
            ("Employee", nil, [NSSortDescriptor(key: "name", ascending: true)]),
            ("Employee", NSPredicate(format: "salary >= 4000"), [NSSortDescriptor(key: "salary", ascending: false), NSSortDescriptor(key: "name", ascending: true)]),
            ("Employee", NSPredicate(format: "department.name == %@", "Engineering"), [NSSortDescriptor(key: "name", ascending: true)]),
            ("Employee", NSPredicate(format: "ANY projects.title == %@", "Y2K"), [NSSortDescriptor(key: "age", ascending: true)]),
            ("Employee", NSPredicate(format: "name BEGINSWITH[c] %@ OR active == NO", "m"), [NSSortDescriptor(key: "hired", ascending: false)]),
            ("Employee", NSPredicate(format: "email CONTAINS %@ AND age BETWEEN {29, 45}", "@initech"), [NSSortDescriptor(key: "rating", ascending: true)]),
            ("Department", NSPredicate(format: "employees.@count >= 2"), [NSSortDescriptor(key: "budget", ascending: false)]),
            ("Department", nil, [NSSortDescriptor(key: "name", ascending: true, selector: Selector("localizedStandardCompare:"))]),
            ("Team", NSPredicate(format: "department.company.name == %@", "Initech"), [NSSortDescriptor(key: "title", ascending: false)]),
            ("Employee", NSPredicate(format: "boss.bonus > 100 AND badge != nil"), [NSSortDescriptor(key: "department.name", ascending: true), NSSortDescriptor(key: "name", ascending: false)]),
        ]
        func names(_ context: NSManagedObjectContext, _ entity: String, _ predicate: NSPredicate?, _ sorts: [NSSortDescriptor], limit: Int = 0, offset: Int = 0) throws -> [String] {
            try context.performAndWait {
                let request = NSFetchRequest<NSManagedObject>(entityName: entity)
                request.predicate = predicate
                request.sortDescriptors = sorts
                request.fetchLimit = limit
                request.fetchOffset = offset
                let key = entity == "Employee" || entity == "Department" ? "name" : "title"
                return try context.fetch(request).map { $0.value(forKey: key) as? String ?? "?" }
            }
        }
        for (entity, predicate, sorts) in cases {
            let expected = try names(sqlite, entity, predicate, sorts)
            #expect(!expected.isEmpty, "\(entity) \(predicate?.predicateFormat ?? "all") matches nothing: a weak case")
            #expect(try names(server, entity, predicate, sorts) == expected, "\(entity) \(predicate?.predicateFormat ?? "all")")
            #expect(try names(server, entity, predicate, sorts, limit: 2, offset: 1) == Array(expected.dropFirst().prefix(2)))
        }
        // Counts and dictionaries.
        try server.performAndWait {
            let request = NSFetchRequest<NSDictionary>(entityName: "Employee")
            request.resultType = .dictionaryResultType
            request.propertiesToFetch = ["name", "salary"]
            request.predicate = NSPredicate(format: "salary > 4000")
            request.sortDescriptors = [NSSortDescriptor(key: "name", ascending: true)]
            let rows = try server.fetch(request)
            #expect(rows.map { $0["name"] as? String } == ["Bob", "Lumbergh", "Michael", "Samir"])
            #expect(rows.map { $0["salary"] as? Int64 } == [7_000, 9_000, 4_500, 4_500])
        }
    }

    @Test func updatesAndDeletesAreSavedAndSeenByAFreshCoordinator() throws {
        let database = Database()
        let writer = try database.context(Self.model)
        try Self.fill(writer)
        try writer.performAndWait {
            let request = NSFetchRequest<NSManagedObject>(entityName: "Employee")
            request.predicate = NSPredicate(format: "name IN %@", ["Milton", "Bob"])
            for employee in try writer.fetch(request) {
                if employee.value(forKey: "name") as? String == "Milton" {
                    writer.delete(employee)
                } else {
                    employee.setValue(Int64(7_500), forKey: "salary")
                    employee.setValue(nil, forKey: "email")
                }
            }
            try writer.save()
        }
        let reader = try database.context(Self.model)
        try reader.performAndWait {
            let request = NSFetchRequest<NSManagedObject>(entityName: "Employee")
            request.sortDescriptors = [NSSortDescriptor(key: "name", ascending: true)]
            let all = try reader.fetch(request)
            #expect(all.compactMap { $0.value(forKey: "name") as? String } == ["Bob", "Joanna", "Lumbergh", "Michael", "Peter", "Samir"])
            let bob = all[0]
            #expect(bob.value(forKey: "salary") as? Int64 == 7_500)
            #expect(bob.value(forKey: "email") == nil)
            let tps = try reader.fetch(NSFetchRequest<NSManagedObject>(entityName: "Project")).first { $0.value(forKey: "title") as? String == "Y2K" }
            #expect((tps?.value(forKey: "members") as? Set<NSManagedObject>)?.count == 3)
        }
    }

    @Test func aChangeSavedThroughAnotherCoordinatorIsAMergeConflict() throws {
        let database = Database()
        let first = try database.context(Self.model)
        try Self.fill(first)
        let second = try database.context(Self.model)
        func peter(_ context: NSManagedObjectContext) throws -> NSManagedObject {
            let request = NSFetchRequest<NSManagedObject>(entityName: "Employee")
            request.predicate = NSPredicate(format: "name == 'Peter'")
            return try #require(try context.fetch(request).first)
        }
        try first.performAndWait { _ = try peter(first).value(forKey: "salary") }
        try second.performAndWait {
            try peter(second).setValue(Int64(5_000), forKey: "salary")
            try second.save()
        }
        // The first context read Peter before the second saved: its save conflicts.
        let error = try first.performAndWait {
            try peter(first).setValue(Int64(6_000), forKey: "salary")
            return #expect(throws: NSError.self) { try first.save() }
        }
        #expect(error?.domain == NSCocoaErrorDomain && error?.code == 133020)
        #expect(error?.userInfo["conflictList"] as? [NSMergeConflict] != nil)
        // Nothing of the failed save reached the server.
        let reader = try database.context(Self.model)
        try reader.performAndWait {
            let salary = try peter(reader).value(forKey: "salary") as? Int64
            #expect(salary == 5_000)
        }
        // With a merge policy, the same save goes through.
        try first.performAndWait {
            first.mergePolicy = NSMergePolicy.mergeByPropertyObjectTrump
            try first.save()
        }
        let later = try database.context(Self.model)
        try later.performAndWait {
            let salary = try peter(later).value(forKey: "salary") as? Int64
            #expect(salary == 6_000)
        }
    }

    @Test func aFailedSaveWritesNothing() throws {
        let database = Database()
        let first = try database.context(Self.model)
        try Self.fill(first)
        let second = try database.context(Self.model)
        let request = NSFetchRequest<NSManagedObject>(entityName: "Project")
        try first.performAndWait { _ = try first.fetch(request).map { $0.value(forKey: "title") } }
        try second.performAndWait {
            for project in try second.fetch(request) { project.setValue("renamed", forKey: "title") }
            try second.save()
        }
        try first.performAndWait {
            let project = NSEntityDescription.insertNewObject(forEntityName: "Project", into: first)
            project.setValue("New", forKey: "title")
            for project in try first.fetch(request) where project.value(forKey: "title") as? String != "New" { project.setValue("mine", forKey: "title") }
            #expect(throws: NSError.self) { try first.save() }
        }
        let reader = try database.context(Self.model)
        try reader.performAndWait {
            let titles = try reader.fetch(request).compactMap { $0.value(forKey: "title") as? String }
            #expect(titles.sorted() == ["renamed", "renamed"])
        }
    }

    @Test func uniquenessConstraintsConflictOrMergeByPolicy() throws {
        let database = Database()
        let model = MergePolicyTests.makeModel()
        let first = try database.context(model)
        try first.performAndWait {
            let tag = NSEntityDescription.insertNewObject(forEntityName: "Tag", into: first)
            tag.setValue("red", forKey: "code")
            tag.setValue("Red", forKey: "label")
            try first.save()
        }
        let second = try database.context(model)
        let error = second.performAndWait {
            let again = NSEntityDescription.insertNewObject(forEntityName: "Tag", into: second)
            again.setValue("red", forKey: "code")
            again.setValue("Crimson", forKey: "label")
            return #expect(throws: NSError.self) { try second.save() }
        }
        #expect(error?.code == 133021, "a constraint conflict")
        try second.performAndWait {
            second.mergePolicy = NSMergePolicy.mergeByPropertyObjectTrump
            try second.save()
        }
        let reader = try database.context(model)
        try reader.performAndWait {
            let tags = try reader.fetch(NSFetchRequest<NSManagedObject>(entityName: "Tag"))
            #expect(tags.count == 1)
            #expect(tags.first?.value(forKey: "label") as? String == "Crimson")
        }
    }

    /// Another server inserts the same code between this save's check and its commit: the
    /// unique index holds this save's row until the other commits, then refuses it, and the save
    /// checks again and reports the conflict (or merges it, under a trump policy).
    @Test func aConstraintRaceWithAnotherServerIsAConflictNotADuplicate() throws {
        for policy in [NSMergePolicy.error, NSMergePolicy.mergeByPropertyObjectTrump] {
            let database = Database()
            let model = MergePolicyTests.makeModel()
            let context = try database.context(model)
            try context.performAndWait {
                let tag = NSEntityDescription.insertNewObject(forEntityName: "Tag", into: context)
                tag.setValue("blue", forKey: "code")
                try context.save()
            }
            let other = try PostgreSQLConnection.open(PostgreSQLTestServer.location())
            defer { other.close() }
            try other.query("SET search_path TO \(database.schema)")
            let entity = try #require(try other.run("SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'Tag'", []).first?.first)
            try other.query("BEGIN")
            try other.run("INSERT INTO ZTAG (Z_PK, Z_ENT, Z_OPT, ZCODE, ZLABEL) VALUES (1000, $1, 1, 'red', 'Scarlet')", [entity])
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.5) { _ = try? other.query("COMMIT") }
            let outcome: Result<Void, NSError> = context.performAndWait {
                context.mergePolicy = policy
                let tag = NSEntityDescription.insertNewObject(forEntityName: "Tag", into: context)
                tag.setValue("red", forKey: "code")
                tag.setValue("Crimson", forKey: "label")
                do { try context.save(); return .success(()) } catch { return .failure(error as NSError) }
            }
            let reader = try database.context(model)
            let reds = try reader.performAndWait {
                let request = NSFetchRequest<NSManagedObject>(entityName: "Tag")
                request.predicate = NSPredicate(format: "code == 'red'")
                return try reader.fetch(request).map { $0.value(forKey: "label") as? String }
            }
            if policy === NSMergePolicy.error {
                if case .failure(let error) = outcome { #expect(error.code == 133021) } else { Issue.record("saved a duplicate code") }
                #expect(reds == ["Scarlet"])
            } else {
                #expect((try? outcome.get()) != nil, "\(outcome)")
                #expect(reds == ["Crimson"], "the trump policy merged into the other server's row")
            }
        }
    }

    @Test func anUpdateToValuesAnotherObjectHoldsIsAConstraintError() throws {
        let database = Database()
        let context = try database.context(MergePolicyTests.makeModel())
        let error = try context.performAndWait {
            let red = NSEntityDescription.insertNewObject(forEntityName: "Tag", into: context)
            red.setValue("red", forKey: "code")
            let blue = NSEntityDescription.insertNewObject(forEntityName: "Tag", into: context)
            blue.setValue("blue", forKey: "code")
            try context.save()
            blue.setValue("red", forKey: "code")
            return #expect(throws: NSError.self) { try context.save() }
        }
        #expect(error?.code == 133021 && error?.domain == NSCocoaErrorDomain)
        let reader = try database.context(MergePolicyTests.makeModel())
        let codes = try reader.performAndWait {
            try reader.fetch(NSFetchRequest<NSManagedObject>(entityName: "Tag")).compactMap { $0.value(forKey: "code") as? String }.sorted()
        }
        #expect(codes == ["blue", "red"], "nothing written")
    }

    @Test func theStoreWinsUnderStoreTrumpAndTheRollbackPolicyKeepsItToo() throws {
        for policy in [NSMergePolicy.mergeByPropertyStoreTrump, NSMergePolicy.rollback, NSMergePolicy.overwrite] {
            let database = Database()
            let first = try database.context(Self.model)
            try Self.fill(first)
            let second = try database.context(Self.model)
            let request = NSFetchRequest<NSManagedObject>(entityName: "Project")
            request.predicate = NSPredicate(format: "title == 'TPS'")
            try first.performAndWait { _ = try first.fetch(request).first?.value(forKey: "title") }
            try second.performAndWait {
                try second.fetch(request).first?.setValue("TPS v2", forKey: "title")
                try second.save()
            }
            try first.performAndWait {
                first.mergePolicy = policy
                try first.fetch(NSFetchRequest<NSManagedObject>(entityName: "Project")).first { $0.value(forKey: "title") as? String == "TPS" }?
                    .setValue("TPS mine", forKey: "title")
                try first.save()
            }
            let reader = try database.context(Self.model)
            let titles = try reader.performAndWait { try reader.fetch(NSFetchRequest<NSManagedObject>(entityName: "Project")).compactMap { $0.value(forKey: "title") as? String }.sorted() }
            #expect(titles == [policy === NSMergePolicy.overwrite ? "TPS mine" : "TPS v2", "Y2K"], "\(policy.mergeType)")
        }
    }

    @Test func aStoreMadeWithAnotherModelIsRefusedWithCoreDataError() throws {
        let database = Database()
        try Self.fill(try database.context(Self.model))
        let other = TestSupport.makeCompanyModel()
        other.entities.first { $0.name == "Project" }!.properties.append(NSAttributeDescription(name: "deadline", type: .dateAttributeType))
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: other)
        let error = try #require(throws: NSError.self) { try coordinator.addPersistentStore(ofType: NSPostgreSQLStoreType, configurationName: nil, at: database.url) }
        #expect(error.domain == NSCocoaErrorDomain && error.code == 134100)
        #expect(coordinator.persistentStores.isEmpty)
    }

    @Test func tablesThatDoNotFitTheModelAreRefusedAndLeftAlone() throws {
        let database = Database()
        try Self.fill(try database.context(Self.model))
        try database.sql("ALTER TABLE ZPROJECT DROP COLUMN ZTITLE")
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: Self.model)
        let error = try #require(throws: NSError.self) { try coordinator.addPersistentStore(ofType: NSPostgreSQLStoreType, configurationName: nil, at: database.url) }
        #expect(error.domain == NSCocoaErrorDomain && error.code == 134020)
        #expect(error.localizedDescription.contains("ZPROJECT.ZTITLE"))
    }

    @Test func anUnreachableServerOrAWrongPasswordIsAnOpenError() throws {
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: Self.model)
        let unreachable = try #require(throws: NSError.self) {
            try coordinator.addPersistentStore(ofType: NSPostgreSQLStoreType, configurationName: nil, at: URL(string: "postgres://ocd:pw@127.0.0.1:1/ocd")!)
        }
        #expect(unreachable.domain == NSCocoaErrorDomain && unreachable.code == 134080)
        var components = URLComponents(url: PostgreSQLTestServer.url!, resolvingAgainstBaseURL: false)!
        components.password = "not-the-password"
        let refused = try #require(throws: NSError.self) {
            try coordinator.addPersistentStore(ofType: NSPostgreSQLStoreType, configurationName: nil, at: components.url!)
        }
        #expect(refused.code == 134080 && !refused.localizedDescription.contains("not-the-password"))
        #expect(coordinator.persistentStores.isEmpty)
    }
}
