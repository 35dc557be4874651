import Foundation
import OpenCoreData

/// Shared helpers for the test suite.
enum TestSupport {
    /// The directory of the test fixtures (copied models and stores; see Fixtures/NOTICE.md).
    static let fixtures: URL = {
        if let url = Bundle.module.url(forResource: "Fixtures", withExtension: nil) { return url }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
    }()

    /// An executable product of this package, beside the test bundle in the build folder (of the
    /// configuration the tests were built in).
    static func builtExecutable(_ name: String) -> URL {
        var directory = Bundle.module.bundleURL.deletingLastPathComponent()
        if !FileManager.default.fileExists(atPath: directory.appendingPathComponent(name).path) {
            directory = Bundle.main.bundleURL
        }
        return directory.appendingPathComponent(name)
    }

    /// The bytes the C allocator gives an object's block (glibc's `malloc_usable_size`); nil where
    /// there is no such function.
    static func allocatedSize(of object: AnyObject) -> Int? {
        #if os(Linux)
        guard let handle = dlopen(nil, RTLD_NOW) else { return nil }
        defer { dlclose(handle) }
        guard let symbol = dlsym(handle, "malloc_usable_size") else { return nil }
        let usableSize = unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutableRawPointer?) -> Int).self)
        return usableSize(Unmanaged.passUnretained(object).toOpaque())
        #else
        return nil
        #endif
    }

    /// A new empty directory under the temporary directory.
    static func temporaryDirectory() -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("ocd-tests-\(UUID().uuidString)", isDirectory: true)
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// The bytes of every file in a directory, by name (to check that nothing was written).
    static func snapshot(_ directory: URL) throws -> [String: Data] {
        var files: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
            files[name] = FileManager.default.contents(atPath: directory.appendingPathComponent(name).path)
        }
        return files
    }

    /// Loads a fixture model by folder and bundle name.
    static func model(_ folder: String, _ name: String) throws -> NSManagedObjectModel {
        try NSManagedObjectModel.load(contentsOf: modelURL(folder, name))
    }

    /// The URL of a fixture model bundle (the World Cup model is a top-level resource, so that
    /// `NSPersistentContainer(name:)` can find it).
    static func modelURL(_ folder: String, _ name: String) -> URL {
        if folder == "worldcup", let url = Bundle.module.url(forResource: name, withExtension: "xcdatamodeld") { return url }
        return fixtures.appendingPathComponent(folder).appendingPathComponent("\(name).xcdatamodeld")
    }

    /// A model built in code: Company ←→> Department ←→> Employee (with Manager a subentity of
    /// Employee), a many-to-many Employee ↔ Project, an ordered Department.teams, and every attribute type.
    static func makeCompanyModel() -> NSManagedObjectModel {
        let company = NSEntityDescription(name: "Company", className: "NSManagedObject")
        let department = NSEntityDescription(name: "Department", className: "NSManagedObject")
        let employee = NSEntityDescription(name: "Employee", className: "NSManagedObject")
        let manager = NSEntityDescription(name: "Manager", className: "NSManagedObject")
        let project = NSEntityDescription(name: "Project", className: "NSManagedObject")
        let team = NSEntityDescription(name: "Team", className: "NSManagedObject")

        let companyDepartments = NSRelationshipDescription(name: "departments", destination: department, toMany: true, deleteRule: .cascadeDeleteRule)
        let departmentCompany = NSRelationshipDescription(name: "company", destination: company)
        let departmentEmployees = NSRelationshipDescription(name: "employees", destination: employee, toMany: true, deleteRule: .nullifyDeleteRule)
        let employeeDepartment = NSRelationshipDescription(name: "department", destination: department)
        let employeeProjects = NSRelationshipDescription(name: "projects", destination: project, toMany: true)
        let projectMembers = NSRelationshipDescription(name: "members", destination: employee, toMany: true)
        let departmentTeams = NSRelationshipDescription(name: "teams", destination: team, toMany: true, deleteRule: .cascadeDeleteRule, ordered: true)
        let teamDepartment = NSRelationshipDescription(name: "department", destination: department)
        let managerReports = NSRelationshipDescription(name: "reports", destination: employee, toMany: true, deleteRule: .denyDeleteRule)
        let employeeBoss = NSRelationshipDescription(name: "boss", destination: manager)

        pair(companyDepartments, departmentCompany)
        pair(departmentEmployees, employeeDepartment)
        pair(employeeProjects, projectMembers)
        pair(departmentTeams, teamDepartment)
        pair(managerReports, employeeBoss)

        let name = NSAttributeDescription(name: "name", type: .stringAttributeType, isOptional: false)
        company.properties = [name, NSAttributeDescription(name: "founded", type: .dateAttributeType), companyDepartments]
        department.properties = [NSAttributeDescription(name: "name", type: .stringAttributeType, isOptional: false),
                                 NSAttributeDescription(name: "budget", type: .decimalAttributeType),
                                 departmentCompany, departmentEmployees, departmentTeams]
        let salary = NSAttributeDescription(name: "salary", type: .integer64AttributeType, isOptional: true, defaultValue: Int64(1000))
        salary.setValueConstraints(minimum: 0, maximum: 1_000_000)
        let email = NSAttributeDescription(name: "email", type: .stringAttributeType)
        email.setValueConstraints(minimum: nil, maximum: nil, regularExpression: "[^@]+@[^@]+")
        let transient = NSAttributeDescription(name: "scratch", type: .stringAttributeType)
        transient.isTransient = true
        employee.properties = [
            NSAttributeDescription(name: "name", type: .stringAttributeType, isOptional: false),
            salary, email, transient,
            NSAttributeDescription(name: "age", type: .integer16AttributeType),
            NSAttributeDescription(name: "level", type: .integer32AttributeType),
            NSAttributeDescription(name: "rating", type: .doubleAttributeType),
            NSAttributeDescription(name: "score", type: .floatAttributeType),
            NSAttributeDescription(name: "active", type: .booleanAttributeType, isOptional: true, defaultValue: true),
            NSAttributeDescription(name: "hired", type: .dateAttributeType),
            NSAttributeDescription(name: "photo", type: .binaryDataAttributeType),
            NSAttributeDescription(name: "badge", type: .UUIDAttributeType),
            NSAttributeDescription(name: "homepage", type: .URIAttributeType),
            NSAttributeDescription(name: "tags", type: .transformableAttributeType),
            employeeDepartment, employeeProjects, employeeBoss,
        ]
        manager.properties = [NSAttributeDescription(name: "bonus", type: .integer64AttributeType), managerReports]
        employee.subentities = [manager]
        project.properties = [NSAttributeDescription(name: "title", type: .stringAttributeType), projectMembers]
        team.properties = [NSAttributeDescription(name: "title", type: .stringAttributeType), teamDepartment]

        let model = NSManagedObjectModel()
        model.entities = [company, department, employee, manager, project, team]
        return model
    }

    /// A fresh SQLite store of the SwiftGen kitchen-sink model (an Xcode model using nearly every
    /// model feature), with a context on it.
    static func kitchenSink() throws -> (model: NSManagedObjectModel, coordinator: NSPersistentStoreCoordinator, context: NSManagedObjectContext) {
        let model = try model("swiftgen-kitchensink", "Model")
        let (coordinator, _) = try coordinator(model)
        return (model, coordinator, context(coordinator))
    }

    /// A new `MainEntity` (or subentity) of the kitchen-sink model with its required values set.
    static func insertKitchenSinkObject(_ entityName: String = "MainEntity", into context: NSManagedObjectContext) -> NSManagedObject {
        let object = NSEntityDescription.insertNewObject(forEntityName: entityName, into: context)
        object.setValue("required", forKey: "string")
        object.setValue(true, forKey: "boolean")
        return object
    }

    /// Options for automatic lightweight migration, with the earlier model versions to search.
    static func migrating(from sourceModels: [NSManagedObjectModel] = []) -> [AnyHashable: Any] {
        var options: [AnyHashable: Any] = [NSMigratePersistentStoresAutomaticallyOption: true, NSInferMappingModelAutomaticallyOption: true]
        if !sourceModels.isEmpty { options[OCDMigrationSourceModelsOptionKey] = sourceModels }
        return options
    }

    /// Makes two relationships each other's inverse.
    static func pair(_ a: NSRelationshipDescription, _ b: NSRelationshipDescription) {
        a.inverseRelationship = b
        b.inverseRelationship = a
    }

    /// A relationship from `source` named `name` and its inverse `inverseName`, made together:
    /// `toMany` and `inverseToMany` say which sides are to-many.
    static func relationships(_ name: String, from source: NSEntityDescription, toMany: Bool = false,
                              inverse inverseName: String, to destination: NSEntityDescription, inverseToMany: Bool = false) -> (NSRelationshipDescription, NSRelationshipDescription) {
        let forward = NSRelationshipDescription(name: name, destination: destination, toMany: toMany)
        let backward = NSRelationshipDescription(name: inverseName, destination: source, toMany: inverseToMany)
        pair(forward, backward)
        return (forward, backward)
    }

    /// A coordinator with one store of a type (in a fresh directory for file stores).
    static func coordinator(_ model: NSManagedObjectModel, type: String = NSSQLiteStoreType, url: URL? = nil,
                            options: [AnyHashable: Any]? = nil) throws -> (NSPersistentStoreCoordinator, URL?) {
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        let storeURL = url ?? (type == NSInMemoryStoreType ? nil : temporaryDirectory().appendingPathComponent("Test.\(type == NSSQLiteStoreType ? "sqlite" : "store")"))
        try coordinator.addPersistentStore(ofType: type, configurationName: nil, at: storeURL, options: options)
        return (coordinator, storeURL)
    }

    /// A context (see `context(_:)`) on a copy of Apple's Failed Banks store (in a fresh directory), with
    /// the copy's URL.
    static func failedBanksCopy() throws -> (context: NSManagedObjectContext, url: URL) {
        let url = temporaryDirectory().appendingPathComponent("FailedBanksCD.sqlite")
        try FileManager.default.copyItem(at: fixtures.appendingPathComponent("failedbanks/FailedBanksCD.sqlite"), to: url)
        let (coordinator, _) = try coordinator(try model("failedbanks", "FailedBanksCD"), url: url)
        return (context(coordinator), url)
    }

    /// A context on a coordinator. The default, a confinement context, is for the thread that
    /// calls this: a synchronous test runs on one thread of Swift Testing's pool, never on the
    /// main thread (the suite runs with concurrency debugging on, which traps on any other use).
    /// `@MainActor` tests that await take a main-queue context: the main actor's jobs may run on
    /// different threads, but always on the main queue. Tests that hop threads otherwise make a
    /// private-queue context and use it through `perform`.
    static func context(_ coordinator: NSPersistentStoreCoordinator,
                        concurrencyType: NSManagedObjectContext.ConcurrencyType = .confinementConcurrencyType) -> NSManagedObjectContext {
        let context = NSManagedObjectContext(concurrencyType: concurrencyType)
        context.persistentStoreCoordinator = coordinator
        return context
    }

    /// A context (see `context(_:concurrencyType:)`) over a new in-memory store of the company model.
    static func companyContext(_ concurrencyType: NSManagedObjectContext.ConcurrencyType = .confinementConcurrencyType) throws -> NSManagedObjectContext {
        context(try coordinator(makeCompanyModel(), type: NSInMemoryStoreType).0, concurrencyType: concurrencyType)
    }
}
