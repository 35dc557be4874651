import Foundation
import Hummingbird
import HummingbirdWebSocket
import Logging
import OpenCoreData
import WorldCupKit

/// The `worldcup-web` server: the live World Cup table (HTTP for the page and its writes, a
/// WebSocket for the controller's changes) and the Failed Banks page, on 127.0.0.1.
public final class WorldCupWebServer: Sendable {
    /// What the server serves and where.
    public struct Options: Sendable {
        /// The TCP port (0: any free port, reported to `onRunning`).
        public var port: Int = 8080
        /// The World Cup store (nil: the default store of `worldcup`).
        public var storeURL: URL?
        /// The Failed Banks store (nil: the bundled store written by Apple's Core Data).
        public var banksStoreURL: URL?
        /// The least severe level of the HTTP server's own log.
        public var serverLogLevel: Logger.Level

        /// Default options: port 8080, the default stores, server warnings logged.
        public init(port: Int = 8080, storeURL: URL? = nil, banksStoreURL: URL? = nil, serverLogLevel: Logger.Level = .warning) {
            self.port = port
            self.storeURL = storeURL
            self.banksStoreURL = banksStoreURL
            self.serverLogLevel = serverLogLevel
        }
    }

    /// The options the server was made with.
    public let options: Options
    /// The World Cup table the pages show.
    public let table: LiveTeamTable
    /// The Failed Banks list.
    public let banks: FailedBankList
    /// The store file of the World Cup table.
    public let storeURL: URL?

    /// Opens the stores (importing the 32 teams into an empty World Cup store) and starts the
    /// fetched results controllers.
    public init(options: Options) throws {
        self.options = options
        let app = try WorldCupApp(storeURL: options.storeURL, observesRemoteChanges: true)
        try app.context.performAndWait { [app] in _ = try app.importSeedIfNeeded() }
        storeURL = app.storeURL
        table = try LiveTeamTable(container: app.container)
        banks = try FailedBankList(storeURL: options.banksStoreURL ?? FailedBankList.bundledStoreURL())
    }

    /// Serves until the task is cancelled (or, with `stopsOnSignals`, SIGINT or SIGTERM arrives);
    /// `onRunning` receives the port once the server listens.
    public func run(stopsOnSignals: Bool = false, onRunning: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        let router = Router(context: BasicWebSocketRequestContext.self)
        router.add(middleware: JSONErrorMiddleware())
        addPageRoutes(to: router)
        addTableRoutes(to: router)
        addBankRoutes(to: router)
        var logger = Logger(label: "worldcup-web")
        logger.logLevel = options.serverLogLevel
        let application = Application(
            router: router,
            server: .http1WebSocketUpgrade(webSocketRouter: router),
            configuration: .init(address: .hostname("127.0.0.1", port: options.port), serverName: "worldcup-web"),
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? 0) },
            logger: logger
        )
        defer { table.disconnectAll() }
        if stopsOnSignals {
            try await application.runService()
        } else {
            try await application.runService(gracefulShutdownSignals: [])
        }
    }

    // MARK: Routes

    private func addPageRoutes(to router: Router<BasicWebSocketRequestContext>) {
        for (path, file) in [("/", "index.html"), ("/banks", "banks.html"), ("/app.js", "app.js"), ("/banks.js", "banks.js"), ("/style.css", "style.css"), ("/flags.svg", "flags.svg")] {
            router.get(RouterPath(path)) { _, _ in try StaticPage.response(for: file) }
        }
    }

    private func addTableRoutes(to router: Router<BasicWebSocketRequestContext>) {
        let table = self.table
        router.ws("/ws", shouldUpgrade: { request, _ in
            guard SameOrigin.allows(request) else { throw WebRequestError.forbidden("WebSockets from other web sites are refused.") }
            return .upgrade([:])
        }) { inbound, outbound, _ in
            let messages = await table.subscribe()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await message in messages { try await outbound.write(.text(message.json())) }
                }
                group.addTask {
                    // The page sends nothing; the loop ends when it closes the socket.
                    for try await _ in inbound {}
                }
                try await group.next()
                group.cancelAll()
            }
        }
        router.post("/api/teams/win") { request, context in
            try SameOrigin.checkWrite(request)
            let body = try await request.decode(as: TeamReference.self, context: context)
            return try await JSONReply.run { try await table.addWin(teamID: body.id) }
        }
        router.post("/api/teams/delete") { request, context in
            try SameOrigin.checkWrite(request)
            let body = try await request.decode(as: TeamReference.self, context: context)
            return try await JSONReply.run { try await table.deleteTeam(teamID: body.id) }
        }
        router.post("/api/teams") { request, context in
            try SameOrigin.checkWrite(request)
            let body = try await request.decode(as: NewTeam.self, context: context)
            return try await JSONReply.run { try await table.addTeam(name: body.name, zone: body.zone) }
        }
    }

    private func addBankRoutes(to router: Router<BasicWebSocketRequestContext>) {
        let banks = self.banks
        router.get("/api/banks/info") { _, _ in
            JSONReply.encode(BankListInfo(count: banks.count, batchSize: FailedBankList.batchSize))
        }
        router.get("/api/banks") { request, _ in
            let start = request.uri.queryParameters.get("start", as: Int.self) ?? 0
            let count = min(max(request.uri.queryParameters.get("count", as: Int.self) ?? FailedBankList.batchSize, 0), 500)
            guard start >= 0 else { return JSONReply.error(WebRequestError.badRequest("start must not be negative.")) }
            // A start near Int.max must not overflow: the range ends at Int.max and holds no rows.
            let (end, overflow) = start.addingReportingOverflow(count)
            return try await JSONReply.run { try await banks.rows(in: start..<(overflow ? Int.max : end)) }
        }
    }
}

/// The body of a request that names a team.
struct TeamReference: Decodable {
    let id: String
}

/// The body of a request that adds a team.
struct NewTeam: Decodable {
    let name: String
    let zone: String
}

/// What the Failed Banks page needs to size its list.
struct BankListInfo: Encodable {
    let count: Int
    let batchSize: Int
}

/// A reply that `JSONReply.run` sends for a write that has no other result.
struct Done: Encodable {
    let ok = true
}
