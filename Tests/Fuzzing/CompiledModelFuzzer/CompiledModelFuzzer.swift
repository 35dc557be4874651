// The compiled-model reader's fuzzer (`.mom` archives and store model caches). scripts/fuzz builds
// it with libFuzzer (see Package.swift), and `main` hands libFuzzer the check; built normally, it
// replays the files given as arguments.
import Foundation
import OpenCoreDataFuzzing

@main enum CompiledModelFuzzer {
    static func main() {
        #if FUZZING
        exit(FuzzEntryPoint.runLibFuzzer { bytes, count in FuzzEntryPoint.run(bytes, count, CompiledModelFuzzCheck.check) })
        #else
        exit(FuzzEntryPoint.replay(Array(CommandLine.arguments.dropFirst()), CompiledModelFuzzCheck.check))
        #endif
    }
}
