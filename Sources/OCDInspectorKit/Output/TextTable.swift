/// Left-aligned columns of text, as `ocd` prints entities, attributes and fetched rows.
struct TextTable {
    /// The header row; empty for a table without headers.
    var header: [String]
    /// The rows, each with as many cells as the header (or the widest row).
    var rows: [[String]] = []

    /// The table as lines, each prefixed with `indent`, columns separated by two spaces.
    func render(indent: String = "") -> String {
        let all = (header.isEmpty ? [] : [header]) + rows
        let columns = all.map(\.count).max() ?? 0
        var widths = Array(repeating: 0, count: columns)
        for row in all {
            for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) }
        }
        let lines = all.map { row in
            let cells = row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }
            let line = indent + cells.joined(separator: "  ")
            return String(line[..<(line.lastIndex { $0 != " " }.map { line.index(after: $0) } ?? line.startIndex)])
        }
        return lines.map { $0 + "\n" }.joined()
    }
}
