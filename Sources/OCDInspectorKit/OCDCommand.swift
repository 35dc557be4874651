import ArgumentParser
import Foundation

/// `ocd`, the store inspector: the root command and the entry point shared by the executable and the tests.
public struct OCDCommand: ParsableCommand {
    /// The command's name, abstract and subcommands.
    public static let configuration = CommandConfiguration(
        commandName: "ocd",
        abstract: "Inspect Core Data models and stores: model, info, fetch, export, import, watch, compile.",
        discussion: "Only `import` writes a store (and `compile` a model): every other command opens the store read-only and leaves the file as it was.",
        subcommands: [ModelCommand.self, InfoCommand.self, FetchCommand.self, ExportCommand.self, ImportCommand.self, WatchCommand.self, CompileCommand.self]
    )

    /// Creates the root command (ArgumentParser's requirement).
    public init() {}

    /// Parses `arguments` (without the program name), runs the command on `console` and returns
    /// the exit status: 0 on success, 1 when the command failed, 64 for a usage error. Errors are
    /// printed as one line on the console's standard error.
    public static func run(arguments: [String], console: Console) -> Int32 {
        do {
            var command = try parseAsRoot(arguments)
            if let inspector = command as? any InspectorCommand {
                try inspector.execute(on: console)
            } else {
                try command.run()
            }
            return 0
        } catch {
            return report(error, on: console)
        }
    }

    private static func report(_ error: Error, on console: Console) -> Int32 {
        let status = exitCode(for: error)
        if status == .success {
            // `--help`, `help <command>` and `--version` end parsing with a clean exit.
            console.line(fullMessage(for: error))
            return 0
        }
        if status == .validationFailure {
            console.writeError("ocd: error: \(message(for: error)) (see 'ocd help')\n")
            return status.rawValue
        }
        console.writeError(ErrorLine.make(for: error) + "\n")
        return 1
    }
}

/// A subcommand of `ocd` that writes to a `Console`, so that tests can run it in-process.
protocol InspectorCommand: ParsableCommand {
    /// Runs the command, writing results and progress to `console`.
    func execute(on console: Console) throws
}

extension InspectorCommand {
    /// Runs the command on the process's standard output and error.
    public func run() throws {
        try execute(on: .standard)
    }
}
