import Foundation

/// Snapshots of an object's persistent values by property name, as merge conflicts carry them.
extension NSManagedObject {
    /// The persistent attributes and to-one relationships of a row of slot values, by name: to-one
    /// destinations as object IDs, nil as `NSNull`.
    func snapshot(of slots: SlotValues) -> [String: Any] {
        var snapshot: [String: Any] = [:]
        for property in entity.frozenProperties where !property.isTransient && slots.indices.contains(property.slot) {
            let value = slots[property.slot]
            if let relationship = property as? NSRelationshipDescription {
                if relationship.isToMany { continue }
                snapshot[property.name] = ((value as? NSManagedObject)?.objectID ?? value as? NSManagedObjectID) ?? NSNull()
            } else {
                snapshot[property.name] = value ?? NSNull()
            }
        }
        return snapshot
    }

    /// A row of slot values (as `committedValues` holds them) from a snapshot.
    func slotValues(from snapshot: [String: Any]) -> SlotValues {
        var slots = SlotValues(layout: entity.slotLayout)
        for property in entity.frozenProperties where !property.isTransient {
            slots[property.slot] = Self.unwrapped(snapshot[property.name])
        }
        return slots
    }

    /// A snapshot value as a slot holds it (`NSNull` as nil).
    static func unwrapped(_ value: Any?) -> Any? {
        value is NSNull ? nil : value
    }
}
