import Foundation

/// The results of fetched properties (`NSFetchedPropertyDescription`) a context has evaluated, by
/// object and property slot. Core Data evaluates a fetched property when it is first read and
/// keeps the result until the object is refreshed or turned into a fault; the context forgets an
/// object's results then (`forget(_:)`) and all of them on `reset()`.
///
/// Entries hold their object weakly and are looked up by identity, so an entry outliving its
/// object (deleted and freed) is never taken for another object at the same address.
struct FetchedPropertyCache {
    private struct Entry {
        weak var object: NSManagedObject?
        var results: [Int: [Any]]
    }

    private var entries: [ObjectIdentifier: Entry] = [:]

    /// The cached result of the fetched property in `slot` of `object`, if evaluated.
    func results(of object: NSManagedObject, slot: Int) -> [Any]? {
        guard let entry = entries[ObjectIdentifier(object)], entry.object === object else { return nil }
        return entry.results[slot]
    }

    mutating func store(_ results: [Any], of object: NSManagedObject, slot: Int) {
        let key = ObjectIdentifier(object)
        if entries[key]?.object !== object { entries[key] = Entry(object: object, results: [:]) }
        entries[key]?.results[slot] = results
    }

    /// Drops every result of one object (nothing to do, and no hashing, while nothing is cached).
    mutating func forget(_ object: NSManagedObject) {
        if !entries.isEmpty { entries[ObjectIdentifier(object)] = nil }
    }

    mutating func removeAll() {
        entries.removeAll()
    }
}
