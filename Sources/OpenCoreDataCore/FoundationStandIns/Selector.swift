/// The name of an Objective-C style method, such as `"localizedStandardCompare:"`.
///
/// Linux has no Objective-C runtime, so this is only a name; sort descriptors and
/// `FUNCTION(...)` expressions interpret the names they support.
public struct Selector: Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The selector's name, colons included.
    public let name: String

    /// Creates a selector from its name, colons included.
    public init(_ name: String) {
        self.name = name
    }

    public init(stringLiteral value: String) {
        self.name = value
    }

    public var description: String { name }
}

/// The name of a selector.
public func NSStringFromSelector(_ selector: Selector) -> String { selector.name }

/// A selector with the given name.
public func NSSelectorFromString(_ name: String) -> Selector { Selector(name) }
