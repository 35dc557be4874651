import Foundation

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
