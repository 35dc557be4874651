// worldcup-web: the World Cup teams as a live web table, and the Failed Banks list.
//
// Usage: swift run worldcup-web [--port N] [--store PATH | --store postgres://…] [--synthetic-banks N]
import Foundation
import OpenCoreData
import WorldCupWebKit

let usage = "Usage: worldcup-web [--port N] [--store PATH | --store postgres://user:password@host:port/database] [--synthetic-banks N]"

/// Prints one error line and exits with status 2 (bad arguments) or 1.
func fail(_ message: String, status: Int32 = 1) -> Never {
    FileHandle.standardError.write(Data("worldcup-web: \(message)\n".utf8))
    exit(status)
}

var options = WorldCupWebServer.Options()
var syntheticBanks: Int?
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--port":
        guard let value = arguments.next(), let port = Int(value), (0...65_535).contains(port) else { fail("--port needs a number from 0 to 65535", status: 2) }
        options.port = port
    case "--store":
        guard let path = arguments.next() else { fail("--store needs a path or a postgres:// URL", status: 2) }
        let isPostgreSQL = path.hasPrefix("postgres://") || path.hasPrefix("postgresql://")
        options.storeURL = isPostgreSQL ? URL(string: path) : URL(fileURLWithPath: path)
        if options.storeURL == nil { fail("--store: \(path) is not a URL", status: 2) }
    case "--synthetic-banks":
        guard let value = arguments.next(), let count = Int(value), count > 0 else { fail("--synthetic-banks needs a positive number", status: 2) }
        syntheticBanks = count
    case "-com.apple.CoreData.SQLDebug":
        _ = arguments.next() // Read by OpenCoreData's SQL debug log.
    case "--help", "-h":
        print(usage)
        exit(0)
    default:
        fail("unknown option \(argument). \(usage)", status: 2)
    }
}

do {
    if let count = syntheticBanks {
        let url = SyntheticBanks.defaultStoreURL(count: count)
        let start = Date()
        try SyntheticBanks.prepareStore(count: count, at: url) { written in
            print("\rSynthetic banks: \(written) of \(count)", terminator: "")
            fflush(nil)
        }
        print("\rSynthetic banks: \(count) in \(url.path) (ready in \(String(format: "%.1f", Date().timeIntervalSince(start))) s)")
        options.banksStoreURL = url
    }
    let server = try WorldCupWebServer(options: options)
    let store = server.storeURL.map { $0.isFileURL ? $0.path : "\($0.scheme ?? "")://\($0.host ?? "")\($0.port.map { ":\($0)" } ?? "")\($0.path)" }
    print("World Cup store: \(store ?? "?")")
    print("Failed banks: \(server.banks.count), fetched in \(String(format: "%.0f", server.banks.fetchSeconds * 1000)) ms")
    try await server.run(stopsOnSignals: true) { port in
        print("Serving http://127.0.0.1:\(port)/ (the World Cup table) and http://127.0.0.1:\(port)/banks (Failed Banks). Ctrl-C stops.")
        fflush(nil)
    }
} catch {
    // Core Data's errors carry a sentence; the server's socket errors say what failed in their description.
    let cocoa = (error as NSError).domain == NSCocoaErrorDomain || error is LocalizedError
    fail(cocoa ? error.localizedDescription : "can't serve on 127.0.0.1:\(options.port): \(error)")
}
