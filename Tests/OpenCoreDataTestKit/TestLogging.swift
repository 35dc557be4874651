import Foundation
import Logging
import Synchronization

/// The test suite's log handler. Tests of failures make the library log errors on purpose; printed,
/// those lines would bury a real one. The suite keeps every log line in memory instead (tests may
/// check them), and prints them only with `OPENCOREDATA_TEST_LOG=1`.
///
/// `Tests/ConcurrencyDebugOn` installs it from a C constructor, before any logger exists.
public enum TestLogging {
    /// The lines logged so far, as "level label: message".
    public static let lines = Mutex<[String]>([])

    /// Whether the lines are printed to standard error as well.
    static let prints = ProcessInfo.processInfo.environment["OPENCOREDATA_TEST_LOG"] == "1"

    /// The lines logged since `start`, for a test that checks what was logged (other tests may
    /// log at the same time: look for the line you expect, not for an exact list).
    public static func lines(since start: Int) -> [String] {
        lines.withLock { Array($0.dropFirst(start)) }
    }

    /// How many lines have been logged, to pass to `lines(since:)` later.
    public static var count: Int { lines.withLock { $0.count } }

    /// A handler that records to `lines`.
    struct Handler: LogHandler {
        let label: String
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .info

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let line = "\(event.level) \(label): \(event.message)"
            TestLogging.lines.withLock { $0.append(line) }
            if TestLogging.prints { FileHandle.standardError.write(Data((line + "\n").utf8)) }
        }
    }
}

/// Installs `TestLogging.Handler` as the process's log handler (called by the C constructor).
@_cdecl("ocd_install_test_logging")
public func installTestLogging() {
    LoggingSystem.bootstrap { TestLogging.Handler(label: $0) }
}
