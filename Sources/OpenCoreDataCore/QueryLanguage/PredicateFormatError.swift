import Foundation

/// Why a predicate or expression format string could not be parsed.
///
/// `position` is the offset, in characters, of the offending text in `format`. The error bridges
/// to `NSError` in `NSCocoaErrorDomain` with code 2048 (an invalid predicate); its user info holds
/// the description, the format string and the position.
public struct PredicateFormatError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The broad kind of failure.
    public enum Kind: String, Hashable, Sendable {
        /// The text does not follow the grammar.
        case syntax
        /// A `%@`-style specifier has no matching argument.
        case missingArgument
        /// An argument cannot be used for its specifier (for example a number for `%K`).
        case invalidArgument
        /// A function name that is not known.
        case unknownFunction
        /// A construct that parses but is not supported here.
        case unsupported
        /// The format is beyond the parser's limits: nested too deeply, or too ambiguous to parse
        /// within its budget of work (see `docs/Differences.md`).
        case tooComplex
    }

    /// `NSError` code of a parse failure.
    public static let errorCode = 2048
    /// User-info key of the character offset (an `Int`).
    public static let positionUserInfoKey = "OCDPredicateErrorPosition"
    /// User-info key of the format string.
    public static let formatUserInfoKey = "OCDPredicateFormat"

    /// The broad kind of failure.
    public let kind: Kind
    /// What went wrong, e.g. "expected an expression".
    public let message: String
    /// Character offset in `format` where the problem was found.
    public let position: Int
    /// What the parser expected at `position`, when it knows.
    public let expected: String?
    /// What it found there instead (a token description or "end of input").
    public let found: String?
    /// The format string being parsed.
    public let format: String

    /// Creates an error for a format string.
    public init(kind: Kind, message: String, position: Int, expected: String? = nil, found: String? = nil, format: String) {
        self.kind = kind
        self.message = message
        self.position = position
        self.expected = expected
        self.found = found
        self.format = format
    }

    public var description: String {
        var text = "Unable to parse the format string \(Self.excerpt(of: format, around: position)): \(message)"
        if let expected { text += "; expected \(expected)" }
        if let found { text += ", found \(found)" }
        text += " (at character \(position))"
        return text
    }
}

extension PredicateFormatError {
    /// A format (or any text an error quotes) in quotes; past 200 characters, only the 160 around
    /// `position`, with the length (the whole format stays in the error's user info).
    static func excerpt(of format: String, around position: Int) -> String {
        guard format.count > 200 else { return "\"\(format)\"" }
        let start = format.index(format.startIndex, offsetBy: max(0, min(position, format.count) - 80))
        let end = format.index(start, offsetBy: min(160, format.distance(from: start, to: format.endIndex)))
        let before = start == format.startIndex ? "" : "…"
        let after = end == format.endIndex ? "" : "…"
        return "\"\(before)\(format[start..<end])\(after)\" (\(format.count) characters)"
    }
}

extension PredicateFormatError: LocalizedError {
    public var errorDescription: String? { description }
}

extension PredicateFormatError: CustomNSError {
    public static var errorDomain: String { NSCocoaErrorDomain }
    public var errorCode: Int { PredicateFormatError.errorCode }
    public var errorUserInfo: [String: Any] {
        [
            NSLocalizedDescriptionKey: description,
            PredicateFormatError.positionUserInfoKey: position,
            PredicateFormatError.formatUserInfoKey: format,
        ]
    }
}
