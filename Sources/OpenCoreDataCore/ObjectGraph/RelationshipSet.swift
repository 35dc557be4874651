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

    /// The number of objects.
    public var count: Int { current.count }
    /// Whether an object is in the relationship.
    public func contains(_ object: Any) -> Bool { (object as? NSManagedObject).map(current.contains) ?? false }
}

/// A live, writable view of a to-many relationship, returned by `mutableSetValue(forKey:)`.
///
/// Adding and removing objects changes the relationship (and its inverse) exactly as setting it would.
/// Apple returns an `NSMutableSet` proxy; Foundation on Linux cannot host such a proxy, so this is a
/// class of its own with the same methods.
public final class NSManagedMutableSet: ManagedRelationshipView, Sequence {

    /// The objects, in the relationship's order.
    public var allObjects: [NSManagedObject] { Array(current) }
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
///
/// It has `NSMutableOrderedSet`'s methods and their rules: adding or inserting an object that is
/// already a member changes nothing (remove it first to move it, or use `moveObjects(at:to:)`),
/// and an index out of bounds is a programmer error, as Foundation's range exception is.
public final class NSManagedMutableOrderedSet: ManagedRelationshipView, Sequence {

    /// The objects in order.
    public var array: [NSManagedObject] { Array(current) }
    /// The first object, or nil when the relationship is empty.
    public var firstObject: NSManagedObject? { current.first }
    /// The last object, or nil when the relationship is empty.
    public var lastObject: NSManagedObject? { current.last }
    /// The object at an index; setting it replaces that object (see `replaceObject(at:with:)`).
    public subscript(index: Int) -> NSManagedObject {
        get { object(at: index) }
        set { replaceObject(at: index, with: newValue) }
    }
    /// The object at an index.
    public func object(at index: Int) -> NSManagedObject {
        let members = current
        Self.check(index, in: 0..<members.count, "object(at:)")
        return members[index]
    }
    /// The index of an object, or `NSNotFound` when it isn't a member.
    public func index(of object: Any) -> Int {
        guard let managed = object as? NSManagedObject else { return NSNotFound }
        return current.firstIndex(of: managed) ?? NSNotFound
    }
    /// Appends an object, unless it is already a member.
    public func add(_ object: Any) { addObjects(from: [object]) }
    /// Appends each object that is not already a member, in order.
    public func addObjects(from objects: [Any]) { edit { for object in objects { $0.append(NSManagedMutableSet.managed(object)) } } }
    /// Inserts an object at an index (at most `count`), unless it is already a member.
    public func insert(_ object: Any, at index: Int) {
        edit { members in
            Self.check(index, in: 0..<(members.count + 1), "insert(_:at:)")
            members.insert(NSManagedMutableSet.managed(object), at: index)
        }
    }
    /// Inserts each object in turn at its index, counted after the earlier insertions; an object
    /// already a member is skipped.
    public func insert(_ objects: [Any], at indexes: IndexSet) {
        coreDataPrecondition(objects.count == indexes.count, "insert(_:at:) needs one index for each object: \(objects.count) objects, \(indexes.count) indexes.")
        edit { members in
            for (object, index) in zip(objects, indexes) {
                Self.check(index, in: 0..<(members.count + 1), "insert(_:at:)")
                members.insert(NSManagedMutableSet.managed(object), at: index)
            }
        }
    }
    /// Removes an object.
    public func remove(_ object: Any) { edit { _ = $0.remove(NSManagedMutableSet.managed(object)) } }
    /// Removes the objects of an array.
    public func removeObjects(in objects: [Any]) { edit { for object in objects { _ = $0.remove(NSManagedMutableSet.managed(object)) } } }
    /// Removes the object at an index.
    public func removeObject(at index: Int) { removeObjects(at: IndexSet(integer: index)) }
    /// Removes the objects at indexes.
    public func removeObjects(at indexes: IndexSet) {
        edit { members in
            if let last = indexes.last { Self.check(last, in: 0..<members.count, "removeObjects(at:)") }
            for index in indexes.reversed() { members.remove(at: index) }
        }
    }
    /// Removes every object.
    public func removeAllObjects() { edit { $0.removeAll() } }
    /// Puts an object in place of the one at an index. Nothing changes when the object is
    /// already a member elsewhere (a relationship holds each object once).
    public func replaceObject(at index: Int, with object: Any) {
        replace(zip(IndexSet(integer: index), [object]), method: "replaceObject(at:with:)")
    }
    /// Puts each object in place of the one at its index, in order; an object already a member
    /// elsewhere changes nothing.
    public func replaceObjects(at indexes: IndexSet, with objects: [Any]) {
        coreDataPrecondition(objects.count == indexes.count, "replaceObjects(at:with:) needs one object for each index: \(indexes.count) indexes, \(objects.count) objects.")
        replace(zip(indexes, objects), method: "replaceObjects(at:with:)")
    }
    private func replace(_ replacements: Zip2Sequence<IndexSet, [Any]>, method: String) {
        edit { members in
            for (index, object) in replacements {
                Self.check(index, in: 0..<members.count, method)
                let replacement = NSManagedMutableSet.managed(object)
                guard !members.contains(replacement) else { continue }
                members.remove(at: index)
                members.insert(replacement, at: index)
            }
        }
    }
    /// Moves the objects at `indexes` so that, in their order, they start at `index` of what
    /// remains once they are taken out.
    public func moveObjects(at indexes: IndexSet, to index: Int) {
        edit { members in
            if let last = indexes.last { Self.check(last, in: 0..<members.count, "moveObjects(at:to:)") }
            let moved = indexes.map { members[$0] }
            for position in indexes.reversed() { members.remove(at: position) }
            Self.check(index, in: 0..<(members.count + 1), "moveObjects(at:to:)")
            for (offset, object) in moved.enumerated() { members.insert(object, at: index + offset) }
        }
    }
    /// Swaps the objects at two indexes.
    public func exchangeObject(at first: Int, withObjectAt second: Int) {
        edit { members in
            Self.check(first, in: 0..<members.count, "exchangeObject(at:withObjectAt:)")
            Self.check(second, in: 0..<members.count, "exchangeObject(at:withObjectAt:)")
            members.swapAt(first, second)
        }
    }
    /// Iterates over the objects in order.
    public func makeIterator() -> IndexingIterator<[NSManagedObject]> { array.makeIterator() }

    private func edit(_ body: (inout OrderedSet<NSManagedObject>) -> Void) {
        var members = current
        body(&members)
        owner.setToMany(relationship, to: members)
    }

    private static func check(_ index: Int, in bounds: Range<Int>, _ method: String) {
        coreDataPrecondition(bounds.contains(index), "\(method): index \(index) is beyond the bounds of the ordered relationship (\(bounds.lowerBound)..<\(bounds.upperBound)).")
    }
}
