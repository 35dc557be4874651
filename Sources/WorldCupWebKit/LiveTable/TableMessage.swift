import Foundation

/// One team as a row of the page: its object ID (as a URI), name, zone, flag image name and wins.
public struct TeamRow: Codable, Sendable, Equatable {
    /// The team's `NSManagedObjectID` as a URI string; the page sends it back to name the team.
    public var id: String
    /// The team's name.
    public var name: String
    /// The qualifying zone, which names the team's section.
    public var zone: String
    /// The image name of the team's flag: the page draws it from its flag sprite (`flags.svg`), or the
    /// team's initial when the sprite has no such flag.
    public var flag: String
    /// The number of wins.
    public var wins: Int

    /// Creates a row from its values.
    public init(id: String, name: String, zone: String, flag: String, wins: Int) {
        self.id = id
        self.name = name
        self.zone = zone
        self.flag = flag
        self.wins = wins
    }
}

/// A section of the page: a zone and its teams in order.
public struct TableSection: Codable, Sendable, Equatable {
    /// The section's name (the qualifying zone).
    public var name: String
    /// The section's rows, in the controller's order.
    public var rows: [TeamRow]

    /// Creates a section.
    public init(name: String, rows: [TeamRow]) {
        self.name = name
        self.rows = rows
    }
}

/// A row's place: section and row, as in an `IndexPath`.
public struct RowPath: Codable, Sendable, Hashable, CustomStringConvertible {
    /// The section index.
    public var section: Int
    /// The row index within the section.
    public var row: Int

    /// Creates a row path.
    public init(section: Int, row: Int) {
        self.section = section
        self.row = row
    }

    init(_ indexPath: IndexPath) {
        self.init(section: indexPath.section, row: indexPath.item)
    }

    /// "section.row".
    public var description: String { "\(section).\(row)" }
}

/// One change of a batch, as the controller's delegate reported it. Paths before the change
/// (`at`, `from`) index the old table; paths after it (`to`, and `at` of inserts) the new one,
/// as in UITableView's batch updates.
public enum TableChange: Codable, Sendable, Equatable {
    /// The section at this old index is deleted, with its rows.
    case deleteSection(section: Int, name: String)
    /// A section with this name is inserted at this new index.
    case insertSection(section: Int, name: String)
    /// The row at this old path is deleted.
    case deleteRow(at: RowPath, id: String)
    /// A row is inserted at this new path.
    case insertRow(at: RowPath, row: TeamRow)
    /// The row at old path `from` moves to new path `to`, with new contents.
    case moveRow(from: RowPath, to: RowPath, row: TeamRow)
    /// The row at this old path stays in place but shows new contents.
    case reloadRow(at: RowPath, row: TeamRow)

    /// Whether the change is about a section (these come before row changes in a batch).
    public var isSectionChange: Bool {
        switch self {
        case .deleteSection, .insertSection: true
        default: false
        }
    }
}

/// A message the server sends over the WebSocket: the whole table when a page connects, then one
/// batch per `controllerWillChangeContent` … `controllerDidChangeContent` of the controller.
public enum TableMessage: Codable, Sendable, Equatable {
    /// The whole table; `version` counts the batches sent before it.
    case state(version: Int, sections: [TableSection])
    /// One batch of changes; applying it to the table of version `version - 1` gives version `version`.
    case batch(version: Int, changes: [TableChange])

    /// The message as JSON text.
    public func json() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        // Encoding these plain value types can't fail.
        return String(decoding: (try? encoder.encode(self)) ?? Data(), as: UTF8.self)
    }
}
