import ArgumentParser
import Foundation
import OpenCoreData

/// `ocd compile <Model.xcdatamodeld> [-o Model.momd]`: compiles Xcode's model source into what
/// an app ships, as Xcode's model compiler does, so Linux CI can build and check it.
struct CompileCommand: InspectorCommand {
    static let configuration = CommandConfiguration(
        commandName: "compile",
        abstract: "Compile a .xcdatamodeld into a .momd (or a .xcdatamodel into a .mom), as Xcode does.",
        discussion: """
            A .momd holds every version's .mom and a VersionInfo.plist naming the current version \
            with each version's entity hashes and checksum. The output replaces what is at the destination only \
            once it is completely written.
            """
    )

    @Argument(help: "The model source: .xcdatamodeld, .xcdatamodel or contents.")
    var source: String

    @Option(name: [.short, .customLong("output")], help: "Where to write (default: beside the source, as <name>.momd or <name>.mom).")
    var output: String?

    func execute(on console: Console) throws {
        let sourceURL = URL(fileURLWithPath: source)
        guard FileManager.default.fileExists(atPath: sourceURL.path) else { throw InspectorError.noSuchFile(sourceURL, what: "model") }
        let bundle = sourceURL.pathExtension == "xcdatamodeld"
        let defaultName = (sourceURL.lastPathComponent == "contents" ? sourceURL.deletingLastPathComponent() : sourceURL)
            .deletingPathExtension().lastPathComponent + (bundle ? ".momd" : ".mom")
        let destination = output.map { URL(fileURLWithPath: $0) } ?? sourceURL.deletingLastPathComponent().appendingPathComponent(defaultName)
        let result = try ModelCompiler.compile(sourceURL, to: destination) { version in
            console.writeError("Compiling \(version)\n")
        }
        let count = result.versions.count
        console.line("Compiled \(count) version\(count == 1 ? "" : "s") (current: \(result.currentVersion)) into \(result.destination.path)")
    }
}
