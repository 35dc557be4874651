import Foundation

/// One section of a fetched results controller's results.
public protocol NSFetchedResultsSectionInfo: AnyObject {
    /// The section's name: the value of the section key path for its objects ("" for nil).
    var name: String { get }
    /// The section's index title (by default the capitalized first letter of its name).
    var indexTitle: String? { get }
    /// How many objects the section holds.
    var numberOfObjects: Int { get }
    /// The section's objects, in order.
    var objects: [Any]? { get }
}

/// A section of a controller's results: live (its count and objects read from the current
/// results, by name), or frozen (a deleted section, as it was).
final class FetchedResultsSection: NSFetchedResultsSectionInfo {
    let name: String
    let indexTitle: String?
    private weak var state: FetchedResultsState?
    private let frozenObjects: [NSManagedObject]

    /// A live section of a controller's results.
    init(name: String, indexTitle: String?, state: FetchedResultsState) {
        self.name = name
        self.indexTitle = indexTitle
        self.state = state
        self.frozenObjects = []
    }

    /// A section as it was (for a deleted section).
    init(name: String, indexTitle: String?, objects: [NSManagedObject]) {
        self.name = name
        self.indexTitle = indexTitle
        self.state = nil
        self.frozenObjects = objects
    }

    var numberOfObjects: Int { state?.numberOfObjects(inSectionNamed: name) ?? frozenObjects.count }
    var objects: [Any]? { state?.objects(inSectionNamed: name) ?? frozenObjects }
}

/// The kinds of change a fetched results controller reports.
public enum NSFetchedResultsChangeType: UInt, Sendable {
    /// An object (or section) entered the results.
    case insert = 1
    /// An object (or section) left the results.
    case delete = 2
    /// An object changed position.
    case move = 3
    /// An object changed in place.
    case update = 4
}
