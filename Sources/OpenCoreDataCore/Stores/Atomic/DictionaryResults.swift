import Foundation

/// Builds dictionary results in memory (for the in-memory and binary stores): plain properties,
/// expression descriptions with aggregate functions, grouping, having and distinct.
enum DictionaryResults {
    /// `readers` are the matching rows in order, before any limit or offset.
    static func make(from readers: [RowReader], request: NSFetchRequest<NSFetchRequestResult>, entity: NSEntityDescription) -> [[String: Any]] {
        let requested: [Any] = request.propertiesToFetch ?? entity.frozenAttributes.filter { !$0.isTransient }.map(\.name)
        let groupKeys = (request.propertiesToGroupBy ?? []).compactMap { ($0 as? String) ?? ($0 as? NSPropertyDescription)?.name }
        let aggregates = requested.contains { isAggregate($0) }
        var results: [[String: Any]]
        if groupKeys.isEmpty && !aggregates {
            results = readers.map { row(for: [$0], requested: requested) }
        } else {
            var order: [[GroupingValue]] = []
            var groups: [[GroupingValue]: [RowReader]] = [:]
            for reader in readers {
                let key = groupKeys.map { GroupingValue(KeyPathWalker.value(of: reader, forKeyPath: $0)) }
                if groups[key] == nil { order.append(key) }
                groups[key, default: []].append(reader)
            }
            if order.isEmpty && groupKeys.isEmpty { order = [[]]; groups[[]] = [] }
            results = order.map { row(for: groups[$0]!, requested: requested) }
            if let having = request.havingPredicate { results = results.filter { having.evaluate(with: $0) } }
        }
        if request.returnsDistinctResults {
            var seen = Set<[String: GroupingValue]>()
            results = results.filter { seen.insert($0.mapValues { GroupingValue($0) }).inserted }
        }
        if groupKeys.isEmpty && !aggregates { return results }
        if request.fetchOffset > 0 { results = Array(results.dropFirst(request.fetchOffset)) }
        if request.fetchLimit > 0 { results = Array(results.prefix(request.fetchLimit)) }
        return results
    }

    private static func isAggregate(_ item: Any) -> Bool {
        guard let description = item as? NSExpressionDescription, let expression = description.expression else { return false }
        return ["sum:", "count:", "min:", "max:", "average:"].contains(expression.function)
    }

    /// One result dictionary for a group of rows (a single row when not grouping).
    private static func row(for group: [RowReader], requested: [Any]) -> [String: Any] {
        var dictionary: [String: Any] = [:]
        for item in requested {
            if let description = item as? NSExpressionDescription {
                dictionary[description.name] = compute(description, over: group)
            } else if let name = (item as? String) ?? (item as? NSPropertyDescription)?.name, let first = group.first {
                dictionary[name] = value(KeyPathWalker.value(of: first, forKeyPath: name))
            }
        }
        return dictionary
    }

    private static func value(_ raw: Any?) -> Any? {
        (raw as? RowReader)?.id ?? raw
    }

    private static func compute(_ description: NSExpressionDescription, over group: [RowReader]) -> Any? {
        guard let expression = description.expression else { return nil }
        let function = expression.function
        guard ["sum:", "count:", "min:", "max:", "average:"].contains(function), let argument = expression.arguments?.first else {
            return group.first.flatMap { expression.expressionValue(with: $0, context: nil) }
        }
        let values = group.compactMap { argument.expressionValue(with: $0, context: nil) }
        let numbers = values.compactMap(AttributeValueCoding.numericValue)
        let result: Any?
        switch function {
        case "count:": result = Int64(values.count)
        case "sum:": result = numbers.reduce(0, +)
        case "average:": result = numbers.isEmpty ? nil : numbers.reduce(0, +) / Double(numbers.count)
        case "min:": result = values.min { ValueComparison.sortCompare($0, $1) == .orderedAscending }
        default: result = values.max { ValueComparison.sortCompare($0, $1) == .orderedAscending }
        }
        return convert(result, to: description.expressionResultType)
    }

    private static func convert(_ value: Any?, to type: NSAttributeType) -> Any? {
        guard let value else { return nil }
        guard let number = AttributeValueCoding.numericValue(value) else { return value }
        switch type {
        case .integer16AttributeType: return Int16(truncatingIfNeeded: Int64(number.rounded()))
        case .integer32AttributeType: return Int32(truncatingIfNeeded: Int64(number.rounded()))
        case .integer64AttributeType: return Int64(number.rounded())
        case .doubleAttributeType: return number
        case .floatAttributeType: return Float(number)
        case .decimalAttributeType: return Decimal(number)
        default: return value
        }
    }
}

/// A value as rows are grouped or told apart by it, as SQL does: a number by its value whatever
/// its type (`true`, `1`, `Int32(1)`, `1.0` and an `NSNumber` of 1 are one group), an object by
/// its ID, and nil as one group. (`AnyHashable` can't serve: on Linux an `NSNumber` of a Boolean
/// equals the integer 1 but hashes differently, which breaks a `Dictionary`.)
private enum GroupingValue: Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case date(Double)
    case string(String)
    case other(AnyHashable)

    init(_ value: Any?) {
        switch value {
        case nil, is NSNull: self = .null
        case let string as String: self = .string(string)
        case let date as Date: self = .date(date.timeIntervalSinceReferenceDate)
        case let bool as Bool: self = .integer(bool ? 1 : 0)
        case let reader as RowReader: self = .other(reader.id)
        case let value?:
            if let integer = AttributeValueCoding.exactInteger(value) {
                self = .integer(integer)
            } else if let number = AttributeValueCoding.numericValue(value) {
                self = .real(number)
            } else if let hashable = value as? AnyHashable {
                self = .other(hashable)
            } else {
                self = .other(ObjectIdentifier(value as AnyObject))
            }
        }
    }
}
