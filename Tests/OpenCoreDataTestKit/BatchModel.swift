import Foundation
import OpenCoreData

/// The model of the reliability and hostile-environment tests and their worker process:
/// Batch (number, tag) ←→> Item (index), so that a save is one batch with its three items.
public enum BatchModel {
    /// A new, unfrozen copy of the model.
    public static func make() -> NSManagedObjectModel {
        let batch = NSEntityDescription(name: "Batch")
        let item = NSEntityDescription(name: "Item")
        let items = NSRelationshipDescription(name: "items", destination: item, toMany: true, deleteRule: .cascadeDeleteRule)
        let owner = NSRelationshipDescription(name: "batch", destination: batch)
        items.inverseRelationship = owner
        owner.inverseRelationship = items
        batch.properties = [NSAttributeDescription(name: "number", type: .integer64AttributeType), NSAttributeDescription(name: "tag", type: .stringAttributeType), items]
        item.properties = [NSAttributeDescription(name: "index", type: .integer64AttributeType), owner]
        let model = NSManagedObjectModel()
        model.entities = [batch, item]
        return model
    }

    /// Inserts a batch with its three items (four objects).
    public static func insertBatch(_ number: Int64, tag: String, into context: NSManagedObjectContext) {
        let batch = NSEntityDescription.insertNewObject(forEntityName: "Batch", into: context)
        batch.setValue(number, forKey: "number")
        batch.setValue(tag, forKey: "tag")
        for index in 0..<3 {
            let item = NSEntityDescription.insertNewObject(forEntityName: "Item", into: context)
            item.setValue(Int64(index), forKey: "index")
            item.setValue(batch, forKey: "batch")
        }
    }
}
