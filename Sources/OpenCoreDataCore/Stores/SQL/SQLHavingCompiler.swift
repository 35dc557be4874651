import Foundation
import GRDB

/// Compiles a `havingPredicate`: comparisons whose key paths name the dictionary fetch's columns
/// (its expression descriptions or grouped properties), or aggregate expressions, against constants.
struct SQLHavingCompiler {
    let names: [String: String]
    var builder: SQLFetchBuilder

    init(names: [String: String], builder: SQLFetchBuilder) {
        self.names = names
        self.builder = builder
    }

    mutating func compile(_ predicate: NSPredicate) throws -> String {
        if let error = predicate.formatError { throw error }
        if let compound = predicate as? NSCompoundPredicate {
            let parts = try compound.predicates.map { try compile($0) }
            switch compound.compoundPredicateType {
            case .and: return "(" + parts.joined(separator: " AND ") + ")"
            case .or: return "(" + parts.joined(separator: " OR ") + ")"
            case .not: return "(NOT IFNULL(\(parts.first ?? "0"), 0))"
            }
        }
        if let value = predicate.booleanValue { return value ? "1" : "0" }
        guard let comparison = predicate as? NSComparisonPredicate, comparison.comparisonPredicateModifier == .direct else {
            throw CoreDataError.make(.unsupportedRequest, "The SQLite store can't use \(predicate) as a having predicate.")
        }
        let left = try operand(comparison.leftExpression)
        let right = try operand(comparison.rightExpression)
        let operators: [NSComparisonPredicate.Operator: String] = [
            // `IS` and `IS NOT`: nil equals nil and differs from a value, as `evaluate(with:)` has it.
            .equalTo: "IS", .notEqualTo: "IS NOT", .lessThan: "<", .lessThanOrEqualTo: "<=", .greaterThan: ">", .greaterThanOrEqualTo: ">=",
        ]
        guard let op = operators[comparison.predicateOperatorType] else {
            throw CoreDataError.make(.unsupportedRequest, "The SQLite store can't use the operator of \(predicate) in a having predicate.")
        }
        return "(\(left) \(op) \(right))"
    }

    private mutating func operand(_ expression: NSExpression) throws -> String {
        switch expression.expressionType {
        case .keyPath:
            if let known = names[expression.keyPath] { return known }
            return try builder.aggregateSQL(expression)
        case .variable:
            if let known = names[expression.variable] { return known }
            throw CoreDataError.make(.coreData, "The having predicate names $\(expression.variable), which is not a fetched column.")
        case .constantValue:
            return builder.bind(SQLPredicateCompiler.databaseValue(expression.constantValue ?? NSNull(), nil))
        default:
            return try builder.aggregateSQL(expression)
        }
    }
}
