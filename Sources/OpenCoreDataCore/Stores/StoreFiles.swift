import Foundation

/// The files of a store on disk: the store file and, for SQLite, its WAL and shared-memory files
/// beside it (`<file>-wal`, `<file>-shm`).
enum StoreFiles {
    /// The suffixes of SQLite's side files, the one list every place that handles them reads.
    static let sideFileSuffixes = ["-wal", "-shm"]

    /// Removes a store file and its side files, ignoring the ones that aren't there (for clearing
    /// away what a failed operation made).
    static func remove(at url: URL) {
        try? FileManager.default.removeItem(atPath: url.path)
        removeSideFiles(of: url)
    }

    /// Removes a store file's side files, ignoring the ones that aren't there.
    static func removeSideFiles(of url: URL) {
        for suffix in sideFileSuffixes { try? FileManager.default.removeItem(atPath: url.path + suffix) }
    }
}
