import Foundation

/// How to order objects by the value at a key path.
///
/// Values are read from both objects and compared with `ValueComparison.sortCompare`: nil
/// first (last when descending), numbers numerically, strings by the selector's order (see
/// `StringComparison`), then dates, data and so on. Supported selectors: `compare:`,
/// `caseInsensitiveCompare:`, `localizedCompare:`, `localizedCaseInsensitiveCompare:`,
/// `localizedStandardCompare:`.
/// Unchecked Sendable: immutable: every stored property is a `let` (the comparator is `@Sendable`).
open class NSSortDescriptor: @unchecked Sendable, Hashable, CustomStringConvertible {
    /// The key path compared (nil compares the objects themselves).
    public let key: String?
    /// Whether smaller values come first.
    public let ascending: Bool
    /// The comparison selector (nil for comparator-based descriptors).
    public let selector: Selector?
    /// A custom comparator, called with the two non-nil values.
    public let comparator: (@Sendable (Any, Any) -> ComparisonResult)?

    let components: [KeyPathComponent]
    let stringOrder: StringComparison.Comparator

    /// Sorts by `key` with `compare:`.
    public convenience init(key: String?, ascending: Bool) {
        self.init(key: key, ascending: ascending, selector: nil)
    }

    /// Sorts by `key` with a selector; nil means `compare:`. An unsupported selector is a
    /// programmer error.
    public init(key: String?, ascending: Bool, selector: Selector?) {
        let chosen = selector ?? Selector("compare:")
        guard let order = StringComparison.comparator(forSelectorName: chosen.name) else {
            coreDataMisuse("NSSortDescriptor: unsupported selector '\(chosen.name)'; supported selectors are "
                           + StringComparison.supportedSelectorNames.joined(separator: ", "))
        }
        self.key = key
        self.ascending = ascending
        self.selector = chosen
        self.comparator = nil
        self.components = key.map(KeyPathComponent.components(of:)) ?? []
        self.stringOrder = order
    }

    /// Sorts by `key` with a comparator called on the two values (nil values sort first).
    public init(key: String?, ascending: Bool, comparator cmptr: @escaping @Sendable (Any, Any) -> ComparisonResult) {
        self.key = key
        self.ascending = ascending
        self.selector = nil
        self.comparator = cmptr
        self.components = key.map(KeyPathComponent.components(of:)) ?? []
        self.stringOrder = StringComparison.binary
    }

    private init(copying other: NSSortDescriptor, ascending: Bool) {
        key = other.key
        self.ascending = ascending
        selector = other.selector
        comparator = other.comparator
        components = other.components
        stringOrder = other.stringOrder
    }

    /// A descriptor with the opposite direction (Apple's type).
    open var reversedSortDescriptor: Any {
        reversed
    }

    /// A descriptor with the opposite direction.
    public var reversed: NSSortDescriptor {
        NSSortDescriptor(copying: self, ascending: !ascending)
    }

    /// The value this descriptor sorts by.
    public func value(of object: Any?) -> Any? {
        components.isEmpty ? object : KeyPathWalker.value(of: object, components: components)
    }

    /// Compares two objects by the values at `key`, honouring `ascending`.
    open func compare(_ object1: Any, to object2: Any) -> ComparisonResult {
        compareValues(value(of: object1), value(of: object2))
    }

    /// Compares two already-read values, honouring `ascending`.
    public func compareValues(_ value1: Any?, _ value2: Any?) -> ComparisonResult {
        let result: ComparisonResult
        if let comparator {
            let a = KeyPathWalker.normalize(value1), b = KeyPathWalker.normalize(value2)
            switch (a, b) {
            case (nil, nil): result = .orderedSame
            case (nil, _): result = .orderedAscending
            case (_, nil): result = .orderedDescending
            case let (x?, y?): result = comparator(x, y)
            }
        } else {
            result = ValueComparison.sortCompare(value1, value2, stringOrder: stringOrder)
        }
        return ascending ? result : PredicateNumber.flip(result)
    }

    /// Compares two objects with a list of descriptors (the first non-equal result wins).
    public static func compare(_ object1: Any, _ object2: Any, using descriptors: [NSSortDescriptor]) -> ComparisonResult {
        for descriptor in descriptors {
            let r = descriptor.compare(object1, to: object2)
            if r != .orderedSame { return r }
        }
        return .orderedSame
    }

    /// Sorts elements with a list of descriptors; stable (equal elements keep their order).
    /// Each element's sort values are read (and strings folded) once.
    public static func sorted<Element>(_ elements: [Element], using descriptors: [NSSortDescriptor]) -> [Element] {
        if descriptors.isEmpty || elements.count < 2 { return elements }
        let keys: [[SortKey]] = elements.map { element in descriptors.map { $0.sortKey(of: element) } }
        let order = elements.indices.sorted { i, j in
            for (d, descriptor) in descriptors.enumerated() {
                let r = descriptor.compareKeys(keys[i][d], keys[j][d])
                if r != .orderedSame { return r == .orderedAscending }
            }
            return i < j
        }
        return order.map { elements[$0] }
    }

    /// A value read for sorting; strings compared with a folding order are prepared once.
    enum SortKey {
        case value(Any?)
        case string(PreparedSortString)
    }

    func sortKey(of object: Any?) -> SortKey {
        let value = value(of: object)
        if comparator == nil, let name = selector?.name, name != "compare:",
           case .string(let string) = PredicateValue.classify(value) {
            return .string(PreparedSortString(string))
        }
        return .value(value)
    }

    func compareKeys(_ a: SortKey, _ b: SortKey) -> ComparisonResult {
        switch (a, b) {
        case let (.string(x), .string(y)):
            let r = PreparedSortString.compare(x, y, selector: selector?.name ?? "compare:")
            return ascending ? r : PredicateNumber.flip(r)
        case let (.string(x), .value(y)): return compareValues(x.original, y)
        case let (.value(x), .string(y)): return compareValues(x, y.original)
        case let (.value(x), .value(y)): return compareValues(x, y)
        }
    }

    // MARK: - Description, equality

    /// `(key, ascending, compare:)`.
    open var description: String {
        "(\(key ?? "SELF"), \(ascending ? "ascending" : "descending"), \(selector?.name ?? "comparator"))"
    }

    public static func == (lhs: NSSortDescriptor, rhs: NSSortDescriptor) -> Bool {
        lhs.isEqual(rhs)
    }

    /// Whether another descriptor has the same key, direction and selector (comparator-based descriptors equal only themselves).
    open func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? NSSortDescriptor else { return false }
        if self === other { return true }
        guard comparator == nil, other.comparator == nil else { return false }
        return key == other.key && ascending == other.ascending && selector == other.selector
    }

    open func hash(into hasher: inout Hasher) {
        hasher.combine(key)
        hasher.combine(ascending)
        hasher.combine(selector)
    }
}
