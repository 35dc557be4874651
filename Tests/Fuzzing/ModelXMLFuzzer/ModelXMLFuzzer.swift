// The Xcode model loader's fuzzer: scripts/fuzz builds it with `--sanitize=fuzzer -DFUZZING`, and
// libFuzzer calls `LLVMFuzzerTestOneInput` with each input. Built normally, it replays the files
// given as arguments through the same check.
import Foundation
import OpenCoreDataFuzzing

/// libFuzzer's entry point: one input.
@_cdecl("LLVMFuzzerTestOneInput")
public func modelXMLFuzzerTestOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    FuzzEntryPoint.run(bytes, count, ModelXMLFuzzCheck.check)
}

#if !FUZZING
/// Replays inputs from files.
@main enum ModelXMLFuzzerReplay {
    static func main() {
        exit(FuzzEntryPoint.replay(Array(CommandLine.arguments.dropFirst()), ModelXMLFuzzCheck.check))
    }
}
#endif
