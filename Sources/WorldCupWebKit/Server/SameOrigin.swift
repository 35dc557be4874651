import Foundation
import Hummingbird

/// The server's defence against other web sites: a page the user visits elsewhere may open a
/// WebSocket to, or post to, `127.0.0.1` (cross-site WebSocket hijacking, cross-site request
/// forgery). Browsers name the page's origin in `Origin`; requests from another origin are
/// refused, and writes must carry JSON, which a foreign page can't send without a preflight this
/// server never grants. Clients that are not browsers send no `Origin` and are let through.
enum SameOrigin {
    /// Whether a request comes from this server's own pages, or from no page at all.
    static func allows(_ request: Request) -> Bool {
        guard let origin = request.headers[.origin] else { return true }
        guard let authority = request.head.authority else { return false }
        return origin == "http://\(authority)"
    }

    /// Refuses a write from another origin (403) or without a JSON body (415).
    static func checkWrite(_ request: Request) throws {
        guard allows(request) else { throw WebRequestError.forbidden("Requests from other web sites are refused.") }
        let type = request.headers[.contentType]?.lowercased() ?? ""
        guard type.hasPrefix("application/json") else {
            throw WebRequestError.unsupportedMediaType("Send the request's body as JSON (Content-Type: application/json).")
        }
    }
}
