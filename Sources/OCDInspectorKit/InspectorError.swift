import Foundation
import OpenCoreData

/// A failure of an `ocd` command that is not a Core Data error: a bad argument, a missing file,
/// a value that can't be imported. Its description is the whole message.
public struct InspectorError: Error, CustomStringConvertible, Sendable {
    /// What went wrong, in one sentence.
    public let description: String
    /// The Cocoa error code that applies, if any (for example 260 for a missing file).
    public let code: Int?

    /// Creates an error with a message and an optional Cocoa error code.
    public init(_ description: String, code: Int? = nil) {
        self.description = description
        self.code = code
    }

    /// The error for a file that does not exist (Cocoa's `NSFileReadNoSuchFileError`, 260).
    static func noSuchFile(_ url: URL, what: String) -> InspectorError {
        InspectorError("no \(what) at \(url.path)", code: 260)
    }
}

/// Turns any error into the one line `ocd` prints on standard error.
enum ErrorLine {
    /// `ocd: error: <message> (Core Data error <code>)`, on one line.
    static func make(for error: Error) -> String {
        let (message, code) = describe(error)
        let suffix = code.map { " (Core Data error \($0))" } ?? ""
        let flat = message.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
        return "ocd: error: \(flat)\(suffix)"
    }

    private static func describe(_ error: Error) -> (String, Int?) {
        switch error {
        case let error as InspectorError:
            return (error.description, error.code)
        case let error as PredicateFormatError:
            return ("invalid predicate \"\(error.format)\": \(error.message) at character \(error.position)", PredicateFormatError.errorCode)
        default:
            let error = error as NSError
            if error.domain == NSCocoaErrorDomain {
                let detail = (error.userInfo[NSDetailedErrorsKey] as? [NSError])?.first
                let message = detail.map { "\(error.localizedDescription): \($0.localizedDescription)" } ?? error.localizedDescription
                return (message, error.code)
            }
            return ("\(error.localizedDescription) (\(error.domain) \(error.code))", nil)
        }
    }
}
