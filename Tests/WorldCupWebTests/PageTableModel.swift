import Foundation
import WorldCupWebKit

/// What a page holds, updated from the server's messages with UITableView's batch-update rules
/// (the rules app.js follows). Every rule a UITableView enforces with an "Invalid update" is a
/// thrown `Violation` here.
struct PageTableModel {
    struct Violation: Error, CustomStringConvertible {
        let description: String
    }

    private(set) var sections: [TableSection] = []
    private(set) var version = -1

    /// Applies one message: a whole table replaces the model; a batch must follow the last version.
    mutating func apply(_ message: TableMessage) throws {
        switch message {
        case .state(let version, let sections):
            self.sections = sections
            self.version = version
        case .batch(let version, let changes):
            guard version == self.version + 1 else { throw Violation(description: "batch \(version) after version \(self.version)") }
            sections = try Self.apply(changes, to: sections)
            self.version = version
        }
    }

    /// The table after a batch, or the first rule the batch breaks.
    static func apply(_ changes: [TableChange], to old: [TableSection]) throws -> [TableSection] {
        var deletedSections: Set<Int> = []
        var insertedSections: [(Int, String)] = []
        var sources: Set<RowPath> = []
        var deletedRows: Set<RowPath> = []
        var movedOut: Set<RowPath> = []
        var arriving: [(RowPath, TeamRow)] = []
        var reloads: [String: TeamRow] = [:]
        var seenRowChange = false
        func checkOld(_ path: RowPath) throws {
            guard old.indices.contains(path.section), old[path.section].rows.indices.contains(path.row) else {
                throw Violation(description: "old path \(path) out of range")
            }
            guard sources.insert(path).inserted else { throw Violation(description: "two operations on old row \(path)") }
        }
        for change in changes {
            if change.isSectionChange, seenRowChange { throw Violation(description: "section change after row changes") }
            switch change {
            case .deleteSection(let section, let name):
                guard old.indices.contains(section), old[section].name == name else { throw Violation(description: "delete of section \(section) \(name)") }
                guard deletedSections.insert(section).inserted else { throw Violation(description: "section \(section) deleted twice") }
            case .insertSection(let section, let name):
                insertedSections.append((section, name))
            case .deleteRow(let path, let id):
                try checkOld(path)
                guard old[path.section].rows[path.row].id == id else { throw Violation(description: "delete at \(path) names another row") }
                deletedRows.insert(path)
            case .insertRow(let path, let row):
                arriving.append((path, row))
            case .moveRow(let from, let to, let row):
                try checkOld(from)
                guard from != to else { throw Violation(description: "move onto its own path \(from)") }
                guard !deletedSections.contains(from.section) else { throw Violation(description: "move out of deleted section \(from.section)") }
                guard !insertedSections.contains(where: { $0.0 == to.section }) else { throw Violation(description: "move into inserted section \(to.section)") }
                guard old[from.section].rows[from.row].id == row.id else { throw Violation(description: "move from \(from) names another row") }
                movedOut.insert(from)
                arriving.append((to, row))
            case .reloadRow(let path, let row):
                try checkOld(path)
                guard !deletedSections.contains(path.section) else { throw Violation(description: "reload in deleted section \(path.section)") }
                guard old[path.section].rows[path.row].id == row.id else { throw Violation(description: "reload at \(path) names another row") }
                reloads[row.id] = row
            }
            if !change.isSectionChange { seenRowChange = true }
        }
        guard Set(arriving.map(\.0)).count == arriving.count else { throw Violation(description: "two rows inserted at one path") }
        var next: [(name: String, oldIndex: Int?)] = old.enumerated().filter { !deletedSections.contains($0.offset) }.map { ($0.element.name, $0.offset) }
        for (index, name) in insertedSections.sorted(by: { $0.0 < $1.0 }) {
            guard index <= next.count else { throw Violation(description: "section insert at \(index) out of range") }
            next.insert((name, nil), at: index)
        }
        return try next.enumerated().map { sectionIndex, section in
            let stayers: [TeamRow] = section.oldIndex.map { oldIndex in
                old[oldIndex].rows.enumerated().filter { row in
                    let path = RowPath(section: oldIndex, row: row.offset)
                    return !deletedRows.contains(path) && !movedOut.contains(path)
                }.map(\.element)
            } ?? []
            let incoming = arriving.filter { $0.0.section == sectionIndex }
            var rows = [TeamRow?](repeating: nil, count: stayers.count + incoming.count)
            for (path, row) in incoming {
                guard rows.indices.contains(path.row) else { throw Violation(description: "row inserted at \(path) out of range") }
                rows[path.row] = row
            }
            var remaining = stayers.makeIterator()
            for index in rows.indices where rows[index] == nil { rows[index] = remaining.next() }
            return TableSection(name: section.name, rows: rows.compactMap { $0 }.map { reloads[$0.id] ?? $0 })
        }
    }
}
