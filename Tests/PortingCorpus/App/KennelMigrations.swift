//
//  KennelMigrations.swift
//  Kennel
//
//  Owner's firstName and lastName became one name. Lightweight migration can't compute the new
//  attribute, so the change ships as a staged migration, as in "What's new in Core Data"
//  (WWDC23): v1 → v2 adds `name` beside the old attributes and fills it in, v2 → the current
//  model drops them.
//

import Foundation
#if canImport(CoreData)
import CoreData
#else
import OpenCoreData
#endif

enum KennelModelVersion: String, CaseIterable {
    case v1 = "Kennel v1"
    case v2 = "Kennel v2"
    case v3 = "Kennel"

    /// The versions' checksums (`versionChecksum`), pasted in as apps do.
    var checksum: String {
        switch self {
        case .v1: return "Z/AoxrPquiB9V5uRoU6CDzrzcyj94Bi4tD/yU+XroiE="
        case .v2: return "z4o0vD2cHZBepPsLmfwm0DZ9L8Dj1+zxERz4z75zsl4="
        case .v3: return "2SwJGLvoU+vlUDlxzxsKGN+VNnX/8dkq2oHwdchJiWM="
        }
    }

    var modelReference: NSManagedObjectModelReference {
        NSManagedObjectModelReference(name: "Kennel", in: Bundle.main, versionChecksum: checksum)
    }
}

class KennelMigrations {

    static func makeStagedMigrationManager() -> NSStagedMigrationManager {
        let mergeNames = NSCustomMigrationStage(
            migratingFrom: KennelModelVersion.v1.modelReference,
            to: KennelModelVersion.v2.modelReference
        )
        mergeNames.label = "V1 to V2: Owner name from firstName and lastName"
        mergeNames.didMigrateHandler = { migrationManager, currentStage in
            guard let container = migrationManager.container else {
                return
            }
            let context = container.newBackgroundContext()
            try context.performAndWait {
                let fetchRequest = NSFetchRequest<NSManagedObject>(entityName: "Owner")
                let owners = try context.fetch(fetchRequest)
                for owner in owners {
                    let parts = [owner.value(forKey: "firstName") as? String, owner.value(forKey: "lastName") as? String]
                    let name = parts.compactMap { $0 }.joined(separator: " ")
                    owner.setValue(name.isEmpty ? nil : name, forKey: "name")
                }
                try context.save()
            }
        }

        let dropOldNames = NSLightweightMigrationStage([KennelModelVersion.v3.checksum])
        dropOldNames.label = "V2 to V3: drop firstName and lastName"

        return NSStagedMigrationManager([mergeNames, dropOldNames])
    }

    static func addStagedMigration(to description: NSPersistentStoreDescription) {
        description.setOption(makeStagedMigrationManager(), forKey: NSPersistentStoreStagedMigrationManagerOptionKey)
    }
}
