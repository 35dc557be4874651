import Foundation

extension NSManagedObject {
    /// The slots of the stored properties whose values differ from the committed ones, in order;
    /// persistent history records them as an update's `updatedProperties`.
    func changedPersistentSlots() -> [Int] {
        changedValues().keys.compactMap { entity.frozenPropertiesByName[$0]?.slot }.sorted()
    }
}
