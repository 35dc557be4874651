import Foundation
import GRDB
@_spi(OpenCoreDataTools) import OpenCoreDataCore

/// A read-only SQLite connection to a store file, for the commands that read tables directly.
enum ReadOnlyDatabase {
    /// Opens the file read-only (as read-only stores do: see `SQLiteReadOnlyFile`), runs `body`,
    /// closes it and removes the side files opening created.
    static func with<T>(_ url: URL, label: String, _ body: (DatabaseQueue) throws -> T) throws -> T {
        var configuration = Configuration()
        configuration.readonly = true
        configuration.label = label
        // Another process's open or checkpoint can hold a lock for a moment: wait, as stores do,
        // rather than fail the command (`watch` reads again and again while others write).
        configuration.busyMode = .timeout(10)
        let sideFiles = SideFiles(of: url)
        defer { sideFiles.removeCreated() }
        let file = try SQLiteReadOnlyFile(url)
        defer { file.remove() }
        let database = try DatabaseQueue(path: file.name, configuration: configuration)
        defer { try? database.close() }
        return try body(database)
    }
}
