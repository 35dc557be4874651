import Foundation

/// The part of a predicate a server can test in its `WHERE`, so a fetch reads only rows that may
/// match: a condition every row the predicate matches also meets. The fetch still evaluates the
/// whole predicate in Swift over the rows it reads, so the answer is the in-memory evaluator's;
/// the condition only saves reading rows that can't match.
///
/// Translated:
/// - comparisons (`<`, `<=`, `>`, `>=`, `==`, `!=`, `BETWEEN`, `IN`) of an integer, double or date
///   attribute with constants, `== nil` and `!= nil` on any stored attribute: SQL and the
///   evaluator agree exactly, NULLs included;
/// - `==`, `BEGINSWITH`, `ENDSWITH`, `CONTAINS`, `LIKE` and `IN` of a string attribute with ASCII
///   constants, any options, as `=`, `LIKE` or `ILIKE`, **or** any row whose value has a non-ASCII
///   character. On ASCII text a database compares as Foundation does; beyond it (case folding of
///   `ß`, canonical equivalence, diacritics) they differ, so such rows are always read and left to
///   the evaluator;
/// - either of those through to-one relationships (`group.title == 'x'`, as `group IN (SELECT …)`,
///   with rows without a group when nil could match) and after `ANY` over a to-many relationship
///   kept by its inverse's column;
/// - `AND`/`OR` of those. An `AND` keeps the parts it can translate; an `OR` with a part it can't,
///   `NOT`, string ordering (`<` on strings, whose rules differ from a collation's) and anything
///   else translate to nothing, which reads every row.
struct SQLServerPrefilter {
    let entity: NSEntityDescription
    let schema: SQLiteSchema
    /// The values bound to `$1`, `$2`, … of the conditions made so far.
    private(set) var values: [SQLServerValue] = []
    /// Whether the condition made is the predicate itself, not only a condition its matches meet:
    /// no part was left out and no string comparison was widened. (Its rows then need no
    /// evaluation in Swift.)
    private(set) var isExact = true

    init(entity: NSEntityDescription, schema: SQLiteSchema) {
        self.entity = entity
        self.schema = schema
    }

    /// The condition for a predicate, or nil when no part of it translates.
    mutating func condition(for predicate: NSPredicate) -> String? {
        if let compound = predicate as? NSCompoundPredicate {
            switch compound.compoundPredicateType {
            case .and:
                let parts = compound.predicates.compactMap { condition(for: $0) }
                if parts.count < compound.predicates.count { isExact = false }
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
        guard let comparison = predicate as? NSComparisonPredicate else { return nil }
        let operation = comparison.predicateOperatorType
        if let target = target(comparison.leftExpression, modifier: comparison.comparisonPredicateModifier),
           let value = Self.constant(comparison.rightExpression) {
            return condition(target, operation, comparison.options, value.value)
        }
        if comparison.comparisonPredicateModifier == .direct, let target = target(comparison.rightExpression, modifier: .direct),
           let value = Self.constant(comparison.leftExpression), let flipped = Self.flipped(operation) {
            return condition(target, flipped, comparison.options, value.value)
        }
        return nil
    }

    /// A stored attribute reached from the fetched rows: directly, through to-one relationships
    /// (each a step: the key column in its table, and the table it points into), or through a
    /// to-many relationship under `ANY` (a first step back from its destination's inverse column).
    private struct Target {
        enum Step {
            case toOne(column: String, destination: NSEntityDescription)
            case anyMember(inverseColumn: String, destination: NSEntityDescription)
        }
        var steps: [Step] = []
        let attribute: NSAttributeDescription
        let column: String
    }

    private func target(_ expression: NSExpression, modifier: NSComparisonPredicate.Modifier) -> Target? {
        guard case .keyPath(let operand, _, let components) = expression.node, !components.isEmpty else { return nil }
        if let operand, case .evaluatedObject = operand.node {} else if operand != nil { return nil }
        var current = entity
        var steps: [Target.Step] = []
        for (index, component) in components.enumerated() {
            guard case .key(let name) = component, let property = current.frozenPropertiesByName[name], !property.isTransient,
                  let mapping = schema.mapping(for: current) else { return nil }
            if index == components.count - 1 {
                guard modifier == .direct || steps.contains(where: { if case .anyMember = $0 { true } else { false } }),
                      let attribute = property as? NSAttributeDescription, let column = mapping.columnsBySlot[attribute.slot] else { return nil }
                return Target(steps: steps, attribute: attribute, column: column)
            }
            guard let relationship = property as? NSRelationshipDescription, let destination = relationship.destinationEntity else { return nil }
            if relationship.isToMany {
                // Only `ANY x.attribute`, as the first step, over a relationship its inverse keeps.
                guard modifier == .any, index == 0, components.count == 2, schema.joinTable(for: relationship) == nil,
                      let inverse = relationship.inverseRelationship, !inverse.isToMany,
                      let inverseColumn = schema.mapping(for: destination)?.columnsBySlot[inverse.slot] else { return nil }
                steps.append(.anyMember(inverseColumn: inverseColumn, destination: destination))
            } else {
                guard let column = mapping.columnsBySlot[relationship.slot] else { return nil }
                steps.append(.toOne(column: column, destination: destination))
            }
            current = destination
        }
        return nil
    }

    /// The condition of one comparison on a target: on its column, then wrapped in a subquery per step.
    private mutating func condition(_ target: Target, _ operation: NSComparisonPredicate.Operator,
                                    _ options: NSComparisonPredicate.Options, _ value: Any?) -> String? {
        // A string compared with a value is widened (see `stringCondition`), so no longer exact.
        let widened = target.attribute.attributeType == .stringAttributeType && value != nil && !(value is NSNull)
        if widened { isExact = false }
        guard var condition = widened
                ? stringCondition(target.column, operation, options, value)
                : self.condition(target.column, target.attribute, operation, value) else { return nil }
        // Whether a row whose key path ends at nil (no destination) may match.
        let nilMayMatch = ((value == nil || value is NSNull) && operation == .equalTo) || operation == .notEqualTo
        for step in target.steps.reversed() {
            switch step {
            case .toOne(let column, let destination):
                guard let table = schema.mapping(for: destination)?.tableName else { return nil }
                let inner = "\(column) IN (SELECT Z_PK FROM \(table) WHERE \(entityCondition(destination)) AND \(condition))"
                condition = nilMayMatch ? "(\(column) IS NULL OR \(inner))" : inner
            case .anyMember(let inverseColumn, let destination):
                guard let table = schema.mapping(for: destination)?.tableName else { return nil }
                condition = "Z_PK IN (SELECT \(inverseColumn) FROM \(table) WHERE \(entityCondition(destination)) AND \(condition))"
            }
        }
        return condition
    }

    /// `Z_ENT IN (…)` for an entity and its subentities.
    private func entityCondition(_ entity: NSEntityDescription) -> String {
        "Z_ENT IN (" + entity.selfAndDescendants.compactMap { schema.mapping(for: $0)?.number }.map(String.init).joined(separator: ", ") + ")"
    }

    /// A string comparison with ASCII constants, as a condition every matching row meets: the
    /// database's `=`/`LIKE`/`ILIKE`, or a non-ASCII character in the value.
    private mutating func stringCondition(_ column: String, _ operation: NSComparisonPredicate.Operator,
                                          _ options: NSComparisonPredicate.Options, _ value: Any?) -> String? {
        let caseless = options.contains(.caseInsensitive)
        let like = caseless ? "ILIKE" : "LIKE"
        func ascii(_ text: String) -> Bool { text.utf8.allSatisfy { $0 > 0 && $0 < 0x80 } }
        func escaped(_ text: String) -> String {
            text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "%", with: "\\%").replacingOccurrences(of: "_", with: "\\_")
        }
        let test: String
        switch operation {
        case .equalTo, .beginsWith, .endsWith, .contains, .like:
            guard let text = value as? String, ascii(text) else { return nil }
            switch operation {
            case .equalTo where !caseless: test = "\(column) = \(bind(.text(text)))"
            case .equalTo: test = "\(column) ILIKE \(bind(.text(escaped(text))))"
            case .beginsWith: test = "\(column) \(like) \(bind(.text(escaped(text) + "%")))"
            case .endsWith: test = "\(column) \(like) \(bind(.text("%" + escaped(text))))"
            case .contains: test = "\(column) \(like) \(bind(.text("%" + escaped(text) + "%")))"
            default:
                // Core Data's wildcards `*` and `?`; a pattern with escapes of its own is left to Swift.
                guard !text.contains("\\") else { return nil }
                let pattern = escaped(text).replacingOccurrences(of: "*", with: "%").replacingOccurrences(of: "?", with: "_")
                test = "\(column) \(like) \(bind(.text(pattern)))"
            }
        case .in:
            guard let members = Self.elements(value), !members.isEmpty, members.count <= 1_000 else { return nil }
            let texts = members.compactMap { $0 as? String }
            guard texts.count == members.count, texts.allSatisfy(ascii) else { return nil }
            test = caseless
                ? "(" + texts.map { "\(column) ILIKE \(bind(.text(escaped($0))))" }.joined(separator: " OR ") + ")"
                : "\(column) IN (" + texts.map { bind(.text($0)) }.joined(separator: ", ") + ")"
        default:
            return nil
        }
        return "(\(test) OR \(column) ~ \(bind(.text("[^\\x01-\\x7f]"))))"
    }

    /// Binds a value as the next parameter; returns its `$n`.
    private mutating func bind(_ value: SQLServerValue) -> String {
        values.append(value)
        return "$\(values.count)"
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
        return bind(bound)
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
