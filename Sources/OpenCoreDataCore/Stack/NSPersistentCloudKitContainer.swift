import Foundation

/// A persistent container whose stores Apple's platforms mirror to CloudKit.
///
/// Linux has no CloudKit, so the stores stay local and nothing is synced; everything else is an
/// `NSPersistentContainer`. What carries over is the check Apple's container makes of the model:
/// a store described with `cloudKitContainerOptions` fails to load (134060, the violations in the
/// failure reason) when its entities break CloudKit's rules (`CloudKitModelRules`), and
/// `initializeCloudKitSchema(options:)` makes the same check. A model that passes here loads
/// under CloudKit on a device, so a team can keep its model CloudKit-ready from Linux CI.
/// Unchecked Sendable: no stored state beyond `NSPersistentContainer`'s.
open class NSPersistentCloudKitContainer: NSPersistentContainer, @unchecked Sendable {
    /// Posted when an import, export or setup event changes (never on Linux: there are none).
    public static let eventChangedNotification = Notification.Name("NSPersistentCloudKitContainerEventChangedNotification")
    /// The `userInfo` key of an event in `eventChangedNotification`.
    public static let eventNotificationUserInfoKey = "event"

    /// Opens every described store; a store with `cloudKitContainerOptions` is first checked
    /// against CloudKit's rules, and fails without being opened when the model breaks them.
    open override func loadPersistentStores(completionHandler block: @escaping (NSPersistentStoreDescription, Error?) -> Void) {
        for description in persistentStoreDescriptions {
            if description.cloudKitContainerOptions != nil,
               let error = CloudKitModelRules.error(for: managedObjectModel, configuration: description.configuration) {
                block(description, error)
                continue
            }
            loadStore(description, completionHandler: block)
        }
    }

    /// Checks the model of every store described with `cloudKitContainerOptions` against
    /// CloudKit's rules (there is no CloudKit schema to create on Linux); with `printSchema`,
    /// prints the record types CloudKit would get. Throws 134060 listing what breaks the rules.
    open func initializeCloudKitSchema(options: NSPersistentCloudKitContainerSchemaInitializationOptions = []) throws {
        for description in persistentStoreDescriptions where description.cloudKitContainerOptions != nil {
            if let error = CloudKitModelRules.error(for: managedObjectModel, configuration: description.configuration) { throw error }
            if options.contains(.printSchema) {
                for line in CloudKitModelRules.recordTypes(of: managedObjectModel, configuration: description.configuration) { print(line) }
            }
        }
    }

    /// Whether the object's record may be changed: always, as nothing is shared here.
    open func canUpdateRecord(forManagedObjectWith objectID: NSManagedObjectID) -> Bool { true }
    /// Whether the object's record may be deleted: always, as nothing is shared here.
    open func canDeleteRecord(forManagedObjectWith objectID: NSManagedObjectID) -> Bool { true }
    /// Whether objects in the store may be changed: unless it is read-only.
    open func canModifyManagedObjects(in store: NSPersistentStore) -> Bool { !store.isReadOnly }
}

/// Which CloudKit container a store is mirrored to (see `NSPersistentStoreDescription.cloudKitContainerOptions`).
/// Unchecked Sendable: immutable: one `let` string.
open class NSPersistentCloudKitContainerOptions: NSObject, @unchecked Sendable {
    /// The CloudKit container's identifier (`iCloud.com.example.App`).
    public let containerIdentifier: String

    /// Options naming a CloudKit container.
    public init(containerIdentifier: String) {
        self.containerIdentifier = containerIdentifier
    }
}

/// How `NSPersistentCloudKitContainer.initializeCloudKitSchema(options:)` works.
public struct NSPersistentCloudKitContainerSchemaInitializationOptions: OptionSet, Sendable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    /// Check without uploading anything (there is nothing to upload to on Linux either way).
    public static let dryRun = NSPersistentCloudKitContainerSchemaInitializationOptions(rawValue: 1 << 1)
    /// Print the schema.
    public static let printSchema = NSPersistentCloudKitContainerSchemaInitializationOptions(rawValue: 1 << 2)
}

/// The rules a model must follow for Core Data to mirror it to CloudKit, as Apple documents them
/// ("Creating a Core Data Model for CloudKit"): no uniqueness constraints; no undefined
/// attributes; every stored attribute optional or with a default value; every relationship
/// optional, with an inverse, unordered, and without the Deny delete rule.
enum CloudKitModelRules {
    /// What breaks the rules among the entities of a configuration (nil: all), one line each.
    static func violations(of model: NSManagedObjectModel, configuration: String?) -> [String] {
        var violations: [String] = []
        for entity in entities(of: model, configuration: configuration) {
            let name = entity.name ?? "?"
            if !entity.uniquenessConstraints.isEmpty { violations.append("\(name): unique constraints aren't supported") }
            for property in entity.properties where property.entity === entity {
                if let attribute = property as? NSAttributeDescription {
                    if attribute.attributeType == .undefinedAttributeType && !attribute.isTransient {
                        violations.append("\(name).\(attribute.name): the Undefined type isn't supported")
                    }
                    if !attribute.isOptional && attribute.defaultValue == nil && !attribute.isTransient {
                        violations.append("\(name).\(attribute.name): must be optional or have a default value")
                    }
                } else if let relationship = property as? NSRelationshipDescription {
                    if !relationship.isOptional { violations.append("\(name).\(relationship.name): relationships must be optional") }
                    if relationship.inverseRelationship == nil { violations.append("\(name).\(relationship.name): relationships must have an inverse") }
                    if relationship.isOrdered { violations.append("\(name).\(relationship.name): ordered relationships aren't supported") }
                    if relationship.deleteRule == .denyDeleteRule { violations.append("\(name).\(relationship.name): the Deny delete rule isn't supported") }
                }
            }
        }
        return violations
    }

    /// The entities a store of a configuration holds (nil or an unknown name: all).
    private static func entities(of model: NSManagedObjectModel, configuration: String?) -> [NSEntityDescription] {
        model.entities(forConfigurationName: configuration) ?? model.entities
    }

    /// The error a store fails with when its model breaks the rules, or nil.
    static func error(for model: NSManagedObjectModel, configuration: String?) -> NSError? {
        let violations = violations(of: model, configuration: configuration)
        guard !violations.isEmpty else { return nil }
        let reason = "CloudKit integration requires a model CloudKit can mirror: " + violations.joined(separator: "; ") + "."
        return CoreDataError.make(.coreData, reason, userInfo: [NSLocalizedFailureReasonErrorKey: reason])
    }

    /// One line per entity: the record type CloudKit would get (`CD_` and the entity's name) and
    /// its fields.
    static func recordTypes(of model: NSManagedObjectModel, configuration: String?) -> [String] {
        entities(of: model, configuration: configuration).map { entity in
            let fields = entity.properties.filter { !$0.isTransient }.map { "CD_\($0.name)" }
            return "CD_\(entity.name ?? "?"): " + fields.joined(separator: ", ")
        }
    }
}
