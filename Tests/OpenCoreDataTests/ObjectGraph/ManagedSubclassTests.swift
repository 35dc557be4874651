import Foundation
import OpenCoreData
import Testing

// Subclasses written as users port them: `@NSManaged` becomes `@Managed`, nothing else changes.

final class Dog: NSManagedObject {
    @Managed var name: String?
    @Managed var walks: NSOrderedSet?
}

final class Walk: NSManagedObject {
    @Managed var date: Date?
    @Managed var dog: Dog?
}

final class WorldCupTeam: NSManagedObject {
    @Managed var teamName: String?
    @Managed var qualifyingZone: String?
    @Managed var imageName: String?
    @Managed var wins: Int32
    @Managed var losses: Int32

    nonisolated(unsafe) static var awakenedFromInsert = 0

    override func awakeFromInsert() {
        super.awakeFromInsert()
        WorldCupTeam.awakenedFromInsert += 1
    }
}

/// A subclass that sets up state of its own whenever an object is made, in its override of
/// `init(entity:insertInto:)`: written `required` instead of `override` (a porting rule).
final class Memo: NSManagedObject {
    @Managed var text: String?
    let madeFor: String

    required init(entity: NSEntityDescription, insertInto context: NSManagedObjectContext?) {
        madeFor = context == nil ? "a fetch" : "an insert"
        super.init(entity: entity, insertInto: context)
    }
}

@Suite(.serialized) struct ManagedSubclassTests {
    @Test func anInitializerOfTheSubclassRunsForInsertedAndFetchedObjects() throws {
        let model = NSManagedObjectModel()
        model.entities = [NSEntityDescription(name: "Memo", className: "Memo", properties: [NSAttributeDescription(name: "text", type: .stringAttributeType)])]
        let context = TestSupport.context(try TestSupport.coordinator(model).0)
        let memo = Memo(context: context)
        memo.text = "walk Rex"
        #expect(memo.madeFor == "an insert")
        try context.save()
        let fresh = TestSupport.context(context.persistentStoreCoordinator!)
        let fetched = try fresh.fetch(NSFetchRequest<Memo>(entityName: "Memo"))
        #expect(fetched.map(\.text) == ["walk Rex"])
        #expect(fetched.map(\.madeFor) == ["a fetch"])
    }

    private func dogWalkContext() throws -> NSManagedObjectContext {
        let model = try TestSupport.model("dogwalk", "DogWalk")
        let (coordinator, _) = try TestSupport.coordinator(model)
        return TestSupport.context(coordinator)
    }

    @Test func typedPropertiesReadAndWrite() throws {
        let context = try dogWalkContext()
        let dog = Dog(context: context)
        dog.name = "Fido"
        #expect(dog.name == "Fido")
        #expect(dog.value(forKey: "name") as? String == "Fido")
        #expect(Dog.entity().name == "Dog")
        #expect(dog.isInserted)
        let walk = Walk(context: context)
        walk.date = Date(timeIntervalSinceReferenceDate: 100)
        dog.addToWalks(walk)
        #expect(walk.dog === dog, "inverse maintained")
        #expect(dog.walks?.count == 1)
        let second = Walk(context: context)
        second.date = Date(timeIntervalSinceReferenceDate: 50)
        dog.insertIntoWalks(second, at: 0)
        #expect((dog.walks?.array as? [Walk])?.map(\.date) == [second.date, walk.date])
        try context.save()

        let other = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        other.persistentStoreCoordinator = context.persistentStoreCoordinator
        try other.performAndWait {
            let request = NSFetchRequest<Dog>(entityName: "Dog")
            request.predicate = NSPredicate(format: "%K == %@", "name", "Fido")
            let dogs = try other.fetch(request)
            #expect(dogs.count == 1)
            let fetched = try #require(dogs.first)
            #expect(fetched.isFault)
            #expect(fetched.name == "Fido")
            #expect(!fetched.isFault)
            let walks = try #require(fetched.walks?.array as? [Walk])
            #expect(walks.map(\.date) == [second.date, walk.date], "ordered relationship order survives a save")
            #expect(walks.allSatisfy { $0.dog === fetched })
            fetched.removeFromWalks(at: 0)
            try other.save()
        }
        context.refresh(dog, mergeChanges: false)
        #expect(dog.walks?.count == 1)
    }

    /// The generated ordered helpers edit as `NSMutableOrderedSet` does (Core Data's generated
    /// accessors are its indexed key-value accessors): inserting a member, or putting one in
    /// place of another, changes nothing; a new object goes where it is told.
    @Test func generatedOrderedHelpersLeaveMembersWhereTheyAre() throws {
        let context = try dogWalkContext()
        let dog = Dog(context: context)
        let walks = (0..<4).map { _ in Walk(context: context) }
        dog.addToWalks(NSOrderedSet(array: Array(walks.prefix(3))))
        func order() -> [Walk] { dog.walks?.array as? [Walk] ?? [] }
        #expect(order() == [walks[0], walks[1], walks[2]])

        dog.insertIntoWalks(walks[2], at: 0)
        #expect(order() == [walks[0], walks[1], walks[2]], "inserting a member moves nothing")
        dog.insertIntoWalks([walks[1], walks[0]], at: NSIndexSet(indexesIn: NSRange(location: 0, length: 2)))
        #expect(order() == [walks[0], walks[1], walks[2]], "inserting members at indexes moves nothing")
        dog.replaceWalks(at: 0, with: walks[2])
        #expect(order() == [walks[0], walks[1], walks[2]], "a member elsewhere doesn't replace another")
        #expect(walks.prefix(3).allSatisfy { $0.dog === dog } && walks[3].dog == nil)

        dog.insertIntoWalks(walks[3], at: 1)
        #expect(order() == [walks[0], walks[3], walks[1], walks[2]])
        dog.replaceWalks(at: 3, with: Walk(context: context))
        #expect(order().prefix(3) == [walks[0], walks[3], walks[1]])
        #expect(walks[2].dog == nil, "the replaced object leaves the relationship")
        try context.save()
    }

    /// `Dog(context:)` takes the entity from the context's current model, class after class,
    /// also when the context moves to a coordinator of another model.
    @Test func insertingBySubclassFollowsTheContextsModel() throws {
        let context = try dogWalkContext()
        let firstModel = try #require(context.persistentStoreCoordinator?.managedObjectModel)
        let dogs = (0..<3).map { _ in Dog(context: context) }
        let walk = Walk(context: context)
        #expect(dogs.allSatisfy { $0.entity === firstModel.entitiesByName["Dog"] })
        #expect(walk.entity === firstModel.entitiesByName["Walk"])
        #expect(Dog(context: context).entity === firstModel.entitiesByName["Dog"], "after another class")

        let hound = NSEntityDescription()
        hound.name = "Hound"
        hound.managedObjectClassName = "Dog"
        let name = NSAttributeDescription()
        name.name = "name"
        name.attributeType = .stringAttributeType
        hound.properties = [name]
        let secondModel = NSManagedObjectModel()
        secondModel.entities = [hound]
        context.reset()
        context.persistentStoreCoordinator = try TestSupport.coordinator(secondModel, type: NSInMemoryStoreType).0
        let moved = Dog(context: context)
        #expect(moved.entity === secondModel.entitiesByName["Hound"])
        moved.name = "Rex"
        try context.save()
        #expect(try context.count(for: NSFetchRequest<NSFetchRequestResult>(entityName: "Hound")) == 1)
    }

    @Test func scalarsAndLifecycle() throws {
        let model = try TestSupport.model("worldcup", "WorldCup")
        model.entitiesByName["Team"]!.managedObjectClassName = "WorldCupTeam"
        let (coordinator, _) = try TestSupport.coordinator(model)
        let context = TestSupport.context(coordinator)
        let before = WorldCupTeam.awakenedFromInsert
        let team = WorldCupTeam(context: context)
        #expect(WorldCupTeam.awakenedFromInsert == before + 1)
        #expect(team.wins == 0, "default value from the model")
        team.teamName = "Brazil"
        team.wins += 3
        #expect(team.value(forKey: "wins") as? Int32 == 3)
        try context.save()
        let request: NSFetchRequest<WorldCupTeam> = NSFetchRequest(entityName: "Team")
        request.predicate = NSPredicate(format: "wins > 2")
        let fresh = TestSupport.context(coordinator)
        let teams = try fresh.fetch(request)
        #expect(teams.first?.teamName == "Brazil")
        #expect(teams.first?.wins == 3)
        let untyped = NSFetchRequest<NSFetchRequestResult>(entityName: "Team")
        let results = try fresh.fetch(untyped)
        #expect(results.first is WorldCupTeam)
    }
}
