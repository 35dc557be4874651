import Foundation
import OpenCoreData
@testable import OpenCoreDataCore

/// A small key-value readable object graph for predicate tests: people with a to-one `spouse`,
/// a to-many `pets` (a Swift `Set`), and an ordered to-many `visits` (an array).
final class QLPerson: KeyValueCodingReadable, Hashable, CustomStringConvertible {
    var name: String?
    var age: Int
    var height: Double
    var birthday: Date?
    var spouse: QLPerson?
    var pets: Set<QLPet>
    var visits: [QLVisit]
    var tags: [String]
    var score: NSNumber?
    var balance: Decimal

    init(name: String?, age: Int, height: Double = 1.7, birthday: Date? = nil, spouse: QLPerson? = nil,
         pets: Set<QLPet> = [], visits: [QLVisit] = [], tags: [String] = [], score: NSNumber? = nil, balance: Decimal = 0) {
        self.name = name
        self.age = age
        self.height = height
        self.birthday = birthday
        self.spouse = spouse
        self.pets = pets
        self.visits = visits
        self.tags = tags
        self.score = score
        self.balance = balance
    }

    func value(forKey key: String) -> Any? {
        switch key {
        case "name": return name
        case "age": return age
        case "height": return height
        case "birthday": return birthday
        case "spouse": return spouse
        case "pets": return pets
        case "visits": return visits
        case "tags": return tags
        case "score": return score
        case "balance": return balance
        case "self": return self
        default: return nil
        }
    }

    static func == (lhs: QLPerson, rhs: QLPerson) -> Bool { lhs === rhs }
    func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
    var description: String { "QLPerson(\(name ?? "nil"))" }
}

final class QLPet: KeyValueCodingReadable, Hashable, Sendable {
    let name: String
    let species: String
    let weight: Int32
    let toys: [String]

    init(name: String, species: String, weight: Int32, toys: [String] = []) {
        self.name = name
        self.species = species
        self.weight = weight
        self.toys = toys
    }

    func value(forKey key: String) -> Any? {
        switch key {
        case "name": return name
        case "species": return species
        case "weight": return weight
        case "toys": return toys
        default: return nil
        }
    }

    static func == (lhs: QLPet, rhs: QLPet) -> Bool { lhs === rhs }
    func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

final class QLVisit: KeyValueCodingReadable {
    let place: String
    let cost: Double

    init(place: String, cost: Double) {
        self.place = place
        self.cost = cost
    }

    func value(forKey key: String) -> Any? {
        switch key {
        case "place": return place
        case "cost": return cost
        default: return nil
        }
    }
}

enum QLFixtures {
    static let rex = QLPet(name: "Rex", species: "dog", weight: 30, toys: ["ball", "rope"])
    static let tom = QLPet(name: "Tom", species: "cat", weight: 4, toys: ["mouse"])
    static let nemo = QLPet(name: "Nemo", species: "fish", weight: 0)

    static func alice() -> QLPerson {
        let bob = QLPerson(name: "Bob", age: 45, height: 1.82)
        return QLPerson(name: "Alice", age: 42, height: 1.65,
                        birthday: Date(timeIntervalSinceReferenceDate: 100_000),
                        spouse: bob, pets: [rex, tom],
                        visits: [QLVisit(place: "Paris", cost: 120.5), QLVisit(place: "Zürich", cost: 80)],
                        tags: ["admin", "Écrivain"], score: NSNumber(value: 7), balance: Decimal(string: "10.25")!)
    }

    static func loner() -> QLPerson {
        QLPerson(name: nil, age: 19, height: 1.9)
    }

    /// Parses or records the failure.
    static func parse(_ format: String, _ args: Any?...) throws -> NSPredicate {
        try NSPredicate.parse(format: format, arguments: args)
    }
}
