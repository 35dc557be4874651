import Foundation

/// Collations named after the sort selectors, calling the same comparison as in-memory sorting.
enum SQLiteCollations {
    static let names: [String: String] = [
        "caseInsensitiveCompare:": "OCD_CASEINSENSITIVE",
        "localizedCompare:": "OCD_LOCALIZED",
        "localizedCaseInsensitiveCompare:": "OCD_LOCALIZEDCASEINSENSITIVE",
        "localizedStandardCompare:": "OCD_LOCALIZEDSTANDARD",
    ]

    static func collationName(forSelector selector: String) -> String? { names[selector] }

    /// Each collation's name and order.
    static var all: [(name: String, order: StringComparison.Order)] {
        names.compactMap { selector, name in StringComparison.Order(selectorName: selector).map { (name, $0) } }
    }
}
