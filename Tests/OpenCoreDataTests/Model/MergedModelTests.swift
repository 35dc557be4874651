import Foundation
import OpenCoreData
import Testing

/// `NSManagedObjectModel.mergedModel(from:)` over bundles, as hand-built stacks call it, and
/// merging models for a store's metadata.
@Suite struct MergedModelTests {
    /// A folder holding copies of two fixture models, as a bundle's resources would.
    func bundle(with models: [(String, String)]) throws -> (Bundle, URL) {
        let directory = TestSupport.temporaryDirectory()
        for (folder, name) in models {
            let source = TestSupport.modelURL(folder, name)
            var destination = directory.appendingPathComponent(source.lastPathComponent)
            if FileManager.default.fileExists(atPath: destination.path) {
                let subfolder = directory.appendingPathComponent("more-\(UUID().uuidString)")
                try FileManager.default.createDirectory(at: subfolder, withIntermediateDirectories: true)
                destination = subfolder.appendingPathComponent(source.lastPathComponent)
            }
            try FileManager.default.copyItem(at: source, to: destination)
        }
        return (try #require(Bundle(url: directory)), directory)
    }

    @Test func theModelsOfTheBundlesAreMergedIntoOne() throws {
        let (bundle, _) = try bundle(with: [("bowties", "BowTies"), ("dogwalk", "DogWalk")])
        let merged = try #require(NSManagedObjectModel.mergedModel(from: [bundle]))
        let bowTies = try TestSupport.model("bowties", "BowTies")
        let dogWalk = try TestSupport.model("dogwalk", "DogWalk")
        let expected = Set((bowTies.entities + dogWalk.entities).compactMap(\.name))
        #expect(Set(merged.entities.compactMap(\.name)) == expected)
        #expect(merged.entities.allSatisfy { $0.managedObjectModel === merged })
        // The merged model opens a store made with its parts' entities.
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: merged)
        try coordinator.addPersistentStore(ofType: NSInMemoryStoreType, configurationName: nil, at: nil)
        // Apple's spelling with nil (the main bundle and the loaded ones) compiles and answers a model or nil.
        let _: NSManagedObjectModel? = NSManagedObjectModel.mergedModel(from: nil)
    }

    @Test func twoModelsWithTheSameEntityDoNotMerge() throws {
        let (bundle, _) = try bundle(with: [("dogwalk", "DogWalk"), ("dogwalk", "DogWalk")])
        #expect(NSManagedObjectModel.mergedModel(from: [bundle]) == nil)
        let model = try TestSupport.model("dogwalk", "DogWalk")
        #expect(NSManagedObjectModel(byMerging: [model, try TestSupport.model("dogwalk", "DogWalk")]) == nil)
    }

    @Test func mergingForStoreMetadataChecksTheVersionHashes() throws {
        let bowTies = try TestSupport.model("bowties", "BowTies")
        let dogWalk = try TestSupport.model("dogwalk", "DogWalk")
        let coordinator = NSPersistentStoreCoordinator(managedObjectModel: try #require(NSManagedObjectModel(byMerging: [bowTies, dogWalk])))
        let url = TestSupport.temporaryDirectory().appendingPathComponent("merged.sqlite")
        let store = try coordinator.addPersistentStore(ofType: NSSQLiteStoreType, configurationName: nil, at: url)
        let metadata = try #require(store.metadata)
        let matching = NSManagedObjectModel(byMerging: [try TestSupport.model("bowties", "BowTies"), try TestSupport.model("dogwalk", "DogWalk")],
                                            forStoreMetadata: metadata)
        #expect(matching != nil)
        #expect(NSManagedObjectModel(byMerging: [try TestSupport.model("bowties", "BowTies")], forStoreMetadata: metadata) == nil)
    }
}
