import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a command's output goes: the process's standard output and standard error, or, for
/// tests, two strings.
///
/// Results go to `write(_:)` (standard output); progress, warnings and errors go to
/// `writeError(_:)` (standard error), so that `ocd fetch --csv > file` captures only the data.
/// Unchecked Sendable: every mutable property is guarded by `lock`.
public final class Console: @unchecked Sendable {
    private let lock = NSLock()
    private let capturing: Bool
    private var capturedOutput = ""
    private var capturedErrors = ""

    /// Whether standard error is a terminal, which decides between a progress bar and progress lines.
    public let errorIsTerminal: Bool

    private init(capturing: Bool, errorIsTerminal: Bool) {
        self.capturing = capturing
        self.errorIsTerminal = errorIsTerminal
    }

    /// The process's standard output and standard error.
    public static let standard = Console(capturing: false, errorIsTerminal: isatty(STDERR_FILENO) != 0)

    /// A console that keeps what is written, for tests; `errorIsTerminal` pretends standard error is a terminal.
    public static func capturing(errorIsTerminal: Bool = false) -> Console {
        Console(capturing: true, errorIsTerminal: errorIsTerminal)
    }

    /// Everything written to standard output so far (capturing consoles only).
    public var output: String { lock.withLock { capturedOutput } }

    /// Everything written to standard error so far (capturing consoles only).
    public var errors: String { lock.withLock { capturedErrors } }

    /// Writes text to standard output as it is (add the line break yourself).
    public func write(_ text: String) {
        lock.withLock {
            if capturing { capturedOutput += text } else { FileHandle.standardOutput.write(Data(text.utf8)) }
        }
    }

    /// Writes one line to standard output.
    public func line(_ text: String = "") { write(text + "\n") }

    /// Writes text to standard error as it is.
    public func writeError(_ text: String) {
        lock.withLock {
            if capturing { capturedErrors += text } else { FileHandle.standardError.write(Data(text.utf8)) }
        }
    }
}
