import Foundation
import OpenCoreData

/// What the compiled-model reader promises for any bytes, checked on one fuzz input.
///
/// The input is read twice: as a `.mom` (a keyed archive in a binary property list) and as a
/// store's `Z_MODELCACHE` content (the same, compressed as raw DEFLATE). Either reading throws
/// Core Data's error (an `NSError` in `NSCocoaErrorDomain`), or the model it returns can be used: a
/// coordinator takes it and adds an in-memory store for it. A crash anywhere, or another kind of
/// error, is a bug.
public enum CompiledModelFuzzCheck {
    /// The file name errors name; nothing is read from or written to it.
    static let file = URL(fileURLWithPath: "/fuzz/Model.mom")

    /// Checks one input; returns a description of the broken promise, or nil when all held.
    public static func check(_ data: Data) -> String? {
        for compressed in [false, true] {
            let model: NSManagedObjectModel
            do {
                model = try NSManagedObjectModel.load(compiledModel: data, compressed: compressed, file: file)
            } catch let error as NSError where error.domain == NSCocoaErrorDomain {
                continue
            } catch {
                return "reading threw \(type(of: error)), not a Core Data error: \(error)"
            }
            for entity in model.entities { _ = entity.versionHash }
            let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
            do {
                _ = try coordinator.addPersistentStore(ofType: NSInMemoryStoreType, configurationName: nil, at: nil)
            } catch let error as NSError where error.domain == NSCocoaErrorDomain {
                continue
            } catch {
                return "adding a store threw \(type(of: error)), not a Core Data error: \(error)"
            }
        }
        return nil
    }
}
