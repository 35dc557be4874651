import Foundation

/// Reads what the index keeps of an object: its value for each sort descriptor and its section
/// name, with the section key path parsed once.
struct FetchedResultsValueReader {
    let descriptors: [NSSortDescriptor]
    let kinds: [SortValue.Kind]
    private let sectionComponents: [KeyPathComponent]?
    /// For each descriptor, the key when it names one property (read with `value(forKey:)`,
    /// without walking a key path).
    private let singleKeys: [String?]
    /// Whether the section name is the first sort value printed (the section key path is the
    /// first sort key and an integer or string attribute), so it needs no second read.
    private let sectionIsFirstSortValue: Bool

    init(descriptors: [NSSortDescriptor], kinds: [SortValue.Kind], sectionNameKeyPath: String?, entity: NSEntityDescription?) {
        self.descriptors = descriptors
        self.kinds = kinds
        sectionComponents = sectionNameKeyPath.map(KeyPathComponent.components(of:))
        singleKeys = descriptors.map { descriptor in
            guard let key = descriptor.key, !key.contains("."), !key.hasPrefix("@"), let entity, entity.frozenPropertiesByName[key] != nil else { return nil }
            return key
        }
        var firstIsSection = false
        if let sectionNameKeyPath, let entity, descriptors.first?.key == sectionNameKeyPath,
           let attribute = FetchedResultsState.property(at: sectionNameKeyPath, from: entity) as? NSAttributeDescription {
            switch attribute.attributeType {
            case .integer16AttributeType, .integer32AttributeType, .integer64AttributeType, .stringAttributeType: firstIsSection = true
            default: break
            }
        }
        sectionIsFirstSortValue = firstIsSection
    }

    /// The object's sort values and section name ("" without a section key path).
    func read(_ object: NSManagedObject) -> (values: [SortValue], sectionName: String) {
        var values: [SortValue] = []
        values.reserveCapacity(descriptors.count)
        for (column, descriptor) in descriptors.enumerated() {
            let value = singleKeys[column].map { object.value(forKey: $0) } ?? descriptor.value(of: object)
            values.append(SortValue(value, kind: kinds[column]))
        }
        guard let sectionComponents else { return (values, "") }
        if sectionIsFirstSortValue {
            switch values[0] {
            case .integer(let number): return (values, String(number))
            case .string(let string): return (values, string)
            case .null: return (values, "")
            default: break
            }
        }
        return (values, SectionNaming.name(from: KeyPathWalker.value(of: object, components: sectionComponents)))
    }
}
