import Foundation

/// Collects the keys a Swift key path reads from a probe object.
final class KeyPathRecorder {
    var keys: [String] = []
}

/// Turns Swift key paths into Core Data key-path strings (`\Team.wins` → `"wins"`,
/// `\Venue.priceInfo?.priceCategory` → `"priceInfo.priceCategory"`).
///
/// Linux has no `_kvcKeyPathString`, and `@Managed` properties are computed, so their key paths
/// print no name. The key path is applied to a probe: an unregistered object of the root's entity
/// whose `@Managed` accessors record their key and return a probe for to-one relationships.
/// Stored Swift properties fall back to the key path's description.
public enum KeyPathNames {
    /// The dotted key path string a Swift key path on a managed object class reads.
    public static func name<Root: NSManagedObject, Value>(of keyPath: KeyPath<Root, Value>) -> String {
        name(of: keyPath, rootType: Root.self)
    }

    /// The name from a key path whose root type is only known at run time.
    static func name(of keyPath: AnyKeyPath, rootType: Any.Type) -> String {
        if let managed = rootType as? NSManagedObject.Type, let entity = EntityClassRegistry.entity(for: managed) {
            let recorder = KeyPathRecorder()
            if let probe = probe(for: entity, recorder: recorder) {
                _ = probe[keyPath: keyPath]
                if !recorder.keys.isEmpty { return recorder.keys.joined(separator: ".") }
            }
        }
        return fromDescription(keyPath)
    }

    static func probe(for entity: NSEntityDescription, recorder: KeyPathRecorder) -> NSManagedObject? {
        let object = entity.instantiableClass.init(entity: entity, insertInto: nil)
        object.keyPathRecorder = recorder
        return object
    }

    /// `\Team.name` → `name`; `\Team.other?.name` → `other.name`.
    static func fromDescription(_ keyPath: AnyKeyPath) -> String {
        let text = String(describing: keyPath)
        guard let dot = text.firstIndex(of: ".") else { return text }
        return text[text.index(after: dot)...].replacingOccurrences(of: "?", with: "").replacingOccurrences(of: "!", with: "")
    }
}

extension NSSortDescriptor {
    /// A sort descriptor for a Swift key path of a managed object class.
    public convenience init<Root: NSManagedObject, Value>(keyPath: KeyPath<Root, Value>, ascending: Bool) {
        self.init(key: KeyPathNames.name(of: keyPath), ascending: ascending)
    }

    /// The Core Data form of a Foundation `SortDescriptor` on a managed object class.
    public convenience init<Compared: NSManagedObject>(_ sortDescriptor: SortDescriptor<Compared>) {
        let key = sortDescriptor.keyPath.map { KeyPathNames.name(of: $0, rootType: Compared.self) }
        self.init(key: key, ascending: sortDescriptor.order == .forward)
    }
}

extension NSExpression {
    /// A key path expression from a Swift key path (`\Team.wins` reads `wins`), as for an
    /// `NSExpressionDescription`'s aggregate.
    public convenience init<Root, Value>(forKeyPath keyPath: KeyPath<Root, Value>) {
        self.init(forKeyPath: KeyPathNames.name(of: keyPath, rootType: Root.self))
    }
}

extension NSFetchRequest where ResultType: NSManagedObject {
    /// Sets the sort from Foundation `SortDescriptor`s.
    public func setSortDescriptors(_ descriptors: [SortDescriptor<ResultType>]) {
        sortDescriptors = descriptors.map { NSSortDescriptor($0) }
    }
}
