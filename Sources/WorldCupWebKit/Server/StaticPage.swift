import Foundation
import Hummingbird

/// The page files (HTML, JavaScript, CSS) the server ships as resources; no build step.
enum StaticPage {
    /// A response with a page file's contents and its content type.
    static func response(for file: String) throws -> Response {
        guard let url = Bundle.module.url(forResource: file, withExtension: nil, subdirectory: "Public") else {
            throw HTTPError(.notFound)
        }
        let type = switch url.pathExtension {
        case "html": "text/html; charset=utf-8"
        case "js": "text/javascript; charset=utf-8"
        case "css": "text/css; charset=utf-8"
        case "svg": "image/svg+xml"
        default: "application/octet-stream"
        }
        return Response(status: .ok, headers: [.contentType: type, .cacheControl: "no-store"],
                        body: .init(byteBuffer: ByteBuffer(bytes: try Data(contentsOf: url))))
    }
}
