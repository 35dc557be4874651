import Foundation

/// One object inserted, updated or deleted in a store, as `ocd watch` prints it.
struct StoreChange: Equatable {
    /// What happened to the object.
    enum Kind: String {
        case insert, update, delete
    }

    let kind: Kind
    let entity: String
    /// The object's ID as a URI (`x-coredata://<store UUID>/<Entity>/p<Z_PK>`).
    let objectID: String
    /// Inserted: every attribute value; updated: the attributes that changed (old and new); deleted: none.
    let values: [(name: String, old: JSONValue?, new: JSONValue)]

    static func == (lhs: StoreChange, rhs: StoreChange) -> Bool {
        lhs.kind == rhs.kind && lhs.entity == rhs.entity && lhs.objectID == rhs.objectID
            && lhs.values.map(\.name) == rhs.values.map(\.name) && lhs.values.map(\.new) == rhs.values.map(\.new)
            && lhs.values.map(\.old) == rhs.values.map(\.old)
    }

    /// `insert Team x-coredata://…/Team/p33 teamName="Brazil" wins=0`, `update … wins: 3 -> 4`, `delete …`.
    var text: String {
        let details = values.map { name, old, new in
            old.map { "\(name): \(Self.text($0)) -> \(Self.text(new))" } ?? "\(name)=\(Self.text(new))"
        }
        return ([kind.rawValue, entity, objectID] + details).joined(separator: " ")
    }

    /// The change as one JSON object.
    var json: JSONValue {
        var members: [(String, JSONValue)] = [("change", .string(kind.rawValue)), ("entity", .string(entity)), ("objectID", .string(objectID))]
        switch kind {
        case .insert: members.append(("values", .object(values.map { ($0.name, $0.new) })))
        case .update: members.append(("changes", .object(values.map { ($0.name, .object([("old", $0.old ?? .null), ("new", $0.new)])) })))
        case .delete: break
        }
        return .object(members)
    }

    private static func text(_ value: JSONValue) -> String {
        switch value {
        case .null: "nil"
        case .bool(let flag): "\(flag)"
        case .int(let number): "\(number)"
        case .double(let number): "\(number)"
        case .string(let text): "\"\(text)\""
        case .array, .object: value.prettyPrinted().split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.joined()
        }
    }
}
