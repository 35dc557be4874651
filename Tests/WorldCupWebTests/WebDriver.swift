import Foundation
import OpenCoreDataTestKit
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Headless Chromium driven through chromedriver's W3C WebDriver HTTP API.
enum Browser {
    /// The Chromium and chromedriver executables on `PATH`, if both are installed.
    static let executables: (browser: String, driver: String)? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        func find(_ names: [String]) -> String? {
            for directory in path.split(separator: ":") {
                for name in names where FileManager.default.isExecutableFile(atPath: "\(directory)/\(name)") { return "\(directory)/\(name)" }
            }
            return nil
        }
        guard let browser = find(["chromium", "chromium-browser", "google-chrome"]), let driver = find(["chromedriver"]) else { return nil }
        return (browser, driver)
    }()

    /// Whether the browser test must run: set by CI, where a missing browser is a failure.
    static let isRequired = ProcessInfo.processInfo.environment["OPENCOREDATA_REQUIRE_BROWSER"] == "1"

    /// A free TCP port on 127.0.0.1.
    static func freePort() throws -> Int {
        try withLoopbackSocket(port: 0) { descriptor, address, length in
            guard bind(descriptor, address, length) == 0 else { throw WebDriverError("bind() failed") }
            var size = length
            guard getsockname(descriptor, address, &size) == 0 else { throw WebDriverError("getsockname() failed") }
            return address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
        }
    }

    /// Runs `body` with a new IPv4 TCP socket and the address 127.0.0.1:port; closes the socket after.
    static func withLoopbackSocket<T>(port: Int, _ body: (Int32, UnsafeMutablePointer<sockaddr>, socklen_t) throws -> T) throws -> T {
        #if canImport(Glibc)
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw WebDriverError("socket() failed") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return try withUnsafeMutablePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { try body(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }
}

/// A WebDriver failure, with chromedriver's message.
struct WebDriverError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A running chromedriver process.
final class ChromeDriver: @unchecked Sendable {
    let process = Process()
    let base: URL
    let browserPath: String

    /// Starts chromedriver on a free port and waits until it is ready.
    init(driverPath: String, browserPath: String) async throws {
        let port = try Browser.freePort()
        base = URL(string: "http://127.0.0.1:\(port)")!
        self.browserPath = browserPath
        process.executableURL = URL(fileURLWithPath: driverPath)
        process.arguments = ["--port=\(port)"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let ready = try await eventually(every: .milliseconds(50)) {
            let status = try? await WebDriverHTTP.send("GET", base.appendingPathComponent("status")) as? [String: Any]
            return status?["ready"] as? Bool == true
        }
        if ready { return }
        stop()
        throw WebDriverError("chromedriver did not start on port \(port)")
    }

    /// A new headless browser window.
    func newSession(width: Int = 1000, height: Int = 1300) async throws -> WebDriverSession {
        let options: [String: Any] = ["binary": browserPath, "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=\(width),\(height)"]]
        let body: [String: Any] = ["capabilities": ["alwaysMatch": ["goog:chromeOptions": options]]]
        let value = try await WebDriverHTTP.send("POST", base.appendingPathComponent("session"), body) as? [String: Any]
        guard let id = value?["sessionId"] as? String else { throw WebDriverError("no session id in \(String(describing: value))") }
        return WebDriverSession(base: base.appendingPathComponent("session").appendingPathComponent(id))
    }

    /// Ends chromedriver (which does not stop on SIGTERM while its sockets are open).
    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

/// One browser window of a WebDriver session.
struct WebDriverSession: Sendable {
    let base: URL
    private static let elementKey = "element-6066-11e4-a52e-4f735466cecf"

    func open(_ url: URL) async throws {
        _ = try await WebDriverHTTP.send("POST", base.appendingPathComponent("url"), ["url": url.absoluteString])
    }

    /// Runs a script in the page and returns its result.
    func execute(_ script: String, _ arguments: [Any] = []) async throws -> Any? {
        try await WebDriverHTTP.send("POST", base.appendingPathComponent("execute/sync"), ["script": script, "args": arguments])
    }

    /// Waits until a script returns true (at most `seconds`); false on time-out.
    func waitUntil(_ script: String, seconds: Double = patience) async throws -> Bool {
        try await eventually(within: seconds, every: .milliseconds(25)) { try await execute(script) as? Bool == true }
    }

    /// The first element matching a CSS selector.
    func element(_ selector: String) async throws -> String {
        let value = try await WebDriverHTTP.send("POST", base.appendingPathComponent("element"), ["using": "css selector", "value": selector]) as? [String: Any]
        guard let id = value?[Self.elementKey] as? String else { throw WebDriverError("no element \(selector): \(String(describing: value))") }
        return id
    }

    /// Clicks the first element matching a selector, as a user does, once the page's animations
    /// are over (a row sliding into place is not where the click lands).
    func click(_ selector: String) async throws {
        _ = try await waitUntil("return document.getAnimations().length === 0", seconds: 15)
        let id = try await element(selector)
        _ = try await WebDriverHTTP.send("POST", base.appendingPathComponent("element/\(id)/click"), [String: Any]())
    }

    /// Types text into the first element matching a selector.
    func type(_ text: String, into selector: String) async throws {
        let id = try await element(selector)
        _ = try await WebDriverHTTP.send("POST", base.appendingPathComponent("element/\(id)/value"), ["text": text])
    }

    /// The window as a PNG.
    func screenshot() async throws -> Data {
        guard let text = try await WebDriverHTTP.send("GET", base.appendingPathComponent("screenshot")) as? String, let data = Data(base64Encoded: text) else {
            throw WebDriverError("no screenshot")
        }
        return data
    }

    /// Closes the window and ends the session.
    func close() async {
        _ = try? await WebDriverHTTP.send("DELETE", base)
    }
}

/// JSON over HTTP to chromedriver, on a plain socket: FoundationNetworking's URLSession fails on
/// chromedriver's responses on Linux ("Failed writing header").
enum WebDriverHTTP {
    /// Sends a command; returns the response's `value`, or throws WebDriver's error.
    static func send(_ method: String, _ url: URL, _ body: Any? = nil) async throws -> Any? {
        let payload = try body.map { try JSONSerialization.data(withJSONObject: $0) } ?? Data()
        let port = url.port ?? 80
        var head = "\(method) \(url.path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        head += "Content-Type: application/json\r\nContent-Length: \(payload.count)\r\n\r\n"
        let request = Data(head.utf8) + payload
        let response = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Data, Error>) in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try exchange(request, port: port) })
            }
        }
        guard let separator = response.range(of: Data("\r\n\r\n".utf8)) else { throw WebDriverError("malformed HTTP response") }
        let object = try JSONSerialization.jsonObject(with: response[separator.upperBound...], options: [.fragmentsAllowed]) as? [String: Any]
        let value = object?["value"]
        if let failure = value as? [String: Any], let error = failure["error"] as? String {
            throw WebDriverError("\(error): \(failure["message"] as? String ?? "")")
        }
        return value is NSNull ? nil : value
    }

    /// Writes a request to 127.0.0.1:port and reads the response (its head, then Content-Length bytes).
    static func exchange(_ request: Data, port: Int) throws -> Data {
        try Browser.withLoopbackSocket(port: port) { descriptor, address, length in
            guard connect(descriptor, address, length) == 0 else { throw WebDriverError("can't connect to chromedriver on port \(port)") }
            try request.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let written = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                    guard written > 0 else { throw WebDriverError("write to chromedriver failed") }
                    offset += written
                }
            }
            var response = Data()
            var chunk = [UInt8](repeating: 0, count: 65_536)
            while true {
                if let length = completeLength(of: response), response.count >= length { return response }
                let count = read(descriptor, &chunk, chunk.count)
                guard count >= 0 else { throw WebDriverError("read from chromedriver failed") }
                if count == 0 { return response }
                response.append(contentsOf: chunk[0..<count])
            }
        }
    }

    /// The length of the whole response once its head has arrived: head plus Content-Length.
    private static func completeLength(of response: Data) -> Int? {
        guard let separator = response.range(of: Data("\r\n\r\n".utf8)) else { return nil }
        let head = String(decoding: response[..<separator.lowerBound], as: UTF8.self).lowercased()
        guard let line = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }),
              let length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) else { return nil }
        return separator.upperBound + length
    }
}
