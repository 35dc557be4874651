import Foundation
import OpenCoreDataCore
import PostgresNIO

/// A PostgreSQL connection as the connection of a server store: values bound as postgres-nio's
/// types, columns read back by their PostgreSQL type.
extension PostgreSQLConnection: SQLServerConnection {
    package var dialect: SQLDialect { .postgreSQL }

    @discardableResult
    package func run(_ sql: String, _ values: [SQLServerValue]) throws -> [[SQLServerValue]] {
        var binds = PostgresBindings(capacity: values.count)
        for value in values {
            switch value {
            case .null: binds.appendNull()
            case .integer(let number): binds.append(number)
            case .real(let number): binds.append(number)
            case .boolean(let bool): binds.append(bool)
            case .decimal(let number): try binds.append(number)
            case .text(let text): binds.append(text)
            case .bytes(let data): try binds.append(data)
            case .uuid(let uuid): binds.append(uuid)
            }
        }
        let rows = try query(sql, binds)
        return try rows.map { row in try row.map { cell in try Self.value(of: cell, sql: sql, location: location) } }
    }

    package func serverCode(of error: any Error) -> String? {
        (error as NSError).userInfo[PostgreSQLErrors.sqlStateKey] as? String
    }

    /// A column's value by its PostgreSQL type; a type no Core Data column has is an error.
    private static func value(of cell: PostgresCell, sql: String, location: PostgreSQLLocation) throws -> SQLServerValue {
        guard cell.bytes != nil else { return .null }
        do {
            switch cell.dataType {
            case .int2, .int4, .int8: return .integer(try cell.decode(Int64.self))
            case .float4, .float8: return .real(try cell.decode(Double.self))
            case .bool: return .boolean(try cell.decode(Bool.self))
            case .numeric: return .decimal(try cell.decode(Decimal.self))
            case .text, .varchar, .name, .bpchar: return .text(try cell.decode(String.self))
            case .bytea: return .bytes(try cell.decode(Data.self))
            case .uuid: return .uuid(try cell.decode(UUID.self))
            default:
                throw NSError(domain: NSCocoaErrorDomain, code: 134060, userInfo: [
                    NSLocalizedDescriptionKey: "The PostgreSQL store \(location.summary) read a column '\(cell.columnName)' of type \(cell.dataType), which no Core Data attribute has.",
                ])
            }
        } catch let error as NSError where error.domain == NSCocoaErrorDomain {
            throw error
        } catch {
            throw PostgreSQLErrors.query(error, sql: sql, location: location)
        }
    }
}
