import Foundation
import GRDB

/// The SQL functions and collations the SQLite store registers so SQL and in-memory evaluation agree.
///
/// `OCD_MATCH(token, value)` evaluates the comparison registered under `token` (its left side is
/// the column's value); `OCD_MATCH(token, left, right)` compares two columns. Tokens live for one
/// query.
enum SQLPredicateFunctions {
    /// A registered comparison, and its two-value form built once for column-to-column comparisons.
    struct Entry {
        let predicate: NSComparisonPredicate
        let pairwise: NSComparisonPredicate
    }

    private static let registry = LockedValue<(next: Int64, predicates: [Int64: Entry])>((1, [:]))

    static func register(_ predicate: NSComparisonPredicate) -> Int64 {
        let pairwise = NSComparisonPredicate(leftExpression: NSExpression(forKeyPath: "l"), rightExpression: NSExpression(forKeyPath: "r"),
                                             modifier: .direct, type: predicate.predicateOperatorType, options: predicate.options)
        return registry.withLock { state in
            let token = state.next
            state.next += 1
            state.predicates[token] = Entry(predicate: predicate, pairwise: pairwise)
            return token
        }
    }

    static func unregister(_ token: Int64) {
        registry.withLock { _ = $0.predicates.removeValue(forKey: token) }
    }

    /// `OCD_MATCH`.
    static let match = DatabaseFunction("OCD_MATCH", argumentCount: nil, pure: true) { values -> DatabaseValueConvertible? in
        guard values.count >= 2, let token = Int64.fromDatabaseValue(values[0]),
              let entry = registry.withLock({ $0.predicates[token] }) else { return false }
        let left = swiftValue(values[1])
        if values.count == 3 {
            var pair: [String: Any] = [:]
            pair["l"] = left
            pair["r"] = swiftValue(values[2])
            return entry.pairwise.evaluate(with: pair)
        }
        return entry.predicate.evaluate(with: left)
    }

    static func swiftValue(_ value: DatabaseValue) -> Any? {
        switch value.storage {
        case .null: nil
        case .int64(let integer): integer
        case .double(let double): double
        case .string(let string): string
        case .blob(let data): data
        }
    }
}

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

/// SQL debug output in the style of Core Data's `-com.apple.CoreData.SQLDebug 1`.
enum SQLDebugLog {
    private static let captureKey = "OpenCoreData.SQLDebugCapture"

    /// Runs `body` with SQL debugging on for this thread only, and returns the lines it logged.
    static func capturing<T>(_ body: () throws -> T) rethrows -> (T, [String]) {
        let box = CaptureBox()
        Thread.current.threadDictionary[captureKey] = box
        activeCaptures.withLock { $0 += 1 }
        captureMayBeActive = true
        defer {
            Thread.current.threadDictionary[captureKey] = nil
            activeCaptures.withLock { count in
                count -= 1
                captureMayBeActive = count > 0
            }
        }
        let result = try body()
        return (result, box.lines)
    }

    private final class CaptureBox {
        var lines: [String] = []
    }

    private static let activeCaptures = LockedValue(0)
    /// A cheap hint read on hot paths; the thread's own capture box is what counts.
    nonisolated(unsafe) private static var captureMayBeActive = false

    private static var capture: CaptureBox? {
        captureMayBeActive ? Thread.current.threadDictionary[captureKey] as? CaptureBox : nil
    }

    private static func emit(_ line: String) {
        if let capture { capture.lines.append(line) }
        if CoreDataLog.sqlDebugLevel > 0 { CoreDataLog.sqlLogger.info("\(line)") }
    }

    /// Whether statements are logged: checked before any text is built.
    static var enabled: Bool { CoreDataLog.sqlDebugEnabled || capture != nil }

    static func statement(_ sql: String, rows: Int, start: UInt64, isFetch: Bool = true) {
        guard enabled else { return }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        emit("sql: \(sql)")
        if isFetch {
            emit(String(format: "total fetch execution time: %.4fs for %d rows.", seconds, rows))
        }
    }

    static func save(inserted: Int, updated: Int, deleted: Int, start: UInt64) {
        guard enabled else { return }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        emit(String(format: "total save execution time: %.4fs (%d inserted, %d updated, %d deleted).", seconds, inserted, updated, deleted))
    }
}
