import Foundation

/// The files of a store on disk: the store file and, for SQLite, its WAL and shared-memory files
/// beside it (`<file>-wal`, `<file>-shm`).
package enum StoreFiles {
    /// The suffixes of SQLite's side files, the one list every place that handles them reads.
    static let sideFileSuffixes = ["-wal", "-shm"]

    /// Whether a URL names Apple's in-memory SQLite store: `/dev/null`, or a name under it
    /// (`/dev/null/Name`), as Apple's test-stack idiom writes it. Such a store has no files.
    static func isInMemorySQLite(_ url: URL) -> Bool {
        let path = url.standardizedFileURL.path
        return url.isFileURL && (path == "/dev/null" || path.hasPrefix("/dev/null/"))
    }

    /// Removes a store file and its side files, ignoring the ones that aren't there (for clearing
    /// away what a failed operation made). An in-memory store's `/dev/null` is never touched.
    static func remove(at url: URL) {
        guard !isInMemorySQLite(url) else { return }
        // Ignored: cleanup of what a failed operation made; a file that isn't there is the usual case.
        try? FileManager.default.removeItem(atPath: url.path)
        removeSideFiles(of: url)
    }

    /// Removes a store file's side files, ignoring the ones that aren't there.
    static func removeSideFiles(of url: URL) {
        guard !isInMemorySQLite(url) else { return }
        // Ignored: absent side files are the usual case; callers checkpoint the store first or discard it.
        for suffix in sideFileSuffixes { try? FileManager.default.removeItem(atPath: url.path + suffix) }
    }

    /// The first `count` bytes of a store file (fewer when it is shorter). A missing file is 260,
    /// a directory 134000, a file that can't be read 257: never a trap (Foundation's
    /// `readData(ofLength:)` traps on a directory).
    package static func header(of url: URL, count: Int) throws -> [UInt8] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw CoreDataError.make(.fileReadNoSuchFile, "No store at \(url.path).", url: url)
        }
        guard !isDirectory.boolValue else {
            throw CoreDataError.make(.invalidType, "\(url.path) is a directory, not a store file.", url: url)
        }
        guard let handle = FileHandle(forReadingAtPath: url.path) else {
            throw CoreDataError.make(.fileReadNoPermission, "The store at \(url.path) can't be read.", url: url)
        }
        defer { try? handle.close() } // Ignored: closing a read-only handle; the header was already read.
        do {
            return Array(try handle.read(upToCount: count) ?? Data())
        } catch {
            throw CoreDataError.make(.fileReadNoPermission, "The store at \(url.path) can't be read: \(error.localizedDescription)", url: url)
        }
    }
}
