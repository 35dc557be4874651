import Foundation

/// A request the server refuses, with the message the page shows.
public enum WebRequestError: Error, LocalizedError, Equatable {
    /// The request is malformed or asks for something impossible (HTTP 400).
    case badRequest(String)
    /// The request names a team or resource that does not exist (HTTP 404).
    case notFound(String)
    /// The request comes from another web site's page (HTTP 403).
    case forbidden(String)
    /// The request's body is not JSON (HTTP 415).
    case unsupportedMediaType(String)

    /// The message for the page.
    public var errorDescription: String? {
        switch self {
        case .badRequest(let message), .notFound(let message), .forbidden(let message), .unsupportedMediaType(let message): message
        }
    }
}
