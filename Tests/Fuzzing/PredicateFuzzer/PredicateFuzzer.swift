// The predicate parser's fuzzer: scripts/fuzz builds it with `--sanitize=fuzzer -DFUZZING`, and
// libFuzzer calls `LLVMFuzzerTestOneInput` with each input. Built normally, it replays the files
// given as arguments through the same check.
import Foundation
import OpenCoreDataFuzzing

/// libFuzzer's entry point: one input.
@_cdecl("LLVMFuzzerTestOneInput")
public func predicateFuzzerTestOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    FuzzEntryPoint.run(bytes, count, PredicateFuzzCheck.check)
}

#if !FUZZING
/// Replays inputs from files.
@main enum PredicateFuzzerReplay {
    static func main() {
        exit(FuzzEntryPoint.replay(Array(CommandLine.arguments.dropFirst()), PredicateFuzzCheck.check))
    }
}
#endif
