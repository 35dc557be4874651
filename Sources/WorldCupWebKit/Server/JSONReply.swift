import Foundation
import Hummingbird

/// JSON responses: a value, `{"ok":true}` for a write, or `{"error": message}` with the status
/// that fits the error.
enum JSONReply {
    /// Runs a request's work and replies with its result, or with the error it threw.
    static func run<Value: Encodable>(_ work: () async throws -> Value) async throws -> Response {
        do {
            return encode(try await work())
        } catch {
            return self.error(error)
        }
    }

    /// Runs a write and replies `{"ok":true}`, or with the error it threw.
    static func run(_ work: () async throws -> Void) async throws -> Response {
        try await run { () async throws -> Done in
            try await work()
            return Done()
        }
    }

    /// A 200 response holding a value as JSON.
    static func encode(_ value: some Encodable, status: HTTPResponse.Status = .ok) -> Response {
        let data = (try? JSONEncoder().encode(value)) ?? Data("{}".utf8)
        return Response(status: status, headers: [.contentType: "application/json; charset=utf-8"],
                        body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// An error response, always `{"error": message}`: 404 for an unknown team, 400 for a
    /// refused request or invalid data, 403 for another site's page, 415 for a body that isn't
    /// JSON, the status of an HTTP error (a malformed body, an unknown path), 500 otherwise.
    static func error(_ error: Error) -> Response {
        if let http = error as? HTTPError {
            return encode(["error": http.body ?? http.status.reasonPhrase], status: http.status)
        }
        let status: HTTPResponse.Status = switch error as? WebRequestError {
        case .notFound: .notFound
        case .badRequest: .badRequest
        case .forbidden: .forbidden
        case .unsupportedMediaType: .unsupportedMediaType
        case nil: (error as NSError).domain == NSCocoaErrorDomain ? .badRequest : .internalServerError
        }
        return encode(["error": error.localizedDescription], status: status)
    }
}

/// Answers every error the routes let through (an unknown path, a malformed body) in the one
/// JSON shape of `JSONReply.error`.
struct JSONErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            return JSONReply.error(error)
        }
    }
}
