import Foundation
import Logging

/// The package's loggers, and the switch for Core Data's SQL debug output.
public enum CoreDataLog {
    /// General messages (failed model loads, store recovery).
    public static let logger = Logger(label: "OpenCoreData")
    /// SQL statements and timings, when SQL debugging is on.
    public static let sqlLogger = Logger(label: "OpenCoreData.SQL")

    /// The SQL debug level: 0 is off; 1 logs statements and fetch times; higher levels add detail.
    ///
    /// Enabled like Apple's launch argument `-com.apple.CoreData.SQLDebug 1`, or with the
    /// environment variable `OPENCOREDATA_SQL_DEBUG=1`.
    public static var sqlDebugLevel: Int {
        get { sqlDebugState.withLock { $0 } }
        set {
            sqlDebugState.withLock { $0 = newValue }
            sqlDebugEnabled = newValue > 0
        }
    }

    /// `sqlDebugLevel > 0`, readable without a lock on hot paths.
    nonisolated(unsafe) static var sqlDebugEnabled: Bool = initialSQLDebugLevel() > 0

    private static let sqlDebugState = LockedValue<Int>(initialSQLDebugLevel())

    private static func initialSQLDebugLevel() -> Int {
        launchLevel(argument: "-com.apple.CoreData.SQLDebug", environment: "OPENCOREDATA_SQL_DEBUG", unreadable: 1)
    }

    /// A debugging level set at launch: Apple's launch argument (`-com.apple.CoreData.X 1`, as in
    /// an Xcode scheme), else the environment variable, else 0; a value that isn't a number counts
    /// as `unreadable`.
    static func launchLevel(argument: String, environment: String, unreadable: Int) -> Int {
        let arguments = CommandLine.arguments
        if let flag = arguments.firstIndex(of: argument), flag + 1 < arguments.count {
            return Int(arguments[flag + 1]) ?? unreadable
        }
        if let value = ProcessInfo.processInfo.environment[environment] { return Int(value) ?? unreadable }
        return 0
    }
}
