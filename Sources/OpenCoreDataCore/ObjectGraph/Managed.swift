import Foundation

/// Declares a modeled property of a managed object subclass, as `@NSManaged` does on Apple
/// platforms: `@Managed var teamName: String?`. The property reads and writes the object's
/// managed storage, so reads fire faults, writes are recorded and inverses are maintained.
///
/// On a function named like Xcode's generated relationship helpers (`addToWalks(_:)`,
/// `removeFromWalks(_:)`, `insertIntoWalks(_:at:)`, `removeFromWalks(at:)`,
/// `replaceWalks(at:with:)`), it supplies the body.
@attached(accessor)
@attached(body)
public macro Managed() = #externalMacro(module: "OpenCoreDataMacros", type: "ManagedMacro")
