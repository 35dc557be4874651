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
    /// The store's comparisons for `OCD_MATCH`, where this query registers its own.
    private(set) var predicates: SQLPredicateRegistry
    private(set) var entity: NSEntityDescription
    private(set) var request: NSFetchRequest<NSFetchRequestResult>
    private(set) var arguments: [DatabaseValue] = []
    private var joins: [String] = []
    private var joinAliases: [String: String] = [:]
    private(set) var whereClause: String = ""
    private var orderClause: String = ""
    private var subqueryCounter = 0
    /// Tokens of predicates registered for `OCD_MATCH` during this query.
    private(set) var matchTokens: [Int64] = []

    /// `tieBreakByPrimaryKey`: rows with equal sort values come in primary key order (off only for
    /// a reader that orders ties itself).
    init(schema: SQLiteSchema, predicates: SQLPredicateRegistry, entity: NSEntityDescription, request: NSFetchRequest<NSFetchRequestResult>,
         tieBreakByPrimaryKey: Bool = true) throws {
        self.schema = schema
        self.predicates = predicates
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
        // Rows whose sort values are equal come in primary key order, so that results (and a
        // fetched results controller's incremental updates) are deterministic.
        // (Dictionary results, which may be grouped or distinct, keep the order SQLite gives.)
        // The unary plus keeps the order but hides the key from the planner: an ORDER BY ending
        // in the rowid lets SQLite think an index on a to-one's column (`ZDEPARTMENT`) gives part
        // of the order, and it then reads the table through that index, one random page read a
        // row (a million `pread`s over a million rows sorted by `department.name`, 2× slower).
        if tieBreakByPrimaryKey && !orderings.isEmpty && request.resultType != .dictionaryResultType { orderings.append("+t0.Z_PK") }
        orderClause = orderings.isEmpty ? "" : " ORDER BY " + orderings.joined(separator: ", ")
    }

    /// Whether key paths added joins (batch updates can't use them in SET clauses).
    var hasJoins: Bool { !joins.isEmpty }

    var fromClause: String {
        let mapping = schema.mapping(for: entity)!
        return " FROM \(mapping.tableName) t0" + joins.map { " " + $0 }.joined()
    }

    func selectSQL(columns: [String]) -> String {
        var sql = "SELECT \(request.returnsDistinctResults && request.resultType == .dictionaryResultType ? "DISTINCT " : "")\(columns.joined(separator: ", "))\(fromClause)\(whereClause)\(orderClause)"
        if request.fetchLimit > 0 { sql += " LIMIT \(request.fetchLimit)" }
        if request.fetchOffset > 0 { sql += (request.fetchLimit > 0 ? "" : " LIMIT -1") + " OFFSET \(request.fetchOffset)" }
        return sql
    }

    /// The SQL of a dictionary fetch and how to read each of its columns.
    mutating func dictionarySelect() throws -> (sql: String, columns: [DictionaryColumn]) {
        var columns: [DictionaryColumn] = []
        var expressionsByName: [String: String] = [:]
        let requested: [Any] = request.propertiesToFetch ?? entity.frozenAttributes.filter { !$0.isTransient }.map(\.name)
        for item in requested {
            let column = try dictionaryColumn(for: item)
            expressionsByName[column.name] = column.sql
            columns.append(column)
        }
        var groupBy: [String] = []
        for item in request.propertiesToGroupBy ?? [] {
            if let name = (item as? String) ?? (item as? NSPropertyDescription)?.name, let known = expressionsByName[name] {
                groupBy.append(known)
            } else {
                groupBy.append(try dictionaryColumn(for: item).sql)
            }
        }
        var selectList = columns.map(\.sql)
        for index in columns.indices {
            guard let entitySQL = columns[index].entitySQL else { continue }
            columns[index].entityColumnIndex = Int32(selectList.count)
            selectList.append(entitySQL)
        }
        var sql = "SELECT \(request.returnsDistinctResults ? "DISTINCT " : "")\(selectList.joined(separator: ", "))\(fromClause)\(whereClause)"
        if !groupBy.isEmpty { sql += " GROUP BY " + groupBy.joined(separator: ", ") }
        if let having = request.havingPredicate {
            var compiler = SQLHavingCompiler(names: expressionsByName, builder: self)
            let condition = try compiler.compile(having)
            self = compiler.builder
            sql += " HAVING " + condition
        }
        sql += orderClause
        if request.fetchLimit > 0 { sql += " LIMIT \(request.fetchLimit)" }
        if request.fetchOffset > 0 { sql += (request.fetchLimit > 0 ? "" : " LIMIT -1") + " OFFSET \(request.fetchOffset)" }
        return (sql, columns)
    }

    /// One column of a dictionary result: its name, SQL and how to decode it.
    struct DictionaryColumn {
        let name: String
        let sql: String
        let kind: SQLiteValueCoding.ColumnKind
        /// For a to-one relationship column: the destination, to make object IDs.
        let destination: NSEntityDescription?
        /// For a computed column: the declared result type (decoding follows it).
        let resultType: NSAttributeType?
        /// For an object column whose entity has subentities: the SQL of the entity number of
        /// the object, selected after the requested columns.
        var entitySQL: String? = nil
        /// Where `entitySQL` is in the select list.
        var entityColumnIndex: Int32? = nil
    }

    private mutating func dictionaryColumn(for item: Any) throws -> DictionaryColumn {
        if let description = item as? NSExpressionDescription {
            guard let expression = description.expression else {
                throw CoreDataError.make(.coreData, "The expression description \(description.name) has no expression.")
            }
            let sql: String
            switch expression.expressionType {
            case .evaluatedObject:
                // The evaluated object reads as its object ID.
                return objectColumn(named: description.name, try keyPathReference("self", from: "t0", entity: entity))
            case .keyPath:
                let reference = try keyPathReference(expression.keyPath, from: "t0", entity: entity)
                // A key path to an object reads as its object ID; one to an attribute as its value.
                if reference.property == nil || reference.property is NSRelationshipDescription {
                    return objectColumn(named: description.name, reference)
                }
                sql = reference.column
            default:
                sql = try aggregateSQL(expression)
            }
            return DictionaryColumn(name: description.name, sql: sql, kind: .undefined, destination: nil, resultType: description.expressionResultType)
        }
        let keyPath: String
        if let name = item as? String {
            keyPath = name
        } else if let property = item as? NSPropertyDescription {
            keyPath = property.name
        } else {
            throw CoreDataError.make(.coreData, "propertiesToFetch holds a \(type(of: item)); use property names, property descriptions or NSExpressionDescription.")
        }
        let reference = try keyPathReference(keyPath, from: "t0", entity: entity)
        if let property = reference.property, !(property is NSRelationshipDescription) {
            return DictionaryColumn(name: keyPath, sql: reference.column, kind: SQLiteValueCoding.ColumnKind(property), destination: nil, resultType: nil)
        }
        return objectColumn(named: keyPath, reference)
    }

    /// A dictionary column holding an object ID: a to-one key, or `self` (a path ending at an
    /// object, whose own row's `Z_ENT` says which entity it is).
    private func objectColumn(named name: String, _ reference: KeyPathReference) -> DictionaryColumn {
        if let relationship = reference.property as? NSRelationshipDescription {
            return DictionaryColumn(name: name, sql: reference.column, kind: .toOne, destination: relationship.destinationEntity, resultType: nil,
                                    entitySQL: destinationEntitySQL(of: relationship, keyColumn: reference.column, in: reference))
        }
        let entitySQL = reference.entity.subentities.isEmpty ? nil : "\(reference.alias).Z_ENT"
        return DictionaryColumn(name: name, sql: reference.column, kind: .toOne, destination: reference.entity, resultType: nil, entitySQL: entitySQL)
    }

    /// SQL for the entity number of the object a to-one key points at, when its destination has
    /// subentities: Apple's `Z<n>_<NAME>` column beside the key when the store has it, otherwise
    /// a lookup of the destination row's `Z_ENT` inside the same statement.
    private func destinationEntitySQL(of relationship: NSRelationshipDescription, keyColumn: String, in reference: KeyPathReference) -> String? {
        guard let destination = relationship.destinationEntity, !destination.subentities.isEmpty else { return nil }
        if let entityColumn = schema.mapping(for: reference.entity)?.entityColumnsBySlot[relationship.slot] {
            return "\(reference.alias).\(entityColumn)"
        }
        guard let table = schema.mapping(for: destination)?.tableName else { return nil }
        return "(SELECT d.Z_ENT FROM \(table) d WHERE d.Z_PK = \(keyColumn))"
    }

    /// SQL for an expression of a dictionary fetch: a key path, a constant, or an aggregate function of one.
    mutating func aggregateSQL(_ expression: NSExpression) throws -> String {
        switch expression.expressionType {
        case .keyPath:
            return try columnReference(forKeyPath: expression.keyPath, from: "t0", entity: entity).0
        case .evaluatedObject:
            return "t0.Z_PK"
        case .constantValue:
            return bind(SQLPredicateCompiler.databaseValue(expression.constantValue ?? NSNull(), nil))
        case .function:
            let arguments = expression.arguments ?? []
            let functions = ["sum:": "TOTAL", "count:": "COUNT", "min:": "MIN", "max:": "MAX", "average:": "AVG"]
            if let sqlFunction = functions[expression.function], arguments.count == 1 {
                let argument = try aggregateSQL(arguments[0])
                return "\(sqlFunction)(\(argument))"
            }
            let arithmetic = ["add:to:": "+", "from:subtract:": "-", "multiply:by:": "*", "divide:by:": "/"]
            if let op = arithmetic[expression.function], arguments.count == 2 {
                return "(\(try aggregateSQL(arguments[0])) \(op) \(try aggregateSQL(arguments[1])))"
            }
            if expression.function == "abs:", arguments.count == 1 { return "ABS(\(try aggregateSQL(arguments[0])))" }
            throw CoreDataError.make(.unsupportedRequest, "The SQLite store can't compute the function \(expression.function) in a dictionary fetch.")
        default:
            throw CoreDataError.make(.unsupportedRequest, "The SQLite store can't compute \(expression) in a dictionary fetch.")
        }
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
        for token in matchTokens { predicates.unregister(token) }
        matchTokens = []
    }

    // MARK: Pieces used by the predicate compiler

    mutating func bind(_ value: DatabaseValue) -> String {
        arguments.append(value)
        return "?"
    }

    mutating func registerMatch(_ predicate: NSComparisonPredicate) -> Int64 {
        let token = predicates.register(predicate)
        matchTokens.append(token)
        return token
    }

    mutating func nextSubqueryAlias() -> String {
        subqueryCounter += 1
        return "s\(subqueryCounter)"
    }

    /// The column for a dotted key path of attributes and to-one relationships, adding joins.
    mutating func columnReference(forKeyPath keyPath: String, from alias: String, entity start: NSEntityDescription) throws -> (String, NSPropertyDescription?) {
        let reference = try keyPathReference(keyPath, from: alias, entity: start)
        return (reference.column, reference.property)
    }

    /// Where a key path ends: its column, its last property (nil for `self` or a path ending at
    /// an object), and the alias and entity of the table holding that column.
    struct KeyPathReference {
        let column: String
        let property: NSPropertyDescription?
        let alias: String
        let entity: NSEntityDescription
    }

    /// Resolves a key path to its column, joining the to-one relationships it passes through.
    mutating func keyPathReference(_ keyPath: String, from alias: String, entity start: NSEntityDescription) throws -> KeyPathReference {
        let components = keyPath.split(separator: ".").map(String.init)
        var alias = alias
        var entity = start
        var pathSoFar = alias
        for (index, component) in components.enumerated() {
            if component == "self" || component == "SELF" {
                if index == components.count - 1 { return KeyPathReference(column: "\(alias).Z_PK", property: nil, alias: alias, entity: entity) }
                continue
            }
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
                if isLast { return KeyPathReference(column: column, property: relationship, alias: alias, entity: entity) }
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
                return KeyPathReference(column: "\(alias).\(column)", property: property, alias: alias, entity: entity)
            }
        }
        return KeyPathReference(column: "\(alias).Z_PK", property: nil, alias: alias, entity: entity)
    }

    /// How many joins key paths have added so far (see `takeJoins(from:)`).
    var joinCount: Int { joins.count }

    /// Takes out the joins added since `start`: those of key paths from a subquery's row, which
    /// belong in that subquery's `FROM`, where its alias is known.
    mutating func takeJoins(from start: Int) -> [String] {
        defer { joins.removeSubrange(start...) }
        return Array(joins[start...])
    }

    static func unknownKey(_ key: String, entity: NSEntityDescription, keyPath: String) -> NSError {
        CoreDataError.make(.coreData, "keypath \(keyPath) not found in entity \(entity.name ?? "?"): it has no property named '\(key)'.", userInfo: ["keyPath": keyPath, "key": key])
    }
}
