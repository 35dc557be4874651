import Foundation
import Testing
import WorldCupWebKit

/// Numbers taken from a request are range-checked: no value stops the server.
@Suite("Hostile requests")
struct HostileRequestTests {
    /// A GET to the server on a raw socket; the response's status line and body.
    static func get(_ path: String, port: Int) async throws -> (status: String, body: String) {
        let request = Data("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n".utf8)
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
}
