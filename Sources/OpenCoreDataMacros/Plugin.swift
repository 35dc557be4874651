import SwiftCompilerPlugin
import SwiftSyntaxMacros

/// The compiler plug-in that provides `@Managed`.
@main
struct OpenCoreDataMacrosPlugin: CompilerPlugin {
    let providingMacros: [Macro.Type] = [ManagedMacro.self]
}
