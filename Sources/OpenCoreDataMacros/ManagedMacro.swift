import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxMacros

/// `@Managed`, the stand-in for `@NSManaged`.
///
/// On a stored property it becomes a computed property whose getter and setter go through the
/// object's managed storage (firing faults, recording changes, maintaining inverses). On a function
/// named like Xcode's generated relationship helpers (`addToWalks(_:)`, `removeFromWalks(_:)`,
/// `insertIntoWalks(_:at:)`, `removeFromWalks(at:)`, `replaceWalks(at:with:)`) it supplies the body.
public struct ManagedMacro: AccessorMacro, BodyMacro {
    public static func expansion(
        of node: AttributeSyntax,
        providingAccessorsOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [AccessorDeclSyntax] {
        guard let variable = declaration.as(VariableDeclSyntax.self),
              let binding = variable.bindings.first,
              let identifier = binding.pattern.as(IdentifierPatternSyntax.self)?.identifier else {
            throw MacroMessage("@Managed applies to a stored property (`@Managed var name: String?`) or a relationship helper function.")
        }
        guard binding.accessorBlock == nil else {
            throw MacroMessage("@Managed properties have no accessors of their own: remove the getter or setter.")
        }
        guard binding.typeAnnotation != nil else {
            throw MacroMessage("@Managed needs an explicit type: `@Managed var \(identifier.text): Type`.")
        }
        let key = identifier.trimmedDescription.filter { $0 != "`" }
        return [
            "get { _managedValue(forKey: \(literal: key)) }",
            "set { _setManagedValue(newValue, forKey: \(literal: key)) }",
        ]
    }

    public static func expansion(
        of node: AttributeSyntax,
        providingBodyFor declaration: some DeclSyntaxProtocol & WithOptionalCodeBlockSyntax,
        in context: some MacroExpansionContext
    ) throws -> [CodeBlockItemSyntax] {
        guard let function = declaration.as(FunctionDeclSyntax.self) else {
            throw MacroMessage("@Managed applies to a stored property or a relationship helper function.")
        }
        let name = function.name.text
        let parameters = function.signature.parameterClause.parameters.map { ($0.firstName.text, ($0.secondName ?? $0.firstName).text) }
        func key(after prefix: String) -> String {
            let rest = name.dropFirst(prefix.count)
            return rest.prefix(1).lowercased() + rest.dropFirst()
        }
        let first = parameters.first?.1 ?? "value"
        if name.hasPrefix("addTo") {
            return ["_managedRelationship(\(literal: key(after: "addTo"))).add(\(raw: first))"]
        }
        if name.hasPrefix("removeFrom") {
            if parameters.first?.0 == "at" {
                return ["_managedRelationship(\(literal: key(after: "removeFrom"))).remove(at: \(raw: first))"]
            }
            return ["_managedRelationship(\(literal: key(after: "removeFrom"))).remove(\(raw: first))"]
        }
        if name.hasPrefix("insertInto"), parameters.count == 2 {
            return ["_managedRelationship(\(literal: key(after: "insertInto"))).insert(\(raw: first), at: \(raw: parameters[1].1))"]
        }
        if name.hasPrefix("replace"), parameters.count == 2 {
            return ["_managedRelationship(\(literal: key(after: "replace"))).replace(at: \(raw: first), with: \(raw: parameters[1].1))"]
        }
        throw MacroMessage("@Managed functions follow Xcode's relationship helper names: addTo<Key>(_:), removeFrom<Key>(_:), insertInto<Key>(_:at:), removeFrom<Key>(at:), replace<Key>(at:with:).")
    }
}

/// A diagnostic message for a misuse of the macro.
struct MacroMessage: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
