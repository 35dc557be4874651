/// Reports the progress of a long step on standard error: a bar redrawn in place on a terminal,
/// a plain line at every tenth of the work otherwise (for logs and pipes).
final class ProgressReporter {
    private let console: Console
    private let label: String
    private let total: Int
    private var shown = -1

    /// Starts reporting `total` units of work called `label`.
    init(console: Console, label: String, total: Int) {
        self.console = console
        self.label = label
        self.total = max(total, 1)
    }

    /// Records that `done` units are finished.
    func update(_ done: Int) {
        if console.errorIsTerminal {
            let percent = done * 100 / total
            guard percent != shown else { return }
            shown = percent
            let width = 30
            let filled = done * width / total
            let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
            console.writeError("\r\(label) [\(bar)] \(percent)% \(done)/\(total)")
        } else {
            let tenth = done * 10 / total
            guard tenth != shown, tenth > 0 || done == total else { return }
            shown = tenth
            console.writeError("\(label): \(done)/\(total)\n")
        }
    }

    /// Ends the bar's line (on a terminal).
    func finish() {
        if console.errorIsTerminal && shown >= 0 { console.writeError("\n") }
    }
}
