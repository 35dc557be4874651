import Foundation

/// Runs a fuzz check the way libFuzzer's entry point needs: any broken promise stops the process,
/// so that libFuzzer keeps the input as a crash.
public enum FuzzEntryPoint {
    /// Checks libFuzzer's input bytes; traps with the check's message when a promise is broken.
    public static func run(_ bytes: UnsafePointer<UInt8>, _ count: Int, _ check: (Data) -> String?) -> CInt {
        let data = Data(bytes: bytes, count: count)
        if let problem = check(data) {
            fatalError("fuzz check failed: \(problem)")
        }
        return 0
    }

    /// Replays inputs from files, for builds without libFuzzer (`swift run PredicateFuzzer FILE…`):
    /// prints one line per file and returns the process's exit status (1 when a check failed).
    public static func replay(_ paths: [String], _ check: (Data) -> String?) -> Int32 {
        var failed = false
        for path in paths {
            guard let data = FileManager.default.contents(atPath: path) else {
                print("\(path): can't be read")
                failed = true
                continue
            }
            if let problem = check(data) {
                print("\(path): \(problem)")
                failed = true
            } else {
                print("\(path): ok")
            }
        }
        return failed ? 1 : 0
    }
}
