import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxMacros

/// `@Managed`, the stand-in for `@NSManaged`.
///
/// On a stored property it becomes a computed property whose getter and setter go through the
/// object's managed storage (firing faults, recording changes, maintaining inverses). On a to-many
/// property it also generates the relationship helpers that Xcode generates for `@NSManaged`.
public struct ManagedMacro: AccessorMacro, PeerMacro {
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
        if isPrimitiveAccessorName(key) {
            // `@NSManaged var primitiveName` is Core Data's primitive accessor of `name`.
            let rest = key.dropFirst("primitive".count)
            let property = rest.prefix(1).lowercased() + rest.dropFirst()
            return [
                "get { _managedPrimitiveValue(forKey: \(literal: property), declaredName: \(literal: key)) }",
                "set { _setManagedPrimitiveValue(newValue, forKey: \(literal: property), declaredName: \(literal: key)) }",
            ]
        }
        return [
            "get { _managedValue(forKey: \(literal: key)) }",
            "set { _setManagedValue(newValue, forKey: \(literal: key)) }",
        ]
    }

    /// Whether a property's name is a primitive accessor's: `primitive` and a capital letter.
    static func isPrimitiveAccessorName(_ name: String) -> Bool {
        guard name.hasPrefix("primitive"), let first = name.dropFirst("primitive".count).first else { return false }
        return first.isUppercase
    }

    /// For a to-many property (`NSSet`, `NSOrderedSet` or `Set<…>`), adds the relationship helpers Xcode
    /// generates: `addToWalks(_:)`, `removeFromWalks(_:)` and, for ordered ones, `insertIntoWalks(_:at:)`,
    /// `removeFromWalks(at:)`, `replaceWalks(at:with:)`, and their index-set forms.
    public static func expansion(
        of node: AttributeSyntax,
        providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard let variable = declaration.as(VariableDeclSyntax.self),
              let binding = variable.bindings.first,
              let identifier = binding.pattern.as(IdentifierPatternSyntax.self)?.identifier,
              let type = binding.typeAnnotation?.type.trimmedDescription else { return [] }
        guard !isPrimitiveAccessorName(identifier.trimmedDescription.filter({ $0 != "`" })) else { return [] }
        let ordered = type.contains("NSOrderedSet")
        guard ordered || type.contains("NSSet") || type.hasPrefix("Set<") else { return [] }
        let key = identifier.trimmedDescription.filter { $0 != "`" }
        let suffix = key.prefix(1).uppercased() + key.dropFirst()
        let access = variable.modifiers.contains { ["public", "open"].contains($0.name.text) } ? "public " : ""
        var declarations: [DeclSyntax] = [
            "\(raw: access)func addTo\(raw: suffix)(_ value: NSManagedObject) { _managedRelationship(\(literal: key)).add(value) }",
            "\(raw: access)func removeFrom\(raw: suffix)(_ value: NSManagedObject) { _managedRelationship(\(literal: key)).remove(value) }",
            "\(raw: access)func addTo\(raw: suffix)(_ values: NSSet) { _managedRelationship(\(literal: key)).add(values) }",
            "\(raw: access)func removeFrom\(raw: suffix)(_ values: NSSet) { _managedRelationship(\(literal: key)).remove(values) }",
        ]
        if ordered {
            declarations += [
                "\(raw: access)func addTo\(raw: suffix)(_ values: NSOrderedSet) { _managedRelationship(\(literal: key)).add(values) }",
                "\(raw: access)func removeFrom\(raw: suffix)(_ values: NSOrderedSet) { _managedRelationship(\(literal: key)).remove(values) }",
                "\(raw: access)func insertInto\(raw: suffix)(_ value: NSManagedObject, at idx: Int) { _managedRelationship(\(literal: key)).insert(value, at: idx) }",
                "\(raw: access)func removeFrom\(raw: suffix)(at idx: Int) { _managedRelationship(\(literal: key)).remove(at: idx) }",
                "\(raw: access)func replace\(raw: suffix)(at idx: Int, with value: NSManagedObject) { _managedRelationship(\(literal: key)).replace(at: idx, with: value) }",
                "\(raw: access)func insertInto\(raw: suffix)(_ values: [NSManagedObject], at indexes: NSIndexSet) { _managedRelationship(\(literal: key)).insert(values, at: indexes as IndexSet) }",
                "\(raw: access)func removeFrom\(raw: suffix)(at indexes: NSIndexSet) { _managedRelationship(\(literal: key)).remove(at: indexes as IndexSet) }",
                "\(raw: access)func replace\(raw: suffix)(at indexes: NSIndexSet, with values: [NSManagedObject]) { _managedRelationship(\(literal: key)).replace(at: indexes as IndexSet, with: values) }",
            ]
        }
        return declarations
    }
}

/// A diagnostic message for a misuse of the macro.
struct MacroMessage: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
