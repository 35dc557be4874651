// Where the time of a typed-property workload goes, phase by phase, beside its floor's: the
// breakdown that says which part of a ratio is the framework's own work.
import Foundation

/// Marks on one clock, in order: each `mark` ends the phase that began at the previous one.
///
/// The typed-property workloads and their floors mark their phases on `PhaseClock.current`; a
/// child process writes the phases' seconds after its result (see `runChild`), in the order of
/// `TypedPhases`, and `reportPhases` prints them side by side. Marking costs a clock read.
struct PhaseClock {
    /// The clock of the workload running in this process.
    nonisolated(unsafe) static var current = PhaseClock()

    /// The seconds of each phase ended so far.
    private(set) var seconds: [Double] = []
    private var last = now()

    /// Starts the first phase now.
    mutating func start() {
        seconds = []
        last = now()
    }

    /// Ends the current phase now and starts the next.
    mutating func mark() {
        let time = now()
        seconds.append(time - last)
        last = time
    }
}

/// The phases the typed-property workloads mark, by workload, as the table names them.
enum TypedPhases {
    static let fetch = ["fetch the objects", "read every value", "free the objects"]
    static let insert = ["make objects, set values", "change notification (set of objects)",
                         "save: SQL, IDs, did-save sets", "free the objects"]
}

/// Prints, for a workload and its floor, each phase's median over `runs` runs (each run its own
/// process) and the difference: where the workload spends more than any implementation must.
func reportPhases(_ title: String, phases: [String], workload: String, floor: String, runs: Int = 3, rows: Int, directory: URL) throws {
    func medians(_ mode: String) throws -> [Double] {
        let all = try (0..<runs).map { _ in try measure(mode, rows: rows, directory: directory).extras }
        return phases.indices.map { index in
            let values = all.map { index < $0.count ? $0[index] : .nan }.sorted()
            return values[values.count / 2]
        }
    }
    func line(_ name: String, _ columns: String) {
        say("  \(name.padding(toLength: 40, withPad: " ", startingAt: 0))  \(columns)")
    }
    func line(_ name: String, ours: Double, floor: Double) {
        line(name, String(format: "%12.1f  %8.1f  %+11.1f", ours * 1000, floor * 1000, (ours - floor) * 1000))
    }
    let ours = try medians(workload), floors = try medians(floor)
    say("\(title): where the time goes (ms, median of \(runs) runs per phase)")
    line("phase", "OpenCoreData     floor   difference")
    for (index, phase) in phases.enumerated() { line(phase, ours: ours[index], floor: floors[index]) }
    line("total", ours: ours.reduce(0, +), floor: floors.reduce(0, +))
    say("")
}
