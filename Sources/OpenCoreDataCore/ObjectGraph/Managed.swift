import Foundation

/// Declares a modeled property of a managed object subclass, as `@NSManaged` does on Apple
/// platforms: `@Managed var teamName: String?`. The property reads and writes the object's
/// managed storage, so reads fire faults, writes are recorded and inverses are maintained.
///
/// On a to-many property (`NSSet?`, `NSOrderedSet?` or `Set<…>?`) it also generates the helpers
/// Xcode generates: `addToWalks(_:)`, `removeFromWalks(_:)` and, when ordered,
/// `insertIntoWalks(_:at:)`, `removeFromWalks(at:)`, `replaceWalks(at:with:)`. Delete the generated
/// `@objc(…) @NSManaged func …` declarations when porting: `@Managed var` provides them.
@attached(accessor)
@attached(peer, names: arbitrary)
public macro Managed() = #externalMacro(module: "OpenCoreDataMacros", type: "ManagedMacro")
