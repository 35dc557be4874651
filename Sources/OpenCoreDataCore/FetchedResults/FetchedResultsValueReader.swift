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
    /// The entity the slots belong to, and for each descriptor the slot of its attribute when it
    /// names one (read straight from an object of that entity, without a lookup by name).
    private let entity: NSEntityDescription?
    private let attributeSlots: [Int?]
    /// For each descriptor, the to-one relationship and the destination's attribute when its key
    /// path is `relationship.attribute` (`department.name`), read from the destination's slot
    /// without walking the key path.
    private let toOnePaths: [ToOnePath?]
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
        self.entity = entity
        attributeSlots = singleKeys.map { key in
            guard let key, let attribute = entity?.frozenPropertiesByName[key] as? NSAttributeDescription else { return nil }
            return attribute.slot
        }
        toOnePaths = descriptors.map { descriptor in
            guard let key = descriptor.key, let entity else { return nil }
            let parts = key.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 2, let relationship = entity.frozenPropertiesByName[String(parts[0])] as? NSRelationshipDescription,
                  !relationship.isToMany, let destination = relationship.destinationEntity,
                  let attribute = destination.frozenPropertiesByName[String(parts[1])] as? NSAttributeDescription else { return nil }
            return ToOnePath(relationship: relationship, destination: destination, key: attribute.name, slot: attribute.slot)
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

    /// Appends the object's sort values to the columns of `rows` (the caller appends its key)
    /// and returns its section name ("" without a section key path).
    func read(_ object: NSManagedObject, into rows: inout SortedRowsChunk) -> String {
        let direct = object.entity === entity
        if direct { object.fireFaultIfNeeded() }
        // The first sort value, kept for the section name (not read back out of the column).
        var first = SortValue.null
        for (column, descriptor) in descriptors.enumerated() {
            let value: Any?
            if direct, let slot = attributeSlots[column] {
                // A number, Boolean or date is read from its slot's word, without boxing it.
                let values = object.values
                if let word = values.word(at: slot), let sortValue = Self.sortValue(word: word, slotKind: values.kind(at: slot), columnKind: kinds[column]) {
                    if column == 0 { first = sortValue }
                    rows.columns[column].append(sortValue)
                    continue
                }
                // A string is read in place, without copying the slot's `Any?`.
                if kinds[column] == .string, let string = values.string(at: slot) {
                    if column == 0 { first = .string(string) }
                    rows.columns[column].append(.string(string))
                    continue
                }
                value = values[slot]
            } else if direct, let path = toOnePaths[column] {
                let sortValue = path.sortValue(of: object, kind: kinds[column])
                if column == 0 { first = sortValue }
                rows.columns[column].append(sortValue)
                continue
            } else {
                value = singleKeys[column].map { object.value(forKey: $0) } ?? descriptor.value(of: object)
            }
            let sortValue = SortValue(value, kind: kinds[column])
            if column == 0 { first = sortValue }
            rows.columns[column].append(sortValue)
        }
        guard let sectionComponents else { return "" }
        if sectionIsFirstSortValue {
            switch first {
            case .integer(let number): return String(number)
            case .string(let string): return string
            case .null: return ""
            default: break
            }
        }
        return SectionNaming.name(from: KeyPathWalker.value(of: object, components: sectionComponents))
    }

    /// A key path through a to-one relationship to an attribute of its destination.
    private struct ToOnePath {
        let relationship: NSRelationshipDescription
        let destination: NSEntityDescription
        let key: String
        let slot: Int

        /// The sort value of the attribute at the end of the path (NULL when the relationship is
        /// nil), as walking the key path gives it.
        func sortValue(of object: NSManagedObject, kind: SortValue.Kind) -> SortValue {
            guard let target = object.toOneDestination(relationship) else { return .null }
            // A destination of a subentity may keep the attribute in another slot: ask by name.
            guard target.entity === destination else { return SortValue(KeyPathWalker.normalize(target.value(forKey: key)), kind: kind) }
            target.fireFaultIfNeeded()
            if kind == .string, let string = target.attributeString(at: slot) { return .string(string) }
            return SortValue(target.attributeValue(at: slot), kind: kind)
        }
    }

    /// The sort value of a slot's word, as `SortValue(_:kind:)` gives it for the boxed value; nil
    /// when the slot's kind does not store values of the column's kind.
    @inline(__always)
    private static func sortValue(word: UInt64, slotKind: SlotLayout.Kind, columnKind: SortValue.Kind) -> SortValue? {
        switch (slotKind, columnKind) {
        case (.int64, .integer): return .integer(Int64(bitPattern: word))
        case (.int32, .integer): return .integer(Int64(Int32(truncatingIfNeeded: Int64(bitPattern: word))))
        case (.int16, .integer): return .integer(Int64(Int16(truncatingIfNeeded: Int64(bitPattern: word))))
        case (.bool, .integer): return .integer(word != 0 ? 1 : 0)
        case (.double, .double), (.date, .double):
            let number = Double(bitPattern: word)
            return number.isNaN ? .null : .double(number)
        case (.float, .double):
            let number = Double(Float(bitPattern: UInt32(truncatingIfNeeded: word)))
            return number.isNaN ? .null : .double(number)
        default:
            return nil
        }
    }
}
