import Foundation
import GRDB
import GRDBSQLite

extension SQLiteCollations {
    /// Registers every collation on a connection, comparing SQLite's UTF-8 bytes in place
    /// (`StringComparison.compareUTF8`): no `String` is made for a comparison.
    static func register(on db: Database) throws {
        for (name, order) in all {
            // The order travels in the collation's context pointer, as its raw value plus one.
            let context = UnsafeMutableRawPointer(bitPattern: order.rawValue + 1)
            let code = sqlite3_create_collation_v2(db.sqliteConnection, name, SQLITE_UTF8, context, compareCollated, nil)
            guard code == SQLITE_OK else {
                throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)))
            }
        }
    }
}

/// SQLite's collation callback: the order named by the context pointer, on the two texts' bytes.
private func compareCollated(_ context: UnsafeMutableRawPointer?, _ count: Int32, _ bytes: UnsafeRawPointer?, _ otherCount: Int32, _ otherBytes: UnsafeRawPointer?) -> Int32 {
    let order = StringComparison.Order(rawValue: Int(bitPattern: context) - 1) ?? .binary
    let result = StringComparison.compareUTF8(UnsafeRawBufferPointer(start: bytes, count: Int(count)),
                                              UnsafeRawBufferPointer(start: otherBytes, count: Int(otherCount)), by: order)
    return result == .orderedAscending ? -1 : (result == .orderedSame ? 0 : 1)
}
