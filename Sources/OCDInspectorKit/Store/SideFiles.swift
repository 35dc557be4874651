import Foundation

/// The `-wal` and `-shm` files SQLite may create beside a store it opens, even read-only.
///
/// Record them before opening; after closing, `removeCreated()` deletes the ones that were not
/// there before, so that reading a store leaves its folder as it was.
struct SideFiles {
    private let walPath: String
    private let absent: [String]

    /// Notes which side files of the store at `url` do not exist yet.
    init(of url: URL) {
        walPath = url.path + "-wal"
        absent = [walPath, url.path + "-shm"].filter { !FileManager.default.fileExists(atPath: $0) }
    }

    /// Removes the side files created since `init`, unless the `-wal` file has content: a
    /// read-only connection writes nothing to it, so such a file belongs to a writer still
    /// working on the store, whose `-shm` index must stay too.
    func removeCreated() {
        let walSize = (try? FileManager.default.attributesOfItem(atPath: walPath)[.size] as? Int) ?? 0
        guard walSize == 0 else { return }
        for path in absent where FileManager.default.fileExists(atPath: path) {
            try? FileManager.default.removeItem(atPath: path)
        }
    }
}
