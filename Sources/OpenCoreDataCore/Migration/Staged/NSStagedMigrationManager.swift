import Foundation

/// Option: the `NSStagedMigrationManager` whose stages migrate the store when it is added.
public let NSPersistentStoreStagedMigrationManagerOptionKey = "NSPersistentStoreStagedMigrationManagerOptionKey"

/// The stages of a migration, run in order when a store added with this manager under
/// `NSPersistentStoreStagedMigrationManagerOptionKey` was made with an earlier model version.
///
/// The stages name a sequence of model versions: each lightweight stage its versions, each custom
/// stage its current and next version. The store, found to be at one of them (by its metadata's
/// checksum, else its entity version hashes), is migrated one version at a time to the last, then,
/// if that is not the coordinator's model, to the coordinator's model. Each step is a migration
/// of its own: all or nothing, so a failure leaves the store at the last version reached.
open class NSStagedMigrationManager: NSObject {
    /// The stages, in the order they run.
    public let stages: [NSMigrationStage]
    /// While a custom stage's handler runs, a container with the migrating store loaded at the
    /// stage's current model (`willMigrateHandler`) or next model (`didMigrateHandler`); nil
    /// otherwise.
    public internal(set) var container: NSPersistentContainer?

    /// A manager of these stages, run in this order.
    public init(_ stages: [NSMigrationStage]) {
        self.stages = stages
    }
}
