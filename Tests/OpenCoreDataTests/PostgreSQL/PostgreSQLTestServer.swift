import Foundation
import Testing
@testable import OpenCoreDataPostgreSQL

/// The PostgreSQL server the tests use: `OPENCOREDATA_POSTGRES_URL`, set by
/// `scripts/with-postgres` (which `.ci/run` uses). Without it the tests that need a server are
/// skipped, unless `OPENCOREDATA_REQUIRE_POSTGRES=1` (set by `.ci/run`) makes its absence a failure.
enum PostgreSQLTestServer {
    static let url: URL? = ProcessInfo.processInfo.environment["OPENCOREDATA_POSTGRES_URL"].flatMap(URL.init(string:))
    static let isRequired = ProcessInfo.processInfo.environment["OPENCOREDATA_REQUIRE_POSTGRES"] == "1"
    static let isAvailable = url != nil
    static let skipReason: Comment = "no PostgreSQL server: run `scripts/with-postgres swift test` to include these tests"

    /// The server's location, with its URL's options replaced by `query` (for a schema of the test's own).
    static func location(query: String? = nil) throws -> PostgreSQLLocation {
        guard let url else { throw NSError(domain: "PostgreSQLTestServer", code: 1) }
        guard let query, var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return try PostgreSQLLocation(url: url) }
        components.query = query
        return try PostgreSQLLocation(url: components.url!)
    }
}
