/// How a to-many relationship changes, for `willChangeValue(forKey:withSetMutation:using:)` and
/// `didChangeValue(forKey:withSetMutation:using:)`: the objects are added (`union`), removed
/// (`minus`), kept (`intersect`) or become the whole set (`set`).
///
/// Foundation on Linux has no key-value observing, so OpenCoreData declares the type with Apple's
/// cases and raw values.
public enum NSKeyValueSetMutationKind: UInt, Sendable {
    /// The objects are added to the set.
    case union = 1
    /// The objects are removed from the set.
    case minus = 2
    /// Only the objects also in the set are kept.
    case intersect = 3
    /// The objects become the set.
    case set = 4
}

/// How an ordered to-many relationship changes at some indexes, for
/// `willChange(_:valuesAt:forKey:)` and `didChange(_:valuesAt:forKey:)`.
///
/// Foundation on Linux has no key-value observing, so OpenCoreData declares the type with Apple's
/// cases and raw values.
public enum NSKeyValueChange: UInt, Sendable {
    /// The whole value is replaced.
    case setting = 1
    /// Objects are inserted at the indexes.
    case insertion = 2
    /// The objects at the indexes are removed.
    case removal = 3
    /// The objects at the indexes are replaced.
    case replacement = 4
}
