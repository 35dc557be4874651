import Foundation
import Testing
import WorldCupWebKit

/// Numbers taken from a request are range-checked: no value stops the server. Other web sites'
/// pages can neither open the WebSocket nor write, and every error has one JSON shape.
@Suite("Hostile requests")
struct HostileRequestTests {
    /// A GET to the server on a raw socket; the response's status line and body.
    static func get(_ path: String, port: Int, headers: [String] = []) async throws -> (status: String, body: String) {
        try await send("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n" + headers.map { $0 + "\r\n" }.joined() + "Connection: close\r\n\r\n", port: port)
    }

    /// A POST with a body and headers.
    static func post(_ path: String, body: String, port: Int, headers: [String]) async throws -> (status: String, body: String) {
        try await send("POST \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n" + headers.map { $0 + "\r\n" }.joined()
                       + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body, port: port)
    }

    private static func send(_ text: String, port: Int) async throws -> (status: String, body: String) {
        let request = Data(text.utf8)
        let response = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Data, Error>) in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try WebDriverHTTP.exchange(request, port: port) })
            }
        }
        let text = String(decoding: response, as: UTF8.self)
        let status = String(text.prefix { $0 != "\r" })
        let body = text.range(of: "\r\n\r\n").map { String(text[$0.upperBound...]) } ?? ""
        return (status, body)
    }

    @Test("overflowing, negative, non-numeric and huge ranges of banks: answered, and the server goes on")
    func bankRanges() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let server = try WorldCupWebServer(options: .init(port: 0, storeURL: directory.url.appendingPathComponent("WorldCup.sqlite"), serverLogLevel: .critical))
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let task = Task { try await server.run { port in continuation.yield(port) } }
        var iterator = ports.makeAsyncIterator()
        let port = try #require(await iterator.next())
        for query in ["start=9223372036854775800", "start=9223372036854775807&count=500", "start=-1", "start=-9223372036854775808",
                      "count=-5", "count=9223372036854775807", "start=abc&count=xyz", "count=1e99", "start=99999999999999999999999",
                      "start=230&count=500"] {
            let (status, body) = try await Self.get("/api/banks?\(query)", port: port)
            #expect(status.hasPrefix("HTTP/1.1 200") || status.hasPrefix("HTTP/1.1 400"), "\(query): \(status)")
            #expect(body.hasPrefix("[") || body.hasPrefix("{"), "\(query): \(body.prefix(80))")
        }
        let (_, lastRows) = try await Self.get("/api/banks?start=230&count=500", port: port)
        #expect(lastRows.components(separatedBy: "\"index\"").count - 1 == 3, "the last three of 233 banks")
        let (status, info) = try await Self.get("/api/banks/info", port: port)
        #expect(status.hasPrefix("HTTP/1.1 200") && info.contains("233"), "the server still answers")
        task.cancel()
        _ = try? await task.value
    }

    private static func startServer(_ directory: TemporaryDirectory) async throws -> (Task<Void, Error>, Int) {
        let server = try WorldCupWebServer(options: .init(port: 0, storeURL: directory.url.appendingPathComponent("WorldCup.sqlite"), serverLogLevel: .critical))
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        let task = Task { try await server.run { port in continuation.yield(port) } }
        var iterator = ports.makeAsyncIterator()
        let port = try #require(await iterator.next())
        return (task, port)
    }

    @Test("a foreign origin can't open the WebSocket or write; writes need JSON; errors have one shape")
    func crossSiteRequestsAreRefused() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (task, port) = try await Self.startServer(directory)
        defer { task.cancel() }
        let upgrade = ["Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13"]
        // Refused before the upgrade (the WebSocket layer answers 400); the page's own origin
        // upgrading is what the browser tests' live table shows.
        let foreign = try await Self.get("/ws", port: port, headers: upgrade + ["Origin: http://evil.example"])
        #expect(foreign.status.hasPrefix("HTTP/1.1 4"), "\(foreign.status)")
        #expect(!foreign.status.hasPrefix("HTTP/1.1 101"))

        let team = #"{"name":"Atlantis","zone":"Europe"}"#
        let plain = try await Self.post("/api/teams", body: team, port: port, headers: ["Content-Type: text/plain"])
        #expect(plain.status.hasPrefix("HTTP/1.1 415"), "\(plain.status)")
        let crossSite = try await Self.post("/api/teams", body: team, port: port, headers: ["Content-Type: application/json", "Origin: http://evil.example"])
        #expect(crossSite.status.hasPrefix("HTTP/1.1 403"), "\(crossSite.status)")
        let malformed = try await Self.post("/api/teams", body: "{not json", port: port, headers: ["Content-Type: application/json"])
        #expect(malformed.status.hasPrefix("HTTP/1.1 400"), "\(malformed.status)")
        let unknown = try await Self.get("/api/nothing", port: port)
        #expect(unknown.status.hasPrefix("HTTP/1.1 404"), "\(unknown.status)")
        for reply in [plain, crossSite, malformed, unknown] {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(reply.body.utf8)) as? [String: Any], "\(reply.body)")
            #expect(object.keys.sorted() == ["error"] && object["error"] is String, "one shape: \(reply.body)")
        }
        let accepted = try await Self.post("/api/teams", body: team, port: port, headers: ["Content-Type: application/json", "Origin: http://127.0.0.1:\(port)"])
        #expect(accepted.status.hasPrefix("HTTP/1.1 200"), "\(accepted.status) \(accepted.body)")

        // A name longer than the model allows (40 characters) is refused, whatever its size.
        for length in [41, 1 << 20] {
            let long = #"{"name":""# + String(repeating: "x", count: length) + #"","zone":"Europe"}"#
            let refused = try await Self.post("/api/teams", body: long, port: port, headers: ["Content-Type: application/json"])
            #expect(refused.status.hasPrefix("HTTP/1.1 400"), "\(length): \(refused.status)")
            #expect(refused.body.contains("teamName"), "\(refused.body.prefix(200))")
        }
    }

    @Test("hostile IDs and bodies at every write endpoint: each answered with an error, and the server goes on")
    func hostileWrites() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (task, port) = try await Self.startServer(directory)
        defer { task.cancel() }
        let json = ["Content-Type: application/json"]
        let ids = ["x-coredata://nowhere/Team/p-1", "x-coredata://nowhere/Team/p99999999999999999999999",
                   "x-coredata://nowhere/Team/p9223372036854775807", "x-coredata://nowhere/Nope/p1", "not a url", "",
                   String(repeating: "x", count: 100_000)]
        for path in ["/api/teams/win", "/api/teams/delete"] {
            for id in ids {
                let reply = try await Self.post(path, body: "{\"id\": \"\(id)\"}", port: port, headers: json)
                #expect(reply.status.hasPrefix("HTTP/1.1 4"), "\(path) \(id.prefix(40)): \(reply.status)")
                #expect(reply.body.hasPrefix("{\"error\""), "\(path): \(reply.body.prefix(80))")
            }
            for body in ["{\"id\": 9223372036854775807}", "{\"id\": -1e999}", "{\"id\": null}", "[]", "{}", "\"x\""] {
                let reply = try await Self.post(path, body: body, port: port, headers: json)
                #expect(reply.status.hasPrefix("HTTP/1.1 4"), "\(path) \(body): \(reply.status)")
            }
        }
        for body in ["{\"name\": 12, \"zone\": 1e999}", "{\"name\": \"\", \"zone\": \"\"}", "{\"name\": \"   \", \"zone\": \"Europe\"}"] {
            let reply = try await Self.post("/api/teams", body: body, port: port, headers: json)
            #expect(reply.status.hasPrefix("HTTP/1.1 4"), "\(body): \(reply.status)")
        }
        let (status, info) = try await Self.get("/api/banks/info", port: port)
        #expect(status.hasPrefix("HTTP/1.1 200") && info.contains("233"), "the server still answers")
    }
}
