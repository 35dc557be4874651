import Foundation
import GRDB

/// Compiles a predicate tree into an SQL condition with the same meaning as in-memory evaluation.
///
/// - A comparison with NULL is false, so `!=` also matches NULL columns, and `NOT` coalesces its
///   operand's NULL to false before negating.
/// - String operators with options, `LIKE`, `MATCHES`, `BEGINSWITH`, `ENDSWITH` and `CONTAINS`
///   call `OCD_MATCH`, which runs the very comparison the in-memory evaluator runs.
/// - To-many key paths need `ANY`/`ALL`/`NONE` (or an aggregate such as `@count`) and become
///   `EXISTS` subqueries; a bare to-many key is rejected.
struct SQLPredicateCompiler {
    var builder: SQLFetchBuilder
    let rootAlias: String
    let rootEntity: NSEntityDescription
    /// SUBQUERY iteration variables bound to the alias and entity of their element rows.
    private var variables: [String: (alias: String, entity: NSEntityDescription)] = [:]

    init(builder: SQLFetchBuilder, rootAlias: String, rootEntity: NSEntityDescription) {
        self.builder = builder
        self.rootAlias = rootAlias
        self.rootEntity = rootEntity
    }

    mutating func compile(_ predicate: NSPredicate) throws -> String {
        try compile(predicate, alias: rootAlias, entity: rootEntity)
    }

    private mutating func compile(_ predicate: NSPredicate, alias: String, entity: NSEntityDescription) throws -> String {
        if let error = predicate.formatError {
            throw error
        }
        if let compound = predicate as? NSCompoundPredicate {
            if let membership = Self.membership(equivalentTo: compound) {
                return try compile(membership, alias: alias, entity: entity)
            }
            let parts = try compound.predicates.map { try compile($0, alias: alias, entity: entity) }
            switch compound.compoundPredicateType {
            case .and:
                // Cheap SQL terms first: SQLite evaluates AND terms in order, and OCD_MATCH calls into Swift.
                // Only terms without bound parameters move, so the parameters keep their order.
                let deferred: (String) -> Bool = { $0.contains("OCD_MATCH") && !$0.contains("?") }
                let ordered = parts.filter { !deferred($0) } + parts.filter(deferred)
                return ordered.isEmpty ? "1" : Self.balanced(ordered[...], "AND")
            case .or: return parts.isEmpty ? "0" : Self.balanced(parts[...], "OR")
            case .not: return "(NOT IFNULL(\(parts.first ?? "0"), 0))"
            }
        }
        if let comparison = predicate as? NSComparisonPredicate {
            return try compileComparison(comparison, alias: alias, entity: entity)
        }
        if let value = predicate.booleanValue { return value ? "1" : "0" }
        throw unsupported("a block predicate", predicate)
    }

    /// Terms joined by `AND` or `OR`, in their order, grouped as a balanced tree: SQLite parses
    /// `a OR b OR c …` into a tree as deep as the number of terms, and refuses one deeper than
    /// 1,000 ("Expression tree is too large"); grouped in halves, 1,000 terms are 10 deep.
    static func balanced(_ terms: ArraySlice<String>, _ operator: String) -> String {
        guard terms.count > 8 else { return "(" + terms.joined(separator: " \(`operator`) ") + ")" }
        let middle = terms.startIndex + terms.count / 2
        return "(" + balanced(terms[..<middle], `operator`) + " \(`operator`) " + balanced(terms[middle...], `operator`) + ")"
    }

    /// A long `OR` of `key == constant` terms on one key path, as `key IN {constants}`: the same
    /// rows, and SQL SQLite accepts (an `OR` of 1,000 terms is deeper than SQLite's expression
    /// limit). Short ones compile as written.
    static func membership(equivalentTo compound: NSCompoundPredicate) -> NSPredicate? {
        guard compound.compoundPredicateType == .or, compound.predicates.count > 16 else { return nil }
        var keyPath: String?
        var values: [Any] = []
        for case let term as NSComparisonPredicate in compound.predicates {
            guard term.predicateOperatorType == .equalTo, term.comparisonPredicateModifier == .direct, term.options.isEmpty,
                  case .keyPath(nil, let path, _) = term.leftExpression.node,
                  case .constant(let constant?) = term.rightExpression.node, !(constant is NSNull),
                  keyPath == nil || keyPath == path else { return nil }
            keyPath = path
            values.append(constant)
        }
        guard let keyPath, values.count == compound.predicates.count else { return nil }
        return NSComparisonPredicate(leftExpression: NSExpression(forKeyPath: keyPath), rightExpression: NSExpression(forConstantValue: values),
                                     modifier: .direct, type: .in, options: [])
    }

    // MARK: Comparisons

    private mutating func compileComparison(_ predicate: NSComparisonPredicate, alias: String, entity: NSEntityDescription) throws -> String {
        var left = predicate.leftExpression
        var right = predicate.rightExpression
        var op = predicate.predicateOperatorType
        // Two constants (`true == true`, as Xcode writes a predicate that matches everything):
        // the answer doesn't depend on the row.
        if Self.isConstant(left), Self.isConstant(right) { return predicate.evaluate(with: nil) ? "1" : "0" }
        // Put the key path on the left.
        if Self.isConstant(left), !Self.isConstant(right) {
            if op == .in, case .keyPath = right.node, predicate.comparisonPredicateModifier == .direct {
                // `value IN toMany` means ANY toMany == value.
                let rewritten = NSComparisonPredicate(leftExpression: right, rightExpression: left, modifier: .any, type: .equalTo, options: predicate.options)
                return try compileComparison(rewritten, alias: alias, entity: entity)
            }
            guard let flipped = Self.flipped(op) else { throw unsupported("a constant on the left of \(op)", predicate) }
            swap(&left, &right)
            op = flipped
        }
        // Arithmetic, SUBQUERY(...).@count and variables: compare scalar SQL expressions.
        if Self.needsScalarForm(left) || Self.needsScalarForm(right) {
            let lhs = try scalarSQL(left, alias: alias, entity: entity, predicate: predicate)
            let rhs = try scalarSQL(right, alias: alias, entity: entity, predicate: predicate)
            let operators: [NSComparisonPredicate.Operator: String] = [.equalTo: "=", .notEqualTo: "<>", .lessThan: "<", .lessThanOrEqualTo: "<=", .greaterThan: ">", .greaterThanOrEqualTo: ">="]
            guard let sqlOperator = operators[op], predicate.options.isEmpty else {
                throw unsupported("the operator \(op) between computed values", predicate)
            }
            // Equality treats NULL as a value, as in memory (nil == nil, nil != 5): SQL's IS / IS NOT.
            if op == .equalTo { return "(\(lhs) IS \(rhs))" }
            if op == .notEqualTo { return "(\(lhs) IS NOT \(rhs))" }
            return "(\(lhs) \(sqlOperator) \(rhs))"
        }
        var alias = alias
        var entity = entity
        if case .keyPath(let operand?, let path, _) = left.node, case .variable(let name) = operand.node, let bound = variables[name] {
            // `$x.key` inside a SUBQUERY: a key path from the element row.
            alias = bound.alias
            entity = bound.entity
            left = NSExpression(forKeyPath: path)
        }
        guard case .keyPath(let operand, let path, let components) = left.node else {
            if case .evaluatedObject = left.node {
                return try compileColumnComparison(column: "\(alias).Z_PK", property: nil, op: op, right: right, predicate: predicate, alias: alias, entity: entity)
            }
            if case .variable(let name) = left.node, let bound = variables[name] {
                return try compileColumnComparison(column: "\(bound.alias).Z_PK", property: nil, op: op, right: right, predicate: predicate, alias: bound.alias, entity: bound.entity)
            }
            throw unsupported("a \(left.expressionType) expression on the left", predicate)
        }
        if let operand, operand.expressionType != .evaluatedObject {
            throw unsupported("a key path starting from \(operand)", predicate)
        }
        // Split at the first to-many relationship.
        var currentEntity = entity
        var prefix: [String] = []
        for (index, component) in components.enumerated() {
            guard case .key(let key) = component else {
                throw unsupported("the collection operator in \(path)", predicate)
            }
            if key == "self" || key == "SELF" { continue }
            if index == components.count - 1, currentEntity.namesEntityDescription(key) {
                // `boss.entity`: the entity of the row at the end of the to-one relationships, joined.
                let rowAlias = prefix.isEmpty ? alias : try builder.keyPathReference((prefix + ["self"]).joined(separator: "."), from: alias, entity: entity).alias
                return try compileEntityComparison(op: op, right: right, predicate: predicate, alias: rowAlias, entity: currentEntity)
            }
            guard let property = currentEntity.frozenPropertiesByName[key] else {
                throw SQLFetchBuilder.unknownKey(key, entity: currentEntity, keyPath: path)
            }
            if let relationship = property as? NSRelationshipDescription, relationship.isToMany {
                let rest = Array(components[(index + 1)...])
                let ownerKey = prefix.isEmpty ? "\(alias).Z_PK" : try builder.columnReference(forKeyPath: prefix.joined(separator: "."), from: alias, entity: entity).0
                return try compileToMany(relationship, ownerKey: ownerKey, ownerMayBeNil: !prefix.isEmpty, alias: alias, entity: entity, rest: rest, path: path, op: op, right: right, predicate: predicate)
            }
            prefix.append(key)
            if let relationship = property as? NSRelationshipDescription { currentEntity = relationship.destinationEntity! }
        }
        if predicate.comparisonPredicateModifier != .direct {
            throw CoreDataError.make(.unsupportedRequest, "\(predicate.comparisonPredicateModifier == .all ? "ALL" : "ANY/NONE") needs a to-many key path; \(path) has none (predicate: \(predicate)).", userInfo: ["predicate": predicate])
        }
        let (column, property) = try builder.columnReference(forKeyPath: prefix.isEmpty ? "self" : prefix.joined(separator: "."), from: alias, entity: entity)
        return try compileColumnComparison(column: column, property: property, op: op, right: right, predicate: predicate, alias: alias, entity: entity)
    }

    /// `ANY/ALL/NONE toMany.rest op value`, `toMany.@count op value`, `toMany.@sum.key op value`.
    private mutating func compileToMany(_ relationship: NSRelationshipDescription, ownerKey: String, ownerMayBeNil: Bool, alias: String, entity: NSEntityDescription, rest: [KeyPathComponent], path: String,
                                        op: NSComparisonPredicate.Operator, right: NSExpression, predicate: NSComparisonPredicate) throws -> String {
        guard let destination = relationship.destinationEntity, let destinationMapping = builder.schema.mapping(for: destination) else {
            throw unsupported("the relationship \(relationship.name)", predicate)
        }
        let sub = builder.nextSubqueryAlias()
        let correlation = try correlatedRows(of: relationship, in: destinationMapping, alias: sub, ownerKey: ownerKey)
        // Aggregates: toMany.@count, toMany.@sum.key …
        if case .collectionOperator(let aggregate)? = rest.first {
            let function: String
            switch aggregate {
            case .count: function = "COUNT(*)"
            case .sum, .avg, .min, .max:
                guard rest.count == 2, case .key(let key) = rest[1], let attribute = destination.frozenPropertiesByName[key] as? NSAttributeDescription,
                      let column = destinationMapping.columnsBySlot[attribute.slot] else {
                    throw unsupported("the aggregate in \(path)", predicate)
                }
                let name = ["@sum": "TOTAL", "@avg": "AVG", "@min": "MIN", "@max": "MAX"][aggregate.rawValue]!
                function = "\(name)(\(sub).\(column))"
            default:
                throw unsupported("the collection operator \(aggregate.rawValue)", predicate)
            }
            // Through a nil to-one relationship (`group.items.@count` of an item with no group) the
            // collection is nil, not empty, as in memory: so is its aggregate.
            let aggregateSQL = "(SELECT \(function) \(correlation))"
            let valueSQL = !ownerMayBeNil ? aggregateSQL : "(CASE WHEN \(ownerKey) IS NULL THEN NULL ELSE \(aggregateSQL) END)"
            return try compileColumnComparison(column: valueSQL, property: nil, op: op, right: right, predicate: predicate, alias: alias, entity: entity)
        }
        guard predicate.comparisonPredicateModifier != .direct || op == .contains || op == .in else {
            throw CoreDataError.make(.unsupportedRequest, "to-many key not allowed here: \(path) needs ANY, ALL, NONE or an aggregate such as @count (predicate: \(predicate)).", userInfo: ["predicate": predicate])
        }
        // `toMany CONTAINS object` without modifier: membership.
        let direct = predicate.comparisonPredicateModifier == .direct
        let (inner, elementJoins) = try compileElementComparison(rest: rest, sub: sub, destination: destination, op: direct ? .equalTo : op, right: right, predicate: predicate,
                                                                 alias: alias, entity: entity)
        let rows = Self.joining(elementJoins, into: correlation)
        switch predicate.comparisonPredicateModifier {
        case .any, .direct: return "EXISTS (SELECT 1 \(rows) AND \(inner))"
        case .all: return "NOT EXISTS (SELECT 1 \(rows) AND NOT IFNULL(\(inner), 0))"
        @unknown default: throw unsupported("the modifier", predicate)
        }
    }

    /// An element's side of `ANY toMany.rest op right`, with the joins it needs inside the subquery:
    /// `rest` from the element's row `sub`; a key path on the right (`ANY tags.label == name`)
    /// from the evaluated object's row `alias`.
    private mutating func compileElementComparison(rest: [KeyPathComponent], sub: String, destination: NSEntityDescription, op: NSComparisonPredicate.Operator,
                                                   right: NSExpression, predicate: NSComparisonPredicate, alias: String,
                                                   entity: NSEntityDescription) throws -> (condition: String, joins: [String]) {
        let keys = try rest.map { component -> String in
            guard case .key(let key) = component else { throw unsupported("a collection operator after a to-many key", predicate) }
            return key
        }
        if keys.contains(where: { key in (destination.frozenPropertiesByName[key] as? NSRelationshipDescription)?.isToMany == true }) {
            throw unsupported("a key path through two to-many relationships", predicate)
        }
        let joinsBefore = builder.joinCount
        let (column, property) = try builder.columnReference(forKeyPath: keys.isEmpty ? "self" : keys.joined(separator: "."), from: sub, entity: destination)
        let direct = NSComparisonPredicate(leftExpression: predicate.leftExpression, rightExpression: right, modifier: .direct, type: op, options: predicate.options)
        // The element's own to-one hops (`ANY tags.item.group == %@`) join inside the subquery.
        let elementJoins = builder.takeJoins(from: joinsBefore)
        let condition = try compileColumnComparison(column: column, property: property, op: op, right: right, predicate: direct, alias: sub, entity: destination,
                                                    keyPathsFrom: (alias, entity))
        return (condition, elementJoins)
    }

    /// `rows` (a `FROM … WHERE …` clause) with `joins` added before its `WHERE`.
    private static func joining(_ joins: [String], into rows: String) -> String {
        guard !joins.isEmpty, let whereClause = rows.range(of: " WHERE ") else { return rows }
        return rows.replacingCharacters(in: whereClause, with: " \(joins.joined(separator: " ")) WHERE ")
    }

    // MARK: Column against a value

    /// `entity == %@`, `entity != %@` or `entity IN %@` with entity descriptions: Core Data's way
    /// to pick the objects of exactly one entity of a hierarchy, as the row's entity number
    /// (`Z_ENT`) of the row at `alias`: the fetched row, the row a to-one key path reaches
    /// (`boss.entity`, joined; none when the relationship is nil) or a SUBQUERY's element. An entity
    /// description of another model equal to one of the store's (`isEqual(_:)`, as the in-memory
    /// evaluator compares them) stands for it; an entity this store doesn't hold matches no row.
    private mutating func compileEntityComparison(op: NSComparisonPredicate.Operator, right: NSExpression,
                                                  predicate: NSComparisonPredicate, alias: String, entity: NSEntityDescription) throws -> String {
        guard predicate.comparisonPredicateModifier == .direct, predicate.options.isEmpty, Self.isConstant(right) else {
            throw unsupported("the entity key compared to anything but entity descriptions with ==, != or IN", predicate)
        }
        let value = right.expressionValue(with: nil)
        let entities = op == .in ? ((value.flatMap(KeyPathWalker.elements(of:))) ?? []) : [value as Any]
        let numbers = try entities.map { item -> Int in
            guard let described = item as? NSEntityDescription else {
                throw unsupported("the entity key compared to something that isn't an entity description", predicate)
            }
            if let own = builder.schema.mapping(for: described) { return own.number }
            // As in memory, where entity descriptions compare with `isEqual(_:)`.
            guard let name = described.name, let same = entity.managedObjectModel.entitiesByName[name], same.isEqual(described) else { return -1 }
            return builder.schema.mapping(for: same)?.number ?? -1
        }
        let list = numbers.map(String.init).joined(separator: ", ")
        switch op {
        case .equalTo where numbers.count == 1: return "(\(alias).Z_ENT = \(list))"
        // A row reached through a nil to-one relationship has no entity (NULL), which isn't that entity.
        case .notEqualTo where numbers.count == 1: return "(\(alias).Z_ENT <> \(list) OR \(alias).Z_ENT IS NULL)"
        case .in: return numbers.isEmpty ? "0" : "(\(alias).Z_ENT IN (\(list)))"
        default: throw unsupported("the entity key with \(op)", predicate)
        }
    }

    /// `column op right`; a key path on the right is read from `keyPathsFrom` (the evaluated
    /// object's row when `column` is an element's), else from `alias`.
    private mutating func compileColumnComparison(column: String, property: NSPropertyDescription?, op: NSComparisonPredicate.Operator, right: NSExpression,
                                                  predicate: NSComparisonPredicate, alias: String, entity: NSEntityDescription,
                                                  keyPathsFrom: (alias: String, entity: NSEntityDescription)? = nil) throws -> String {
        // Column against another key path.
        if case .keyPath(let operand, let path, _) = right.node, operand == nil || operand?.expressionType == .evaluatedObject {
            let (other, _) = try builder.columnReference(forKeyPath: path, from: keyPathsFrom?.alias ?? alias, entity: keyPathsFrom?.entity ?? entity)
            let needsMatch = !predicate.options.isEmpty || ![.equalTo, .notEqualTo, .lessThan, .lessThanOrEqualTo, .greaterThan, .greaterThanOrEqualTo].contains(op)
            if needsMatch {
                let token = builder.registerMatch(predicate)
                return "OCD_MATCH(\(token), \(column), \(other))"
            }
            // Equality treats NULL as a value, as in memory (nil == nil, nil != 5): SQL's IS / IS NOT.
            switch op {
            case .equalTo: return "(\(column) IS \(other))"
            case .notEqualTo: return "(\(column) IS NOT \(other))"
            default: return "(\(column) \(Self.sqlOperator(op)) \(other))"
            }
        }
        guard Self.isConstant(right) else {
            if case .variable(let name) = right.node {
                throw CoreDataError.make(.coreData, "The predicate uses the variable $\(name) with no value: substitute it with withSubstitutionVariables(_:) or fetchRequestFromTemplate(withName:substitutionVariables:).", userInfo: ["variable": name])
            }
            throw unsupported("a \(right.expressionType) expression on the right", predicate)
        }
        let value = Self.constant(right)
        let attribute = property as? NSAttributeDescription
        try checkType(value, attribute: attribute, predicate: predicate, op: op)

        let stringOperator: Set<NSComparisonPredicate.Operator> = [.beginsWith, .endsWith, .contains, .like, .matches]
        if stringOperator.contains(op) || (!predicate.options.isEmpty && attribute?.attributeType == .stringAttributeType) {
            if value == nil { return "0" }
            if op == .matches, let pattern = value as? String, RegexMatcher(pattern: pattern, caseInsensitive: false).regex == nil {
                // Core Data refuses the pattern too (with an exception); a fetch must not quietly match nothing.
                throw CoreDataError.make(.coreData, "The MATCHES pattern \(PredicateFormatError.excerpt(of: pattern, around: 0)) is not a valid regular expression (predicate: \(PredicateFormatError.excerpt(of: predicate.predicateFormat, around: 0))).",
                                         userInfo: ["predicate": predicate])
            }
            let token = builder.registerMatch(NSComparisonPredicate(leftExpression: .expressionForEvaluatedObject(), rightExpression: right, modifier: .direct, type: op, options: predicate.options))
            return "OCD_MATCH(\(token), \(column))"
        }
        switch op {
        case .equalTo:
            guard let value else { return "(\(column) IS NULL)" }
            return "(\(column) = \(bind(value, property)))"
        case .notEqualTo:
            guard let value else { return "(\(column) IS NOT NULL)" }
            return "(\(column) <> \(bind(value, property)) OR \(column) IS NULL)"
        case .lessThan, .lessThanOrEqualTo, .greaterThan, .greaterThanOrEqualTo:
            guard let value else { return "0" }
            return "(\(column) \(Self.sqlOperator(op)) \(bind(value, property)))"
        case .between:
            guard let bounds = value.flatMap(Self.elements), bounds.count == 2 else {
                throw CoreDataError.make(.coreData, "BETWEEN needs a collection of exactly two values (predicate: \(predicate)).", userInfo: ["predicate": predicate])
            }
            return "(\(column) BETWEEN \(bind(bounds[0], property)) AND \(bind(bounds[1], property)))"
        case .in:
            guard let value else { return "0" }
            guard let elements = Self.elements(value) else {
                let token = builder.registerMatch(NSComparisonPredicate(leftExpression: .expressionForEvaluatedObject(), rightExpression: right, modifier: .direct, type: op, options: predicate.options))
                return "OCD_MATCH(\(token), \(column))"
            }
            let present = elements.filter { !($0 is NSNull) }
            var parts: [String] = []
            if !present.isEmpty { parts.append("\(column) IN (\(present.map { bind($0, property) }.joined(separator: ", ")))") }
            if present.count != elements.count { parts.append("\(column) IS NULL") }
            return parts.isEmpty ? "0" : "(" + parts.joined(separator: " OR ") + ")"
        default:
            throw unsupported("the operator \(op)", predicate)
        }
    }

    private mutating func bind(_ value: Any, _ property: NSPropertyDescription?) -> String {
        builder.bind(Self.databaseValue(value, property))
    }

    /// Whether converting a number for an integer or Boolean attribute kept its value: a save
    /// stores -0.75 in an integer attribute as 0 and 2 in a Boolean as YES, but a predicate
    /// compares the number itself (`count == -0.75` matches no integer, as in memory).
    private static func keepsTheNumber(_ value: Any, _ normalized: Any, _ type: NSAttributeType) -> Bool {
        guard [.integer16AttributeType, .integer32AttributeType, .integer64AttributeType, .booleanAttributeType].contains(type),
              let before = AttributeValueCoding.bridgedNumber(value)?.doubleValue ?? AttributeValueCoding.numericValue(value) else { return true }
        let after = (normalized as? Bool).map { $0 ? 1.0 : 0.0 } ?? AttributeValueCoding.numericValue(normalized)
        return after == before
    }

    static func databaseValue(_ value: Any, _ property: NSPropertyDescription?) -> DatabaseValue {
        switch value {
        case let object as NSManagedObject: return object.objectID.primaryKey.databaseValue
        case let id as NSManagedObjectID: return id.primaryKey.databaseValue
        case is NSNull: return .null
        default: break
        }
        if let attribute = property as? NSAttributeDescription {
            let normalized = AttributeValueCoding.normalize(value, for: attribute.attributeType)
            if AttributeValueCoding.hasCanonicalType(normalized, for: attribute.attributeType), keepsTheNumber(value, normalized, attribute.attributeType) {
                return SQLiteValueCoding.databaseValue(normalized, for: attribute, primaryKeyOf: { $0.primaryKey })
            }
        }
        switch value {
        case let string as String: return string.databaseValue
        case let bool as Bool: return bool.databaseValue
        case let date as Date: return date.timeIntervalSinceReferenceDate.databaseValue
        case let uuid as UUID: return withUnsafeBytes(of: uuid.uuid) { Data($0) }.databaseValue
        case let url as URL: return url.absoluteString.databaseValue
        case let data as Data: return data.databaseValue
        case let decimal as Decimal: return NSDecimalNumber(decimal: decimal).doubleValue.databaseValue
        default:
            if let integer = AttributeValueCoding.exactInteger(value) { return integer.databaseValue }
            if let number = AttributeValueCoding.numericValue(value) { return number.databaseValue }
            return "\(value)".databaseValue
        }
    }

    /// Rejects a constant whose type can't be compared with the attribute, as in-memory evaluation would never match it.
    private func checkType(_ value: Any?, attribute: NSAttributeDescription?, predicate: NSComparisonPredicate, op: NSComparisonPredicate.Operator) throws {
        guard let attribute, let value else { return }
        let values = (op == .in || op == .between) ? (Self.elements(value) ?? [value]) : [value]
        for element in values where !(element is NSNull) {
            let isString = element is String
            let isNumber = AttributeValueCoding.exactInteger(element) != nil || element is Double || element is Float || element is Decimal || element is Bool
            let mismatch: Bool
            switch attribute.attributeType {
            case .stringAttributeType, .URIAttributeType: mismatch = isNumber && !(op == .in)
            case .integer16AttributeType, .integer32AttributeType, .integer64AttributeType, .doubleAttributeType, .floatAttributeType, .decimalAttributeType, .booleanAttributeType:
                mismatch = isString
            case .dateAttributeType: mismatch = isString || (isNumber && !(element is Date))
            default: mismatch = false
            }
            if mismatch {
                throw CoreDataError.make(.coreData, "Type mismatch in predicate \(predicate): \(attribute.name) is a \(attribute.attributeType.xcodeName) attribute but is compared with \(type(of: element)) value \(element).",
                                         userInfo: ["predicate": predicate, "key": attribute.name])
            }
        }
    }

    /// `FROM <destination> <alias> … WHERE <alias's row belongs to ownerKey's relationship>`, through
    /// the join table of a many-to-many relationship or the inverse's foreign key.
    private func correlatedRows(of relationship: NSRelationshipDescription, in destination: SQLiteSchema.EntityMapping, alias: String, ownerKey: String) throws -> String {
        if let join = builder.schema.joinTable(for: relationship) {
            let (mine, theirs) = join.columns(from: relationship)
            return "FROM \(destination.tableName) \(alias) JOIN \(join.name) \(alias)x ON \(alias)x.\(theirs) = \(alias).Z_PK WHERE \(alias)x.\(mine) = \(ownerKey)"
        }
        if let inverse = relationship.inverseRelationship, let column = destination.columnsBySlot[inverse.slot] {
            return "FROM \(destination.tableName) \(alias) WHERE \(alias).\(column) = \(ownerKey)"
        }
        throw CoreDataError.make(.unsupportedRequest, "The SQLite store can't query the to-many relationship \(relationship.name) because it has no inverse.")
    }

    // MARK: Computed values

    /// Whether an expression needs the scalar form: arithmetic, a SUBQUERY count, a bound variable.
    static func needsScalarForm(_ expression: NSExpression) -> Bool {
        switch expression.node {
        case .function: return true
        case .keyPath(let operand?, _, _): return operand.expressionType == .subquery
        case .subquery: return true
        default: return false
        }
    }

    /// SQL for a scalar expression: a to-one key path, a constant, arithmetic, or `SUBQUERY(...).@count`.
    private mutating func scalarSQL(_ expression: NSExpression, alias: String, entity: NSEntityDescription, predicate: NSPredicate) throws -> String {
        switch expression.node {
        case .constant(let value):
            return builder.bind(Self.databaseValue(value ?? NSNull(), nil))
        case .keyPath(let operand?, _, let components) where operand.expressionType == .subquery:
            guard components.count == 1, case .collectionOperator(.count) = components[0] else {
                throw unsupported("SUBQUERY(...) followed by \(expression.keyPath); use .@count", predicate)
            }
            return try subqueryCount(operand, alias: alias, entity: entity, predicate: predicate)
        case .keyPath(let operand, let path, _):
            var from = (alias, entity)
            if let operand, case .variable(let name) = operand.node, let bound = variables[name] { from = (bound.alias, bound.entity) }
            return try builder.columnReference(forKeyPath: path, from: from.0, entity: from.1).0
        case .evaluatedObject:
            return "\(alias).Z_PK"
        case .variable(let name):
            guard let bound = variables[name] else {
                throw CoreDataError.make(.coreData, "The predicate uses the variable $\(name) with no value: substitute it with withSubstitutionVariables(_:).", userInfo: ["variable": name])
            }
            return "\(bound.alias).Z_PK"
        case .function(let name, nil, let arguments):
            let binary = ["add:to:": "+", "from:subtract:": "-", "multiply:by:": "*", "divide:by:": "/", "modulus:by:": "%"]
            if let op = binary[name], arguments.count == 2 {
                let lhs = try scalarSQL(arguments[0], alias: alias, entity: entity, predicate: predicate)
                let rhs = try scalarSQL(arguments[1], alias: alias, entity: entity, predicate: predicate)
                return op == "/" ? "(CAST(\(lhs) AS REAL) / \(rhs))" : "(\(lhs) \(op) \(rhs))"
            }
            let unary = ["abs:": "ABS", "uppercase:": "UPPER", "lowercase:": "LOWER"]
            if let function = unary[name], arguments.count == 1 {
                return "\(function)(\(try scalarSQL(arguments[0], alias: alias, entity: entity, predicate: predicate)))"
            }
            throw unsupported("the function \(name)", predicate)
        case .subquery:
            throw unsupported("a SUBQUERY without .@count", predicate)
        default:
            throw unsupported("a \(expression.expressionType) expression", predicate)
        }
    }

    /// `(SELECT COUNT(*) FROM destination WHERE <correlated> AND <predicate>)` for `SUBQUERY(...).@count`.
    private mutating func subqueryCount(_ subquery: NSExpression, alias: String, entity: NSEntityDescription, predicate: NSPredicate) throws -> String {
        guard case .subquery(let collection, let variable, let inner) = subquery.node,
              case .keyPath(nil, let path, _) = collection.node else {
            throw unsupported("a SUBQUERY whose collection is not a to-many key path", predicate)
        }
        var keys = path.split(separator: ".").map(String.init)
        let last = keys.removeLast()
        var ownerKey = "\(alias).Z_PK"
        var owner = entity
        if !keys.isEmpty {
            let (column, property) = try builder.columnReference(forKeyPath: keys.joined(separator: "."), from: alias, entity: entity)
            guard let relationship = property as? NSRelationshipDescription, let destination = relationship.destinationEntity else {
                throw unsupported("the SUBQUERY collection \(path)", predicate)
            }
            ownerKey = column
            owner = destination
        }
        guard let relationship = owner.frozenRelationshipsByName[last], relationship.isToMany, let destination = relationship.destinationEntity,
              let destinationMapping = builder.schema.mapping(for: destination) else {
            throw unsupported("the SUBQUERY collection \(path), which is not a to-many relationship", predicate)
        }
        let sub = builder.nextSubqueryAlias()
        let correlation = try correlatedRows(of: relationship, in: destinationMapping, alias: sub, ownerKey: ownerKey)
        let previous = variables[variable]
        variables[variable] = (sub, destination)
        defer { variables[variable] = previous }
        let condition = try compile(inner, alias: sub, entity: destination)
        return "(SELECT COUNT(*) \(correlation) AND \(condition))"
    }

    // MARK: Helpers

    static func isConstant(_ expression: NSExpression) -> Bool {
        switch expression.node {
        case .constant: return true
        case .aggregate: return expression.constantElements != nil
        default: return false
        }
    }

    static func constant(_ expression: NSExpression) -> Any? {
        switch expression.node {
        case .constant(let value): return value
        case .aggregate: return expression.constantElements
        default: return nil
        }
    }

    static func elements(_ value: Any) -> [Any]? {
        if value is String || value is Data { return nil }
        if let array = value as? [Any] { return array }
        if let set = value as? Set<AnyHashable> { return set.map(\.base) }
        if let set = value as? NSSet { return set.allObjects }
        if let ordered = value as? NSOrderedSet { return ordered.array }
        if let array = value as? NSArray { return array.map { $0 } }
        return nil
    }

    static func flipped(_ op: NSComparisonPredicate.Operator) -> NSComparisonPredicate.Operator? {
        switch op {
        case .equalTo, .notEqualTo: op
        case .lessThan: .greaterThan
        case .lessThanOrEqualTo: .greaterThanOrEqualTo
        case .greaterThan: .lessThan
        case .greaterThanOrEqualTo: .lessThanOrEqualTo
        default: nil
        }
    }

    static func sqlOperator(_ op: NSComparisonPredicate.Operator) -> String {
        switch op {
        case .lessThan: "<"
        case .lessThanOrEqualTo: "<="
        case .greaterThan: ">"
        case .greaterThanOrEqualTo: ">="
        case .notEqualTo: "<>"
        default: "="
        }
    }

    private func unsupported(_ what: String, _ predicate: NSPredicate) -> NSError {
        CoreDataError.make(.unsupportedRequest, "The SQLite store can't run \(what) (predicate: \(predicate)).", userInfo: ["predicate": predicate])
    }
}
