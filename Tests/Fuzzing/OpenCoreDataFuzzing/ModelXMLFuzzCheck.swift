import Foundation
import OpenCoreData

/// What the Xcode model loader promises for any bytes, checked on one fuzz input.
///
/// The input is read as the `contents` XML of a `.xcdatamodel`. Either loading throws Core Data's
/// error (an `NSError` in `NSCocoaErrorDomain`), or the model it returns can be used: a
/// coordinator takes it (freezing it: entity numbers, version hashes) and adds an in-memory store
/// for it, each step succeeding or throwing. A crash anywhere, or another kind of error, is a bug.
public enum ModelXMLFuzzCheck {
    /// The file name errors name; nothing is read from or written to it.
    static let file = URL(fileURLWithPath: "/fuzz/Model.xcdatamodel/contents")

    /// Checks one input; returns a description of the broken promise, or nil when all held.
    public static func check(_ data: Data) -> String? {
        let model: NSManagedObjectModel
        do {
            model = try NSManagedObjectModel.load(contentsXML: data, file: file)
        } catch let error as NSError where error.domain == NSCocoaErrorDomain {
            return nil
        } catch {
            return "loading threw \(type(of: error)), not a Core Data error: \(error)"
        }
        for entity in model.entities { _ = entity.versionHash }
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        do {
            _ = try coordinator.addPersistentStore(ofType: NSInMemoryStoreType, configurationName: nil, at: nil)
        } catch let error as NSError where error.domain == NSCocoaErrorDomain {
            return nil
        } catch {
            return "adding a store threw \(type(of: error)), not a Core Data error: \(error)"
        }
        return nil
    }
}
