import Foundation

/// One stage of a staged migration (`NSStagedMigrationManager`): use its subclasses,
/// `NSLightweightMigrationStage` and `NSCustomMigrationStage`.
open class NSMigrationStage: NSObject {
    /// What the stage is for, for logs and debugging.
    open var label: String?

    override init() {}
}

/// A stage of model versions, named by their checksums in migration order, that Core Data can
/// migrate between without help (lightweight migration): the store is migrated to each in turn.
open class NSLightweightMigrationStage: NSMigrationStage {
    /// The checksums of the stage's model versions, oldest first.
    public let versionChecksums: [String]

    /// A stage of the model versions with these checksums, oldest first.
    public init(_ versionChecksums: [String]) {
        self.versionChecksums = versionChecksums
    }
}

/// A stage from one model version to the next, with handlers that run before and after the store
/// is migrated, to prepare its data for the change and to finish it.
///
/// The migration between the two versions is lightweight (a mapping model made for them, if one
/// is found beside the model, is used instead). Each handler reaches the store through the
/// manager's `container`: at `currentModel` in `willMigrateHandler`, at `nextModel` in
/// `didMigrateHandler`.
open class NSCustomMigrationStage: NSMigrationStage {
    /// The version the stage migrates from.
    public let currentModel: NSManagedObjectModelReference
    /// The version the stage migrates to.
    public let nextModel: NSManagedObjectModelReference
    /// Runs before the store is migrated, with the store open at `currentModel`; an error it
    /// throws stops the migration.
    open var willMigrateHandler: ((NSStagedMigrationManager, NSCustomMigrationStage) throws -> Void)?
    /// Runs after the store is migrated, with the store open at `nextModel`; an error it throws
    /// stops the migration.
    open var didMigrateHandler: ((NSStagedMigrationManager, NSCustomMigrationStage) throws -> Void)?

    /// A stage from `currentModel` to `nextModel`.
    public init(migratingFrom currentModel: NSManagedObjectModelReference, to nextModel: NSManagedObjectModelReference) {
        self.currentModel = currentModel
        self.nextModel = nextModel
    }
}
