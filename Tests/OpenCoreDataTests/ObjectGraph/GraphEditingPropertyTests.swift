import Foundation
import OpenCoreData
import Testing

/// Random edits of every kind of relationship (one-to-many, many-to-many, ordered) with undo,
/// redo, rollback, refreshes, saves and deletions merged from another context, over the SQLite
/// store, checked after every step: each relationship agrees with its inverse and refers to no
/// deleted object, every save succeeds, and after it a new context reads from the store exactly
/// the graph the editing context shows (ordered relationships in their order).
///
/// `OPENCOREDATA_GRAPH_SEEDS` and `OPENCOREDATA_GRAPH_STEPS` make the run longer (default 30 runs
/// of 200 steps).
@Suite struct GraphEditingPropertyTests {
    static let seeds = Int(ProcessInfo.processInfo.environment["OPENCOREDATA_GRAPH_SEEDS"] ?? "") ?? 30
    static let steps = Int(ProcessInfo.processInfo.environment["OPENCOREDATA_GRAPH_STEPS"] ?? "") ?? 200

    @Test(arguments: 0..<seeds)
    func randomEditsOfEveryRelationshipKindKeepTheGraphConsistentAndSaved(_ seed: Int) throws {
        let (coordinator, _) = try TestSupport.coordinator(TestSupport.makeCompanyModel())
        let context = TestSupport.context(coordinator)
        var random = DifferentialTests.Generator(state: UInt64(seed) &* 104_729 &+ 5)
        for index in 1...3 {
            NSEntityDescription.insertNewObject(forEntityName: "Department", into: context).setValue("D\(index)", forKey: "name")
            NSEntityDescription.insertNewObject(forEntityName: "Project", into: context).setValue("P\(index)", forKey: "title")
        }
        try context.save()
        context.undoManager = UndoManager()
        let elsewhere = TestSupport.context(coordinator)

        var log: [String] = []
        for step in 0..<Self.steps {
            let graph = try Graph(context)
            let operation: String?
            switch random.int(0..<20) {
            case 0..<12: operation = Self.randomEdit(in: context, graph, random: &random)
            case 12, 13:
                context.processPendingChanges()
                context.undo()
                operation = "undo"
            case 14:
                context.processPendingChanges()
                context.redo()
                operation = "redo"
            case 15:
                context.rollback()
                operation = "rollback"
            case 16, 17:
                do {
                    try context.save()
                } catch {
                    Issue.record("seed \(seed) step \(step): the save failed: \(error) after \(log.suffix(20))")
                    return
                }
                let shown = try Graph(context).described
                let stored = try Graph(TestSupport.context(coordinator)).described
                guard stored == shown else {
                    let difference = "the store holds \(stored.subtracting(shown).sorted()) where the context shows \(shown.subtracting(stored).sorted())"
                    Issue.record("seed \(seed) step \(step): \(difference) after \(log.suffix(20))")
                    return
                }
                operation = "save"
            case 18:
                // Unchanged objects forget their values and loaded relationships.
                for object in graph.all where !object.hasChanges { context.refresh(object, mergeChanges: false) }
                operation = "refresh unchanged"
            default:
                operation = try UndoAcrossSavesTests.deleteOne("Employee", in: elsewhere, mergingInto: context, random: &random)
            }
            if let operation { log.append(operation) }
            if let disagreement = try Graph(context).inconsistency {
                Issue.record("seed \(seed) step \(step): \(disagreement) after \(log.suffix(20))")
                return
            }
        }
    }

    /// One random change of an attribute or a relationship, described; nil when there was
    /// nothing to change.
    static func randomEdit(in context: NSManagedObjectContext, _ graph: Graph, random: inout DifferentialTests.Generator) -> String? {
        let kind = random.int(0..<11)
        if kind == 0 || graph.employees.isEmpty {
            let employee = NSEntityDescription.insertNewObject(forEntityName: "Employee", into: context)
            employee.setValue("E\(random.int(0..<100))", forKey: "name")
            employee.setValue(random.pick(graph.departments + [nil]), forKey: "department")
            if !graph.projects.isEmpty, random.chance(50) { employee.mutableSetValue(forKey: "projects").add(random.pick(graph.projects)) }
            return "insert employee"
        }
        let employee = random.pick(graph.employees)
        switch kind {
        case 1:
            context.delete(employee)
            return "delete \(Graph.name(employee))"
        case 2:
            employee.setValue(random.pick(graph.departments + [nil]), forKey: "department")
            return "move \(Graph.name(employee))"
        case 3:
            guard !graph.projects.isEmpty else { return nil }
            let project = random.pick(graph.projects)
            membership(of: employee, in: project, random: &random).add()
            return "join \(Graph.name(employee)) to \(Graph.name(project))"
        case 4:
            let projects = Graph.sorted(employee.value(forKey: "projects") as? Set<NSManagedObject> ?? [])
            guard !projects.isEmpty else { return nil }
            let project = random.pick(projects)
            membership(of: employee, in: project, random: &random).remove()
            return "leave \(Graph.name(employee)) from \(Graph.name(project))"
        case 5:
            employee.setValue("E\(random.int(0..<100))", forKey: "name")
            return "rename \(Graph.name(employee))"
        case 6:
            let department = random.pick(graph.departments)
            let teams = department.mutableOrderedSetValue(forKey: "teams")
            let team = NSEntityDescription.insertNewObject(forEntityName: "Team", into: context)
            team.setValue("T\(random.int(0..<100))", forKey: "title")
            teams.insert(team, at: random.int(0..<(teams.count + 1)))
            return "insert team into \(Graph.name(department))"
        case 7:
            // Moves a team within its department's order.
            let department = random.pick(graph.departments)
            let teams = department.mutableOrderedSetValue(forKey: "teams")
            guard teams.count > 1 else { return nil }
            let from = random.int(0..<teams.count)
            switch random.int(0..<3) {
            case 0:
                let team = teams[from]
                teams.removeObject(at: from)
                teams.insert(team, at: random.int(0..<(teams.count + 1)))
            case 1:
                teams.moveObjects(at: IndexSet(integer: from), to: random.int(0..<teams.count))
            default:
                teams.exchangeObject(at: from, withObjectAt: random.int(0..<teams.count))
            }
            return "reorder \(Graph.name(department))"
        case 8:
            guard !graph.teams.isEmpty else { return nil }
            let team = random.pick(graph.teams)
            team.setValue(random.pick(graph.departments + [nil]), forKey: "department")
            return "move \(Graph.name(team))"
        case 9:
            guard !graph.teams.isEmpty else { return nil }
            let team = random.pick(graph.teams)
            context.delete(team)
            return "delete \(Graph.name(team))"
        default:
            if random.chance(30), !graph.projects.isEmpty {
                let project = random.pick(graph.projects)
                context.delete(project)
                return "delete \(Graph.name(project))"
            }
            NSEntityDescription.insertNewObject(forEntityName: "Project", into: context).setValue("P\(random.int(0..<100))", forKey: "title")
            return "insert project"
        }
    }

    /// An employee's membership of a project, edited from either side of the many-to-many
    /// relationship at random.
    static func membership(of employee: NSManagedObject, in project: NSManagedObject,
                           random: inout DifferentialTests.Generator) -> (add: () -> Void, remove: () -> Void) {
        let (set, other) = random.chance(50)
            ? (employee.mutableSetValue(forKey: "projects"), project)
            : (project.mutableSetValue(forKey: "members"), employee)
        return ({ set.add(other) }, { set.remove(other) })
    }

    /// The live (not deleted) objects of a context, each kind in the order of its ID, so that a
    /// seed replays whatever the process's hashing.
    struct Graph {
        /// Kept so the objects stay usable (a context's objects can't fire faults once it is gone).
        let context: NSManagedObjectContext
        let departments: [NSManagedObject]
        let employees: [NSManagedObject]
        let projects: [NSManagedObject]
        let teams: [NSManagedObject]
        var all: [NSManagedObject] { departments + employees + projects + teams }

        init(_ context: NSManagedObjectContext) throws {
            func live(_ entity: String) throws -> [NSManagedObject] {
                let request = NSFetchRequest<NSManagedObject>(entityName: entity)
                request.includesSubentities = false
                return Graph.sorted(try context.fetch(request))
            }
            self.context = context
            departments = try live("Department")
            employees = try live("Employee")
            projects = try live("Project")
            teams = try live("Team")
        }

        static func name(_ object: NSManagedObject) -> String {
            "\(object.entity.name!.prefix(1))#\(object.objectID.uriRepresentation().lastPathComponent)"
        }

        private func name(_ object: NSManagedObject) -> String { Graph.name(object) }

        static func sorted(_ objects: some Collection<NSManagedObject>) -> [NSManagedObject] {
            objects.sorted { name($0) < name($1) }
        }

        /// Every object with its values and relationships, as lines to compare.
        var described: Set<String> {
            func names(_ value: Any?) -> String {
                if let ordered = value as? NSOrderedSet { return ordered.array.map { name($0 as! NSManagedObject) }.joined(separator: ",") }
                return Graph.sorted(value as? Set<NSManagedObject> ?? []).map(name).joined(separator: ",")
            }
            func one(_ value: Any?) -> String { (value as? NSManagedObject).map(name) ?? "-" }
            var lines = Set<String>()
            for department in departments { lines.insert("\(name(department)) \(department.value(forKey: "name") ?? "") teams [\(names(department.value(forKey: "teams")))]") }
            for employee in employees {
                lines.insert("\(name(employee)) \(employee.value(forKey: "name") ?? "") in \(one(employee.value(forKey: "department"))) on [\(names(employee.value(forKey: "projects")))]")
            }
            for project in projects { lines.insert("\(name(project)) \(project.value(forKey: "title") ?? "") members [\(names(project.value(forKey: "members")))]") }
            for team in teams { lines.insert("\(name(team)) \(team.value(forKey: "title") ?? "") of \(one(team.value(forKey: "department")))") }
            return lines
        }

        /// The first relationship that disagrees with its inverse or refers to a deleted object,
        /// described; nil when there is none.
        var inconsistency: String? {
            func gone(_ object: NSManagedObject?) -> Bool { object.map { $0.isDeleted || $0.managedObjectContext == nil } ?? false }
            func members(_ object: NSManagedObject, _ key: String) -> [NSManagedObject] {
                let value = object.value(forKey: key)
                if let ordered = value as? NSOrderedSet { return ordered.array.map { $0 as! NSManagedObject } }
                return Graph.sorted(value as? Set<NSManagedObject> ?? [])
            }
            for department in departments {
                for employee in members(department, "employees") where gone(employee) || employee.value(forKey: "department") as? NSManagedObject !== department {
                    return "\(name(department)).employees holds \(name(employee)) (deleted: \(employee.isDeleted))"
                }
                for team in members(department, "teams") where gone(team) || team.value(forKey: "department") as? NSManagedObject !== department {
                    return "\(name(department)).teams holds \(name(team)) (deleted: \(team.isDeleted))"
                }
            }
            for employee in employees {
                if let department = employee.value(forKey: "department") as? NSManagedObject,
                   gone(department) || !members(department, "employees").contains(employee) {
                    return "\(name(employee)).department is \(name(department)), whose employees don't hold it"
                }
                for project in members(employee, "projects") where gone(project) || !members(project, "members").contains(employee) {
                    return "\(name(employee)).projects holds \(name(project)), whose members don't hold it (deleted: \(project.isDeleted))"
                }
            }
            for project in projects {
                for employee in members(project, "members") where gone(employee) || !members(employee, "projects").contains(project) {
                    return "\(name(project)).members holds \(name(employee)), whose projects don't hold it (deleted: \(employee.isDeleted))"
                }
            }
            for team in teams {
                if let department = team.value(forKey: "department") as? NSManagedObject,
                   gone(department) || !members(department, "teams").contains(team) {
                    return "\(name(team)).department is \(name(department)), whose teams don't hold it"
                }
            }
            return nil
        }
    }
}
