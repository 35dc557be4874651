// ClassResolutionProbe: a fresh process for the class-resolution tests, run in the build's own
// configuration (so optimized in the release test run). Each mode touches a store the way a
// program's first use might, before anything names an entity's class, and checks the class of the
// objects it gets back. Prints "ok <mode>" and exits 0, or a reason and exits 1.
//
//   ClassResolutionProbe undefined-classes <FailedBanksCD.xcdatamodeld> <store.sqlite>
//   ClassResolutionProbe first-touch <how> <WorldCup.xcdatamodeld> <store.sqlite>
//       how: controller | untyped-fetch | object-with | library-class
//   ClassResolutionProbe executable-class <representedClassName> <store.sqlite>
import Foundation
import OpenCoreData
import WorldCupKit

/// A class of this executable that the probe's own model names with and without a module prefix.
final class ProbeTeam: NSManagedObject {
    @Managed var teamName: String?
    @Managed var wins: Int32
}

/// A player of a team, first touched through a relationship fault.
final class ProbePlayer: NSManagedObject {}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("ClassResolutionProbe: \(message)\n".utf8))
    exit(1)
}

func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fail(message()) }
}

func container(model: URL, store: URL) -> NSPersistentContainer {
    guard let model = NSManagedObjectModel(contentsOf: model) else { fail("can't load the model at \(model.path)") }
    let container = NSPersistentContainer(name: "Probe", managedObjectModel: model)
    let description = NSPersistentStoreDescription(url: store)
    container.persistentStoreDescriptions = [description]
    var loadError: Error?
    container.loadPersistentStores { _, error in loadError = error }
    if let loadError { fail("can't load the store: \(loadError)") }
    return container
}

/// A model whose entities name classes nobody defines: fetches, inserts, object(with:) and a
/// controller give NSManagedObject instances (Apple logs and does the same).
func undefinedClasses(model: URL, store: URL) throws {
    let context = container(model: model, store: store).viewContext
    let fetched = try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "FailedBankInfo"))
    check(!fetched.isEmpty, "the store has no banks")
    check(type(of: fetched[0]) == NSManagedObject.self, "a fetched bank is a \(type(of: fetched[0]))")
    let inserted = NSEntityDescription.insertNewObject(forEntityName: "FailedBankDetails", into: context)
    inserted.setValue(Date(), forKey: "closeDate")
    inserted.setValue(fetched[0], forKey: "info")
    try context.save()
    let again = context.object(with: fetched[0].objectID)
    check(again === fetched[0], "object(with:) gave another instance")
    let request = NSFetchRequest<NSManagedObject>(entityName: "FailedBankInfo")
    request.sortDescriptors = [NSSortDescriptor(key: "state", ascending: true), NSSortDescriptor(key: "name", ascending: true)]
    request.fetchBatchSize = 20
    let controller = NSFetchedResultsController(fetchRequest: request, managedObjectContext: context, sectionNameKeyPath: "state", cacheName: nil)
    try controller.performFetch()
    check((controller.fetchedObjects?.count ?? 0) == fetched.count, "the controller has \(controller.fetchedObjects?.count ?? 0) banks")
    check(controller.object(at: IndexPath(item: 0, section: 0)).value(forKey: "name") is String, "a bank has no name")
}

/// The World Cup store, first touched in one of several ways; every Team must be a WorldCupKit.Team.
func firstTouch(_ how: String, model: URL, store: URL) throws {
    let context = container(model: model, store: store).viewContext
    let objects: [NSManagedObject]
    switch how {
    case "controller":
        let request = NSFetchRequest<NSManagedObject>(entityName: "Team")
        request.sortDescriptors = [NSSortDescriptor(key: "qualifyingZone", ascending: true), NSSortDescriptor(key: "teamName", ascending: true)]
        let controller = NSFetchedResultsController(fetchRequest: request, managedObjectContext: context, sectionNameKeyPath: "qualifyingZone", cacheName: nil)
        try controller.performFetch()
        objects = controller.fetchedObjects ?? []
    case "untyped-fetch":
        let request = NSFetchRequest<NSFetchRequestResult>(entityName: "Team")
        objects = try context.fetch(request).compactMap { $0 as? NSManagedObject }
    case "object-with":
        let request = NSFetchRequest<NSManagedObjectID>(entityName: "Team")
        request.resultType = .managedObjectIDResultType
        objects = try context.fetch(request).map { context.object(with: $0) }
    case "library-class":
        objects = try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Team"))
        check(objects.allSatisfy { $0 is WorldCupKit.Team }, "a team is a \(objects.first.map { "\(type(of: $0))" } ?? "?")")
        // Only now does the program name the class: a typed fetch of the same objects works.
        let typed = try context.fetch(NSFetchRequest<WorldCupKit.Team>(entityName: "Team"))
        check(typed.count == objects.count, "the typed fetch found \(typed.count) of \(objects.count) teams")
        print("ok first-touch \(how) \(objects.count)")
        return
    default:
        fail("unknown first touch '\(how)'")
    }
    check(!objects.isEmpty, "no teams")
    for object in objects {
        check(String(describing: type(of: object)) == "Team" && object is WorldCupKit.Team,
              "a team of the \(how) is a \(type(of: object))")
    }
    print("ok first-touch \(how) \(objects.count)")
}

/// A model built here whose entity names this executable's `ProbeTeam` as `representedClassName`
/// is written (`ProbeTeam`, `.ProbeTeam`, `ClassResolutionProbe.ProbeTeam`): an untyped insert,
/// a relationship fault in a second coordinator and a merge in a third give its own classes.
func executableClass(_ className: String, store: URL) throws {
    let entity = NSEntityDescription()
    entity.name = "Team"
    entity.managedObjectClassName = className
    let name = NSAttributeDescription()
    name.name = "teamName"
    name.attributeType = .stringAttributeType
    name.isOptional = true
    let wins = NSAttributeDescription()
    wins.name = "wins"
    wins.attributeType = .integer32AttributeType
    wins.defaultValue = Int32(0)
    let player = NSEntityDescription()
    player.name = "Player"
    player.managedObjectClassName = className.replacingOccurrences(of: "ProbeTeam", with: "ProbePlayer")
    let team = NSRelationshipDescription()
    team.name = "team"
    team.destinationEntity = entity
    team.maxCount = 1
    let players = NSRelationshipDescription()
    players.name = "players"
    players.destinationEntity = player
    players.maxCount = 0
    team.inverseRelationship = players
    players.inverseRelationship = team
    player.properties = [team]
    entity.properties = [name, wins, players]
    let model = NSManagedObjectModel()
    model.entities = [entity, player]
    for pass in 0..<3 {
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: store, options: nil)
        let context = NSManagedObjectContext(concurrencyType: .mainQueueConcurrencyType)
        context.persistentStoreCoordinator = coordinator
        if pass == 0 {
            let inserted = NSEntityDescription.insertNewObject(forEntityName: "Team", into: context)
            check(type(of: inserted) == ProbeTeam.self, "\(className) inserted a \(type(of: inserted))")
            inserted.setValue("Uruguay", forKey: "teamName")
            NSEntityDescription.insertNewObject(forEntityName: "Player", into: context).setValue(inserted, forKey: "team")
            try context.save()
        } else if pass == 1 {
            // First touch through a relationship fault: a player's team.
            let players = try context.fetch(NSFetchRequest<NSManagedObject>(entityName: "Player"))
            check(players.count == 1 && type(of: players[0]) == ProbePlayer.self, "\(className) fetched players \(players.map { type(of: $0) })")
            let team = players[0].value(forKey: "team") as? NSManagedObject
            check(team.map { type(of: $0) == ProbeTeam.self } == true, "the relationship fault gave a \(team.map { "\(type(of: $0))" } ?? "nil")")
            check((team as? ProbeTeam)?.teamName == "Uruguay", "the faulted team has no name")
        } else {
            // First touch through a merge: another context saves a team, this one merges it.
            let writer = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
            writer.persistentStoreCoordinator = coordinator
            let observer = NotificationCenter.default.addObserver(forName: .NSManagedObjectContextDidSave, object: writer, queue: nil) { notification in
                context.mergeChanges(fromContextDidSave: notification)
            }
            defer { NotificationCenter.default.removeObserver(observer) }
            try writer.performAndWait {
                NSEntityDescription.insertNewObject(forEntityName: "Team", into: writer).setValue("Chile", forKey: "teamName")
                try writer.save()
            }
            let merged = context.registeredObjects.filter { $0.entity.name == "Team" }
            check(!merged.isEmpty && merged.allSatisfy { type(of: $0) == ProbeTeam.self }, "the merge gave \(merged.map { type(of: $0) })")
        }
    }
}

let arguments = CommandLine.arguments
do {
    switch arguments.count > 1 ? arguments[1] : "" {
    case "undefined-classes" where arguments.count == 4:
        try undefinedClasses(model: URL(fileURLWithPath: arguments[2]), store: URL(fileURLWithPath: arguments[3]))
        print("ok undefined-classes")
    case "first-touch" where arguments.count == 5:
        try firstTouch(arguments[2], model: URL(fileURLWithPath: arguments[3]), store: URL(fileURLWithPath: arguments[4]))
    case "executable-class" where arguments.count == 4:
        try executableClass(arguments[2], store: URL(fileURLWithPath: arguments[3]))
        print("ok executable-class \(arguments[2])")
    default:
        fail("usage: ClassResolutionProbe undefined-classes <model> <store> | first-touch <how> <model> <store>")
    }
} catch {
    fail("\(error)")
}
