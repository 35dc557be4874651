import Foundation
import OrderedCollections

/// The loaded contents of one to-many relationship of one object.
///
/// Invariant: `members` holds each destination object once, in the relationship's order (insertion
/// order for an unordered relationship). `committedIDs` is the membership last read from or
/// written to the store, so a save can write only what changed.
final class RelationshipSet {
    var members: OrderedSet<NSManagedObject>
    var committedIDs: [NSManagedObjectID]?

    init(members: OrderedSet<NSManagedObject> = [], committedIDs: [NSManagedObjectID]? = nil) {
        self.members = members
        self.committedIDs = committedIDs
    }
}

/// What the live relationship views share: the object and relationship they edit.
public class ManagedRelationshipView {
    let owner: NSManagedObject
    let relationship: NSRelationshipDescription

    init(owner: NSManagedObject, relationship: NSRelationshipDescription) {
        self.owner = owner
        self.relationship = relationship
    }

    /// The relationship's current members, loading them if needed.
    var current: OrderedSet<NSManagedObject> { owner.relationshipSet(for: relationship).members }
}

/// A live, writable view of a to-many relationship, returned by `mutableSetValue(forKey:)`.
///
/// Adding and removing objects changes the relationship (and its inverse) exactly as setting it would.
/// Apple returns an `NSMutableSet` proxy; Foundation on Linux cannot host such a proxy, so this is a
/// class of its own with the same methods.
public final class NSManagedMutableSet: ManagedRelationshipView, Sequence {

    /// The number of objects.
    public var count: Int { current.count }
    /// The objects, in the relationship's order.
    public var allObjects: [NSManagedObject] { Array(current) }
    /// Whether an object is in the relationship.
    public func contains(_ object: NSManagedObject) -> Bool { current.contains(object) }
    /// Adds an object.
    public func add(_ object: Any) { owner.modifyToMany(relationship, adding: [Self.managed(object)], removing: []) }
    /// Removes an object.
    public func remove(_ object: Any) { owner.modifyToMany(relationship, adding: [], removing: [Self.managed(object)]) }
    /// Adds several objects.
    public func addObjects(from objects: [Any]) { owner.modifyToMany(relationship, adding: objects.map(Self.managed), removing: []) }
    /// Adds the objects of a set.
    public func union(_ objects: Set<NSManagedObject>) { owner.modifyToMany(relationship, adding: Array(objects), removing: []) }
    /// Removes the objects of a set.
    public func minus(_ objects: Set<NSManagedObject>) { owner.modifyToMany(relationship, adding: [], removing: Array(objects)) }
    /// Removes every object.
    public func removeAllObjects() { owner.modifyToMany(relationship, adding: [], removing: Array(current)) }
    /// Iterates over the objects.
    public func makeIterator() -> IndexingIterator<[NSManagedObject]> { allObjects.makeIterator() }

    static func managed(_ object: Any) -> NSManagedObject {
        guard let managed = object as? NSManagedObject else {
            coreDataMisuse("A to-many relationship holds managed objects; got \(type(of: object)).")
        }
        return managed
    }
}

/// A live, writable view of an ordered to-many relationship, returned by `mutableOrderedSetValue(forKey:)`.
public final class NSManagedMutableOrderedSet: ManagedRelationshipView, Sequence {

    /// The number of objects.
    public var count: Int { current.count }
    /// The objects in order.
    public var array: [NSManagedObject] { Array(current) }
    /// The object at an index.
    public func object(at index: Int) -> NSManagedObject { current[index] }
    /// The index of an object, or nil.
    public func index(of object: NSManagedObject) -> Int? { current.firstIndex(of: object) }
    /// Whether an object is in the relationship.
    public func contains(_ object: NSManagedObject) -> Bool { current.contains(object) }
    /// Appends an object (moving it to the end if present).
    public func add(_ object: Any) { replace { $0.remove(NSManagedMutableSet.managed(object)); $0.append(NSManagedMutableSet.managed(object)) } }
    /// Inserts an object at an index.
    public func insert(_ object: Any, at index: Int) {
        replace { members in
            let managed = NSManagedMutableSet.managed(object)
            members.remove(managed)
            members.insert(managed, at: Swift.min(index, members.count))
        }
    }
    /// Removes an object.
    public func remove(_ object: Any) { replace { _ = $0.remove(NSManagedMutableSet.managed(object)) } }
    /// Removes the object at an index.
    public func removeObject(at index: Int) { replace { _ = $0.remove(at: index) } }
    /// Removes every object.
    public func removeAllObjects() { replace { $0.removeAll() } }
    /// Iterates over the objects in order.
    public func makeIterator() -> IndexingIterator<[NSManagedObject]> { array.makeIterator() }

    private func replace(_ edit: (inout OrderedSet<NSManagedObject>) -> Void) {
        var members = current
        edit(&members)
        owner.setToMany(relationship, to: members)
    }
}
