// The Xcode model loader's fuzzer. scripts/fuzz builds it with libFuzzer (see Package.swift), and
// `main` hands libFuzzer the check; built normally, it replays the files given as arguments.
import Foundation
import OpenCoreDataFuzzing

@main enum ModelXMLFuzzer {
    static func main() {
        #if FUZZING
        exit(FuzzEntryPoint.runLibFuzzer { bytes, count in FuzzEntryPoint.run(bytes, count, ModelXMLFuzzCheck.check) })
        #else
        exit(FuzzEntryPoint.replay(Array(CommandLine.arguments.dropFirst()), ModelXMLFuzzCheck.check))
        #endif
    }
}
