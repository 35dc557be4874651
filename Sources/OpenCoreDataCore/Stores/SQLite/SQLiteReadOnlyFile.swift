import Foundation

/// How a store file is opened for reading only, so that reading writes nothing beside it and
/// still sees every committed row, including rows still in its write-ahead log.
///
/// - No `-shm` index and no rows in a `-wal` log, in a directory that can't be written: nothing
///   is pending and nobody is writing, so SQLite opens the file as immutable.
/// - A `-wal` log with rows but no `-shm` index (a store copied with its log but without the
///   index, as stores are copied off devices): nobody is writing (a writer keeps the index), but
///   SQLite would have to create the index beside the file to read the log, which a read-only
///   directory forbids and which would otherwise add a file. The file and its log are copied to
///   a private directory and read there (the copy costs the file's size on disk while open); the
///   copy is removed by `remove()`.
/// - Otherwise the file itself, read-only: SQLite reads an index it can't write.
///
/// Read-only stores and the metadata readers use it; `ocd` does too, through the
/// `OpenCoreDataTools` SPI.
@_spi(OpenCoreDataTools)
public final class SQLiteReadOnlyFile {
    /// What to give SQLite as the file name: a path or a URI filename.
    public let name: String
    /// The private copy's directory, when reading a copy.
    private var privateCopy: URL?

    /// Decides how to read the store at `url`; copies it when that is the way (throwing Core
    /// Data's 134080 when the copy can't be made).
    public init(_ url: URL) throws {
        let path = url.path
        let fileManager = FileManager.default
        let hasIndex = fileManager.fileExists(atPath: path + "-shm")
        let logSize = Self.size(path + "-wal")
        let directoryIsWritable = access(url.deletingLastPathComponent().path, W_OK) == 0
        if !hasIndex, logSize > 0 {
            let directory = fileManager.temporaryDirectory.appendingPathComponent("OpenCoreData-read-\(UUID().uuidString)")
            let copy = directory.appendingPathComponent(url.lastPathComponent)
            do {
                try fileManager.createDirectory(at: directory, withIntermediateDirectories: true)
                try fileManager.copyItem(atPath: path, toPath: copy.path)
                try fileManager.copyItem(atPath: path + "-wal", toPath: copy.path + "-wal")
            } catch {
                // Ignored: removing a partial copy; the copy's failure is what is thrown.
                try? fileManager.removeItem(at: directory)
                throw CoreDataError.make(.openFailed, "The store at \(path) has rows in its -wal file but no -shm file; reading them needs a private copy, which could not be made: \(error.localizedDescription)",
                                         url: url, userInfo: [NSUnderlyingErrorKey: error])
            }
            privateCopy = directory
            name = copy.path
        } else if !hasIndex, !directoryIsWritable {
            var allowed = CharacterSet.urlPathAllowed
            allowed.remove(charactersIn: "?#%")
            name = "file:" + (path.addingPercentEncoding(withAllowedCharacters: allowed) ?? path) + "?immutable=1"
        } else {
            name = path
        }
    }

    /// Removes the private copy, if any.
    public func remove() {
        guard let privateCopy else { return }
        // Ignored: a temporary copy left behind costs disk space only; the system's temporary
        // directory is cleaned eventually.
        try? FileManager.default.removeItem(at: privateCopy)
        self.privateCopy = nil
    }

    deinit { remove() }

    /// A file's size; 0 when it does not exist or can't be read.
    private static func size(_ path: String) -> Int {
        // Ignored: a missing or unreadable side file counts as empty.
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    }
}
