import Foundation
import OpenCoreData
import OpenCoreDataTestKit
import Testing
import WorldCupKit

/// An entity's class is found from `representedClassName` alone, in a fresh process and whatever the
/// program touches first; a class nobody defines gives `NSManagedObject`. The probe runs in the
/// build's own configuration, so the release test run checks the optimized code.
@Suite("Class resolution")
struct ClassResolutionTests {
    /// The probe beside the test bundle in the build folder.
    static let probe = TestSupport.builtExecutable("ClassResolutionProbe")

    /// Runs the probe; its standard output, or a failure with its standard error.
    static func runProbe(_ arguments: [String], in directory: URL) async throws -> String {
        try #require(FileManager.default.isExecutableFile(atPath: probe.path), "build the ClassResolutionProbe product first")
        let result = try await ExecutableTests.run(arguments, in: directory, binary: probe)
        #expect(result.status == 0, "probe \(arguments.prefix(2)) ended with \(result.status): \(result.errors)")
        return result.output
    }

    /// A new object of an in-memory model's one entity, whose class is named `className`.
    static func insertedObject(ofClassNamed className: String) throws -> NSManagedObject {
        let entity = NSEntityDescription()
        entity.name = "Thing"
        entity.managedObjectClassName = className
        let model = NSManagedObjectModel()
        model.entities = [entity]
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: model)
        try coordinator.addPersistentStore(ofType: NSInMemoryStoreType, configurationName: nil, at: nil, options: nil)
        let context = NSManagedObjectContext(concurrencyType: .privateQueueConcurrencyType)
        context.persistentStoreCoordinator = coordinator
        return context.performAndWait { NSEntityDescription.insertNewObject(forEntityName: "Thing", into: context) }
    }

    @Test("a model naming classes nobody defines: fetch, insert, object(with:) and a controller give NSManagedObject")
    func undefinedClasses() async throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = directory.appendingPathComponent("FailedBanksCD.sqlite")
        try FileManager.default.copyItem(at: TestSupport.fixtures.appendingPathComponent("failedbanks/FailedBanksCD.sqlite"), to: store)
        let model = TestSupport.modelURL("failedbanks", "FailedBanksCD")
        let output = try await Self.runProbe(["undefined-classes", model.path, store.path], in: directory)
        #expect(output.contains("ok undefined-classes"))
    }

    @Test("a second process finds WorldCupKit.Team from the model whatever it touches first",
          arguments: ["controller", "untyped-fetch", "object-with", "library-class"])
    func firstTouch(how: String) async throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = directory.appendingPathComponent("WorldCup.sqlite")
        // The first process writes the store through the demo's own Team class.
        _ = try WorldCupApp(storeURL: store).importSeedIfNeeded()
        let model = TestSupport.modelURL("worldcup", "WorldCup")
        let output = try await Self.runProbe(["first-touch", how, model.path, store.path], in: directory)
        #expect(output.contains("ok first-touch \(how) 32"))
    }

    @Test("classes of the executable, named with and without a module: insert, relationship fault, merge", arguments: [
        "ProbeTeam", ".ProbeTeam", "ClassResolutionProbe.ProbeTeam", "App.ProbeTeam",
    ])
    func executableClass(name: String) async throws {
        let directory = TestSupport.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let output = try await Self.runProbe(["executable-class", name, directory.appendingPathComponent("t.sqlite").path], in: directory)
        #expect(output.contains("ok executable-class \(name)"))
    }

    @Test("in this process: a test target's class found by name before any use, nested and module-qualified")
    func testTargetClasses() throws {
        for name in ["ResolutionOnlyBird", ".ResolutionOnlyBird", "OpenCoreDataTests.ResolutionOnlyBird", "SomeApp.ResolutionOnlyBird",
                     "OpenCoreDataTests.ResolutionOuter.NestedBird"] {
            let bird = try Self.insertedObject(ofClassNamed: name)
            let expected = name.hasSuffix("NestedBird") ? "ResolutionOuter.NestedBird" : "ResolutionOnlyBird"
            #expect(String(reflecting: type(of: bird)) == "OpenCoreDataTests.\(expected)", "\(name)")
        }
    }

    @Test("a class that isn't an NSManagedObject, or a generic one, is not an entity's class")
    func notManagedObjectClasses() throws {
        for name in ["ResolutionNotManaged", "ResolutionGenericBird"] {
            let thing = try Self.insertedObject(ofClassNamed: name)
            #expect(type(of: thing) == NSManagedObject.self, "\(name)")
        }
    }
}

/// Named only by the class-resolution tests' models, never used in code before they run.
final class ResolutionOnlyBird: NSManagedObject {}

/// A namespace for a nested entity class.
enum ResolutionOuter {
    final class NestedBird: NSManagedObject {}
}

/// Not a managed object: a model naming it gets NSManagedObject.
final class ResolutionNotManaged {}

/// Generic classes can't be named by a model.
final class ResolutionGenericBird<T>: NSManagedObject {}
