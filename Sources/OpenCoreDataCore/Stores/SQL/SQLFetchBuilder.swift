import Foundation
import GRDB

/// Turns a fetch request into SQL over Core Data's layout: the entity's table aliased `t0`, a
/// LEFT JOIN per to-one key path step, `EXISTS` subqueries for to-many steps, the predicate, the
/// sort and the limits.
///
/// Predicates that SQL can't express with the in-memory meaning are rejected with a thrown error,
/// never run in memory behind the user's back.
struct SQLFetchBuilder {
    private(set) var schema: SQLiteSchema
    private(set) var entity: NSEntityDescription
    private(set) var request: NSFetchRequest<NSFetchRequestResult>
    private(set) var arguments: [DatabaseValue] = []
    private var joins: [String] = []
    private var joinAliases: [String: String] = [:]
    private var whereClause: String = ""
    private var orderClause: String = ""
    private var subqueryCounter = 0
    /// Tokens of predicates registered for `OCD_MATCH` during this query.
    private(set) var matchTokens: [Int64] = []

    init(schema: SQLiteSchema, entity: NSEntityDescription, request: NSFetchRequest<NSFetchRequestResult>) throws {
        self.schema = schema
        self.entity = entity
        self.request = request
        let mapping = schema.mapping(for: entity)!
        var conditions: [String] = []
        let numbers = request.includesSubentities ? mapping.numbersWithSubentities : [mapping.number]
        let allInTable = Set(schema.entities.filter { schema.mapping(for: $0)?.tableName == mapping.tableName }.compactMap { schema.mapping(for: $0)?.number })
        if Set(numbers) != allInTable {
            conditions.append(numbers.count == 1 ? "t0.Z_ENT = \(numbers[0])" : "t0.Z_ENT IN (\(numbers.map(String.init).joined(separator: ", ")))")
        }
        if let predicate = request.predicate {
            var compiler = SQLPredicateCompiler(builder: self, rootAlias: "t0", rootEntity: entity)
            let condition: String
            do {
                condition = try compiler.compile(predicate)
            } catch {
                compiler.builder.releaseTokens()
                throw error
            }
            self = compiler.builder
            if condition != "1" { conditions.append(condition) }
        }
        whereClause = conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")
        var orderings: [String] = []
        for descriptor in request.sortDescriptors ?? [] {
            guard let key = descriptor.key else {
                throw CoreDataError.make(.unsupportedRequest, "The SQLite store can't sort with a comparator block; use a key and a selector.")
            }
            let (column, property) = try columnReference(forKeyPath: key, from: "t0", entity: entity)
            var collation = ""
            if let attribute = property as? NSAttributeDescription, attribute.attributeType == .stringAttributeType,
               let selector = descriptor.selector?.description, selector != "compare:" {
                guard let name = SQLiteCollations.collationName(forSelector: selector) else {
                    throw CoreDataError.make(.unsupportedRequest, "The SQLite store can't sort by \(key) with the selector \(selector).")
                }
                collation = " COLLATE \(name)"
            }
            orderings.append("\(column)\(collation) \(descriptor.ascending ? "ASC" : "DESC")")
        }
        orderClause = orderings.isEmpty ? "" : " ORDER BY " + orderings.joined(separator: ", ")
    }

    private var fromClause: String {
        let mapping = schema.mapping(for: entity)!
        return " FROM \(mapping.tableName) t0" + joins.map { " " + $0 }.joined()
    }

    func selectSQL(columns: [String]) -> String {
        var sql = "SELECT \(request.returnsDistinctResults && request.resultType == .dictionaryResultType ? "DISTINCT " : "")\(columns.joined(separator: ", "))\(fromClause)\(whereClause)\(orderClause)"
        if request.fetchLimit > 0 { sql += " LIMIT \(request.fetchLimit)" }
        if request.fetchOffset > 0 { sql += (request.fetchLimit > 0 ? "" : " LIMIT -1") + " OFFSET \(request.fetchOffset)" }
        return sql
    }

    func countSQL() -> String {
        if request.fetchLimit > 0 || request.fetchOffset > 0 {
            return "SELECT COUNT(*) FROM (\(selectSQL(columns: ["t0.Z_PK"])))"
        }
        return "SELECT COUNT(*)\(fromClause)\(whereClause)"
    }

    /// Logs the statement when SQL debugging is on.
    func log(sql: String, rows: Int, start: UInt64) {
        SQLDebugLog.statement(sql, rows: rows, start: start, isFetch: true)
    }

    /// Releases the predicates registered for `OCD_MATCH` by this query.
    mutating func releaseTokens() {
        for token in matchTokens { SQLPredicateFunctions.unregister(token) }
        matchTokens = []
    }

    // MARK: Pieces used by the predicate compiler

    mutating func bind(_ value: DatabaseValue) -> String {
        arguments.append(value)
        return "?"
    }

    mutating func registerMatch(_ predicate: NSComparisonPredicate) -> Int64 {
        let token = SQLPredicateFunctions.register(predicate)
        matchTokens.append(token)
        return token
    }

    mutating func nextSubqueryAlias() -> String {
        subqueryCounter += 1
        return "s\(subqueryCounter)"
    }

    /// The column for a dotted key path of attributes and to-one relationships, adding joins.
    mutating func columnReference(forKeyPath keyPath: String, from alias: String, entity start: NSEntityDescription) throws -> (String, NSPropertyDescription?) {
        let components = keyPath.split(separator: ".").map(String.init)
        var alias = alias
        var entity = start
        var pathSoFar = alias
        for (index, component) in components.enumerated() {
            if component == "self" || component == "SELF" { if index == components.count - 1 { return ("\(alias).Z_PK", nil) }; continue }
            guard let property = entity.frozenPropertiesByName[component] else {
                throw SQLFetchBuilder.unknownKey(component, entity: entity, keyPath: keyPath)
            }
            guard !property.isTransient else {
                throw CoreDataError.make(.unsupportedRequest, "The SQLite store can't fetch by the transient property \(component) (key path \(keyPath)).", userInfo: ["keyPath": keyPath])
            }
            let mapping = schema.mapping(for: entity)!
            let isLast = index == components.count - 1
            if let relationship = property as? NSRelationshipDescription {
                guard !relationship.isToMany else {
                    throw CoreDataError.make(.unsupportedRequest, "To-many key \(component) not allowed here: use ANY, ALL, NONE, @count or a SUBQUERY (key path \(keyPath)).", userInfo: ["keyPath": keyPath])
                }
                let column = "\(alias).\(mapping.columnsBySlot[relationship.slot]!)"
                if isLast { return (column, relationship) }
                guard let destination = relationship.destinationEntity, let destinationMapping = schema.mapping(for: destination) else {
                    throw SQLFetchBuilder.unknownKey(component, entity: entity, keyPath: keyPath)
                }
                pathSoFar += "." + component
                if let existing = joinAliases[pathSoFar] {
                    alias = existing
                } else {
                    let newAlias = "j\(joinAliases.count + 1)"
                    joins.append("LEFT OUTER JOIN \(destinationMapping.tableName) \(newAlias) ON \(newAlias).Z_PK = \(column)")
                    joinAliases[pathSoFar] = newAlias
                    alias = newAlias
                }
                entity = destination
            } else {
                guard isLast, let column = mapping.columnsBySlot[property.slot] else {
                    throw CoreDataError.make(.unsupportedRequest, "\(component) is an attribute, so the key path \(keyPath) can't continue past it.", userInfo: ["keyPath": keyPath])
                }
                return ("\(alias).\(column)", property)
            }
        }
        return ("\(alias).Z_PK", nil)
    }

    static func unknownKey(_ key: String, entity: NSEntityDescription, keyPath: String) -> NSError {
        CoreDataError.make(.coreData, "keypath \(keyPath) not found in entity \(entity.name ?? "?"): it has no property named '\(key)'.", userInfo: ["keyPath": keyPath, "key": key])
    }
}
