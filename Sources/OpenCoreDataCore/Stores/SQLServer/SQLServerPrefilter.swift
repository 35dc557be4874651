import Foundation

/// The part of a predicate a server can test in its `WHERE`, so a fetch reads only rows that may
/// match: a condition every row the predicate matches also meets. The fetch still evaluates the
/// whole predicate in Swift over the rows it reads, so the answer is the in-memory evaluator's;
/// the condition only saves reading rows that can't match.
///
/// Translated, where SQL and the evaluator agree exactly (NULLs included): comparisons (`<`, `<=`,
/// `>`, `>=`, `==`, `!=`, `BETWEEN`, `IN`) of an integer, double or date attribute of the entity
/// with constants, `== nil` and `!= nil` on any stored attribute, and `AND`/`OR` of those. An
/// `AND` keeps the parts it can translate; an `OR` or anything else (strings, whose comparison
/// rules differ from a database's collation; key paths through relationships; `NOT`) translates
/// to nothing, which reads every row.
struct SQLServerPrefilter {
    let entity: NSEntityDescription
    let columns: [Int: String]
    /// The values bound to `$1`, `$2`, … of the conditions made so far.
    private(set) var values: [SQLServerValue] = []

    init(entity: NSEntityDescription, columns: [Int: String]) {
        self.entity = entity
        self.columns = columns
    }

    /// The condition for a predicate, or nil when no part of it translates.
    mutating func condition(for predicate: NSPredicate) -> String? {
        if let compound = predicate as? NSCompoundPredicate {
            switch compound.compoundPredicateType {
            case .and:
                let parts = compound.predicates.compactMap { condition(for: $0) }
                return parts.isEmpty ? nil : "(" + parts.joined(separator: " AND ") + ")"
            case .or:
                let saved = values
                var parts: [String] = []
                for part in compound.predicates {
                    guard let translated = condition(for: part) else {
                        values = saved
                        return nil
                    }
                    parts.append(translated)
                }
                return parts.isEmpty ? nil : "(" + parts.joined(separator: " OR ") + ")"
            case .not:
                return nil
            }
        }
        guard let comparison = predicate as? NSComparisonPredicate, comparison.comparisonPredicateModifier == .direct else { return nil }
        if let (attribute, column) = attribute(comparison.leftExpression), let value = Self.constant(comparison.rightExpression) {
            return condition(column, attribute, comparison.predicateOperatorType, value.value)
        }
        if let (attribute, column) = attribute(comparison.rightExpression), let value = Self.constant(comparison.leftExpression),
           let flipped = Self.flipped(comparison.predicateOperatorType) {
            return condition(column, attribute, flipped, value.value)
        }
        return nil
    }

    /// The value of a constant expression, or of an aggregate of constants (`{1, 5}`) as an array.
    private static func constant(_ expression: NSExpression) -> (value: Any?, Void)? {
        switch expression.node {
        case .constant(let value):
            return (value, ())
        case .aggregate(let items):
            var values: [Any] = []
            for item in items {
                guard case .constant(let value) = item.node, let value else { return nil }
                values.append(value)
            }
            return (values, ())
        default:
            return nil
        }
    }

    /// A key path expression naming one stored attribute of the entity, with its column.
    private func attribute(_ expression: NSExpression) -> (NSAttributeDescription, String)? {
        guard case .keyPath(let operand, _, let components) = expression.node, components.count == 1, case .key(let name) = components[0] else { return nil }
        if let operand, case .evaluatedObject = operand.node {} else if operand != nil { return nil }
        guard let attribute = entity.frozenPropertiesByName[name] as? NSAttributeDescription, !attribute.isTransient,
              let column = columns[attribute.slot] else { return nil }
        return (attribute, column)
    }

    private mutating func condition(_ column: String, _ attribute: NSAttributeDescription, _ operation: NSComparisonPredicate.Operator, _ value: Any?) -> String? {
        if value == nil || value is NSNull {
            switch operation {
            case .equalTo: return "\(column) IS NULL"
            case .notEqualTo: return "\(column) IS NOT NULL"
            default: return nil
            }
        }
        switch operation {
        case .lessThan, .lessThanOrEqualTo, .greaterThan, .greaterThanOrEqualTo, .equalTo:
            guard let bound = bind(value, for: attribute) else { return nil }
            let symbol = [NSComparisonPredicate.Operator.lessThan: "<", .lessThanOrEqualTo: "<=", .greaterThan: ">", .greaterThanOrEqualTo: ">=", .equalTo: "="][operation]!
            return "\(column) \(symbol) \(bound)"
        case .notEqualTo:
            guard let bound = bind(value, for: attribute) else { return nil }
            return "(\(column) <> \(bound) OR \(column) IS NULL)"
        case .between:
            guard let bounds = Self.elements(value), bounds.count == 2,
                  let low = bind(bounds[0], for: attribute), let high = bind(bounds[1], for: attribute) else { return nil }
            return "\(column) BETWEEN \(low) AND \(high)"
        case .in:
            guard let members = Self.elements(value), !members.isEmpty, members.count <= 1_000 else { return nil }
            let saved = values
            var bound: [String] = []
            for member in members {
                guard let parameter = bind(member, for: attribute) else {
                    values = saved
                    return nil
                }
                bound.append(parameter)
            }
            return "\(column) IN (\(bound.joined(separator: ", ")))"
        default:
            return nil
        }
    }

    /// Binds a constant compared with an attribute, as `$n`; nil when SQL would compare it
    /// differently from the evaluator (other types, inexact numbers, Booleans).
    private mutating func bind(_ value: Any?, for attribute: NSAttributeDescription) -> String? {
        guard let value, !(value is Bool), !(value is String) else { return nil }
        if let number = value as? NSNumber, [UInt8(ascii: "c"), UInt8(ascii: "B")].contains(UInt8(bitPattern: number.objCType.pointee)) { return nil }
        let bound: SQLServerValue
        switch attribute.attributeType {
        case .integer16AttributeType, .integer32AttributeType, .integer64AttributeType:
            guard let integer = AttributeValueCoding.exactInteger(value) else { return nil }
            bound = .integer(integer)
        case .doubleAttributeType:
            guard !(value is String), let number = AttributeValueCoding.numericValue(value), number.isFinite else { return nil }
            bound = .real(number)
        case .dateAttributeType:
            guard let date = value as? Date else { return nil }
            bound = .real(date.timeIntervalSinceReferenceDate)
        default:
            return nil
        }
        values.append(bound)
        return "$\(values.count)"
    }

    /// The operator with its sides swapped (`5 < a` is `a > 5`).
    private static func flipped(_ operation: NSComparisonPredicate.Operator) -> NSComparisonPredicate.Operator? {
        switch operation {
        case .lessThan: .greaterThan
        case .lessThanOrEqualTo: .greaterThanOrEqualTo
        case .greaterThan: .lessThan
        case .greaterThanOrEqualTo: .lessThanOrEqualTo
        case .equalTo, .notEqualTo: operation
        default: nil
        }
    }

    /// The elements of a constant collection.
    private static func elements(_ value: Any?) -> [Any]? {
        switch value {
        case let array as [Any]: array
        case let set as Set<AnyHashable>: Array(set)
        case let array as NSArray: array.map { $0 }
        case let set as NSSet: set.map { $0 }
        default: nil
        }
    }
}
