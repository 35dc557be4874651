import Foundation

#if FUZZING
/// libFuzzer's driver (in `libclang_rt.fuzzer_no_main`, linked when fuzzing): runs the callback on
/// generated inputs as the command line's options say.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
                         _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt
#endif

/// Runs a fuzz check the way libFuzzer needs: any broken promise stops the process, so that
/// libFuzzer keeps the input as a crash.
public enum FuzzEntryPoint {
    #if FUZZING
    /// Hands the process's command line and the callback to libFuzzer; returns its exit status.
    public static func runLibFuzzer(_ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> Int32 {
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        return LLVMFuzzerRunDriver(&argc, &argv, callback)
    }
    #endif

    /// Checks libFuzzer's input bytes; traps with the check's message when a promise is broken.
    public static func run(_ bytes: UnsafePointer<UInt8>?, _ count: Int, _ check: (Data) -> String?) -> CInt {
        let data = bytes.map { Data(bytes: $0, count: count) } ?? Data()
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
