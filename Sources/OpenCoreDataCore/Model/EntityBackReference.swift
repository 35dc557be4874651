import Foundation

/// A weak reference to an entity that does not make the entity's reference count slow.
///
/// Swift's `weak` gives the referenced object a side table, after which every retain and release
/// of it takes the runtime's slow path. Entities are retained by every managed object and object
/// ID, so weak back-references from their properties, indexes, subentities and relationships made
/// fetching and inserting measurably slower. Instead, each entity owns one `EntityBackReference`
/// that points back at it and is cleared when the entity is deallocated; descriptions hold that
/// (strongly) and read it as they would a weak reference: nil once the entity is gone.
///
/// Invariant: `entity` is the owning entity while it lives and nil after its `deinit`. Like the
/// rest of a model, it is not written concurrently with reads (models are frozen before use).
final class EntityBackReference: @unchecked Sendable {
    /// The entity, or nil once it has been deallocated.
    unowned(unsafe) var entity: NSEntityDescription?

    init(_ entity: NSEntityDescription) {
        self.entity = entity
    }
}
