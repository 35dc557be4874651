// worldcup: the World Cup teams of the "NSFetchedResultsController" tutorial, in a terminal.
//
// Usage: swift run worldcup [--store PATH]
// Commands (one per line): list | win <team> | add <team> <zone> | delete <team> | help | quit
import Foundation
import WorldCupKit

var storeURL: URL?
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--store":
        guard let path = arguments.next() else { print("worldcup: --store needs a path"); exit(2) }
        storeURL = URL(fileURLWithPath: path)
    case "--help", "-h":
        print("Usage: worldcup [--store PATH]\n\(WorldCupApp.usage)")
        exit(0)
    default:
        print("worldcup: unknown option \(argument). Usage: worldcup [--store PATH]")
        exit(2)
    }
}

do {
    let app = try WorldCupApp(storeURL: storeURL)
    let imported = try app.importSeedIfNeeded()
    if imported > 0 { print("Imported \(imported) teams.") }
    print("World Cup store: \(app.storeURL?.path ?? "?")")
    print(try app.listing())
    print("\n\(WorldCupApp.usage)")
    while true {
        print("> ", terminator: "")
        FileHandle.standardOutput.synchronizeFile()
        guard let line = readLine() else { break }
        do {
            let result = try app.execute(line)
            if !result.output.isEmpty { print(result.output) }
            if result.quit { break }
        } catch {
            print("Error: \(error.localizedDescription)")
        }
    }
} catch {
    print("worldcup: \(error.localizedDescription)")
    exit(1)
}
