import IcySniffCore
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
#if canImport(Glibc)
import Glibc
#endif

/// `--serve [ADDR:]PORT`: the web view. Serves the page embedded in the binary (Page/), the JSON
/// API the page uses (docs/WEBVIEW.md), and a Server-Sent Events stream of new records, from a
/// `FeedStore`. SwiftNIO's HTTP/1.1 server on one event loop; searches and exports run on a small
/// thread pool so that they never hold up the live stream.
///
/// Security (the page shows traffic an attacker may have shaped): it listens on 127.0.0.1 unless
/// told otherwise; on any other address every request but the page's static files must carry the
/// run's token (`?token=`), compared in constant time; on the loopback the Host header must name
/// the loopback (a page on another site cannot reach the view by DNS rebinding). Every response
/// carries a strict Content-Security-Policy (scripts and styles from the page's own files only,
/// nothing inline), `nosniff`, no referrer, no caching, no framing. Bodies are served as
/// attachments of type application/octet-stream in a sandbox: a body never runs as a page here.
public final class WebServer: @unchecked Sendable {
    public struct Configuration: Sendable {
        public var host = "127.0.0.1"
        public var port = 0
        /// A run's token, required when `host` is not the loopback (`makeToken()`).
        public var token: String? = nil
        /// What the page says about the run.
        public var live = false
        public var bodies = false
        public var input = ""
        /// The run's devices' names (`/api/devices`); nil: none are known.
        public var devices: DeviceDirectory? = nil
        public init() {}
    }

    let store: FeedStore
    public let configuration: Configuration
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let pool = NIOThreadPool(numberOfThreads: 1)
    private var channel: Channel? = nil

    public init(store: FeedStore, configuration: Configuration) {
        self.store = store
        self.configuration = configuration
    }

    /// A token of 128 random bits, as hex.
    public static func makeToken() -> String {
        var g = SystemRandomNumberGenerator()
        return (0..<2).map { _ in
            let v = g.next() as UInt64
            let hex = String(v, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
    }

    /// Is `host` a loopback address (127.0.0.0/8, ::1, localhost), written as one?
    public static func isLoopback(_ host: String) -> Bool { RequestGuard.isLoopbackAddress(host) }

    /// Binds and starts serving; answers the port bound (the one asked for, or the kernel's
    /// choice for 0).
    public func start() throws -> Int {
        pool.start()
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { [self] channel in
                // Past the cap a connection is closed as it is accepted: it holds nothing.
                guard admit(channel) else { return channel.close() }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(WebHandler(server: self))
                }
            }
            .childChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.maxMessagesPerRead, value: 4)
            // A slow browser's stream is written no further than this before it skips.
            .childChannelOption(.writeBufferWaterMark, value: .init(low: RequestGuard.Limits.writeLow, high: RequestGuard.Limits.writeHigh))
        let channel: Channel
        do {
            channel = try bootstrap.bind(host: configuration.host, port: configuration.port).wait()
        } catch let error as IOError {
            throw ListenError(reason: String(cString: strerror(error.errnoCode))
                              + (error.errnoCode == EADDRINUSE ? " (another program has this port: choose another, or 0 for any free one)" : ""))
        } catch {
            throw ListenError(reason: "\(error)")
        }
        self.channel = channel
        return channel.localAddress?.port ?? configuration.port
    }

    /// Why the server could not listen, in words (`strerror`'s, for a system call).
    public struct ListenError: Error, CustomStringConvertible {
        public var reason: String
        public var description: String { reason }
    }

    public func stop() {
        try? channel?.close().wait()
        try? group.syncShutdownGracefully()
        try? pool.syncShutdownGracefully()
    }

    /// The page's address, with the token when one is needed. On every address (0.0.0.0, ::),
    /// the address of this machine's first interface that is not the loopback (`reachableHost`),
    /// else the loopback's.
    public func url(port: Int) -> String {
        var host = configuration.host
        if Self.isWildcard(host) { host = Self.reachableHost(ipv6: host.contains(":")) ?? (host.contains(":") ? "::1" : "127.0.0.1") }
        let shown = host.contains(":") ? "[\(host)]" : host
        return "http://\(shown):\(port)/" + (configuration.token.map { "?token=\($0)" } ?? "")
    }

    /// Is `host` every address of the machine (0.0.0.0, ::)?
    public static func isWildcard(_ host: String) -> Bool {
        host == "0.0.0.0" || host == "::" || host == "[::]"
    }

    /// The first address of an interface that is up and not the loopback (IPv4, or IPv6 too).
    static func reachableHost(ipv6: Bool) -> String? {
        var list: UnsafeMutablePointer<ifaddrs>? = nil
        guard getifaddrs(&list) == 0, let first = list else { return nil }
        defer { freeifaddrs(list) }
        var found: String? = nil, found6: String? = nil
        for p in sequence(first: first, next: { $0.pointee.ifa_next }) {
            let i = p.pointee
            guard let a = i.ifa_addr, i.ifa_flags & UInt32(IFF_UP) != 0, i.ifa_flags & UInt32(IFF_LOOPBACK) == 0 else { continue }
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            if a.pointee.sa_family == sa_family_t(AF_INET), found == nil {
                a.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { var x = $0.pointee.sin_addr; _ = inet_ntop(AF_INET, &x, &text, socklen_t(text.count)) }
                found = String(cBuffer: text)
            } else if a.pointee.sa_family == sa_family_t(AF_INET6), found6 == nil {
                a.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { var x = $0.pointee.sin6_addr; _ = inet_ntop(AF_INET6, &x, &text, socklen_t(text.count)) }
                let t = String(cBuffer: text)
                if !t.hasPrefix("fe80") { found6 = t }   // a link-local address needs a zone in a URL
            }
        }
        return found ?? (ipv6 ? found6 : nil)
    }

    // MARK: Connections

    private let openConnections = RequestGuard.Allowance(RequestGuard.Limits.connections)
    let openStreams = RequestGuard.Allowance(RequestGuard.Limits.eventStreams)
    /// Bytes of request bodies buffered now by all connections.
    let bodiesInFlight = RequestGuard.Allowance(RequestGuard.Limits.bodiesInFlight)

    /// Takes a new connection, or refuses it past `RequestGuard.Limits.connections`.
    private func admit(_ channel: Channel) -> Bool {
        guard openConnections.take() else { return false }
        channel.closeFuture.whenComplete { [openConnections] _ in openConnections.give() }
        return true
    }

    // MARK: Requests

    struct Request {
        var method: HTTPMethod
        var path: String
        var query: RequestGuard.Parameters
        var headers: HTTPHeaders
        var body: [UInt8]
    }

    struct Response {
        var status: HTTPResponseStatus = .ok
        var type = "application/json"
        var body: [UInt8] = []
        var extra: [(String, String)] = []

        static func json(_ bytes: [UInt8]) -> Response { Response(body: bytes) }
        static func error(_ status: HTTPResponseStatus, _ message: String) -> Response {
            Response(status: status, body: Array("{\"error\":\(jsonString(message))}\n".utf8))
        }
    }

    /// What a request may do before it is routed (RequestGuard): nil when it may go on.
    func refusal(method: HTTPMethod, path: String, query: RequestGuard.Parameters, headers: HTTPHeaders, port: Int) -> Response? {
        let hosts = headers[canonicalForm: "host"]
        if hosts.count > 1 { return .error(.badRequest, "more than one Host header") }
        if RequestGuard.isFromAnotherSite(headers, method: method) {
            return .error(.forbidden, "this view answers its own page only, not another site's")
        }
        let isStatic = Self.pageFiles[path] != nil || path == "/favicon.ico"
        if let token = configuration.token {
            let given = (try? query.value("token")) ?? nil
            if !isStatic && !Self.constantTimeEqual(given ?? "", token) {
                return .error(.forbidden, "this view needs the token its run printed: open the address with ?token=…")
            }
        } else if !RequestGuard.isLoopbackHost(hosts.first.map(String.init) ?? "", port: port) {
            // The loopback: the Host header names it (DNS rebinding would name another host).
            return .error(.forbidden, "this view answers requests to the loopback only, at its own port (Host: \(hosts.first ?? ""))")
        }
        return nil
    }

    /// The page's style and script modules (app.js imports the others by relative address), which
    /// hold no data of the run: served without the token, as a module import cannot carry it.
    static let pageFiles: [String: (type: String, body: [UInt8])] = {
        let script = "text/javascript; charset=utf-8"
        return [
            "/app.css": ("text/css; charset=utf-8", PackageResources.app_css),
            "/app.js": (script, PackageResources.app_js), "/util.js": (script, PackageResources.util_js),
            "/state.js": (script, PackageResources.state_js), "/records.js": (script, PackageResources.records_js),
            "/filters.js": (script, PackageResources.filters_js), "/list.js": (script, PackageResources.list_js),
            "/detail.js": (script, PackageResources.detail_js), "/copy.js": (script, PackageResources.copy_js),
            "/waterfall.js": (script, PackageResources.waterfall_js), "/files.js": (script, PackageResources.files_js),
            "/live.js": (script, PackageResources.live_js), "/columns.js": (script, PackageResources.columns_js),
            "/menu.js": (script, PackageResources.menu_js),
        ]
    }()

    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        var d: UInt8 = 0
        for i in 0..<x.count { d |= x[i] ^ y[i] }
        return d == 0
    }

    /// The answer to a request that is not the event stream; nil for one that needs the pool.
    func route(_ r: Request) throws(RequestGuard.BadParameter) -> Response? {
        // HEAD is GET without the body (`respond` leaves it out).
        let method: HTTPMethod = r.method == .HEAD ? .GET : r.method
        if method == .GET, let file = Self.pageFiles[r.path] {
            return Response(type: file.type, body: file.body)
        }
        switch (method, r.path) {
        case (.GET, "/"), (.GET, "/index.html"):
            return Response(type: "text/html; charset=utf-8", body: PackageResources.index_html)
        case (.GET, "/favicon.ico"):
            return Response(status: .noContent)
        case (.GET, "/api/info"):
            var w = "{\"name\":\"icy-sniff\",\"version\":\(Self.jsonString(IcySniffVersion.current))"
            w += ",\"input\":\(Self.jsonString(configuration.input)),\"live\":\(configuration.live)"
            w += ",\"running\":\(store.isRunning),\"records\":\(store.count),\"bodies\":\(configuration.bodies)"
            w += ",\"lost\":\(store.lost)}\n"
            return .json(Array(w.utf8))
        case (.GET, "/api/records"):
            let after = try r.query.number("after", default: 0, in: Self.seqRange)
            let limit = try r.query.number("limit", default: 5000, in: 1...50_000, clampAbove: true)
            let got = store.records(after: after, limit: limit, maxBytes: 8 << 20)
            var out = Array("{\"last\":\(got.last),\"total\":\(store.count),\"running\":\(store.isRunning),\"records\":".utf8)
            out += got.json
            out += Array("}\n".utf8)
            return .json(out)
        case (.GET, "/api/devices"):
            // The devices named after change `after` (the page polls with the last it saw).
            let after = try r.query.number("after", default: 0, in: Self.seqRange)
            let got = configuration.devices?.changed(after: after) ?? (latest: 0, devices: [])
            let w = JSONWriter(indent: 0)
            w.beginObject()
            w.int("last", got.latest)
            w.key("devices"); w.beginArray()
            for d in got.devices {
                w.beginObject()
                w.string("mac", d.mac.description)
                w.key("names"); w.beginArray(); for n in d.names { w.string(n) }; w.endArray()
                w.endObject()
            }
            w.endArray()
            w.endObject()
            return .json(w.array + [0x0A])
        default:
            break
        }
        let parts = r.path.split(separator: "/", omittingEmptySubsequences: true)
        if method == .GET, parts.count == 3, parts[0] == "api", parts[1] == "entries", let seq = Self.seq(parts[2]) {
            guard let entry = store.entry(seq) else { return .error(.notFound, "no transaction \(seq)") }
            return .json(entry)
        }
        if method == .GET, parts.count == 3, parts[0] == "api", parts[1] == "connections",
           parts[2].first == "C", let id = Self.seq(parts[2].dropFirst()) {
            guard let record = store.connection(UInt64(id)) else { return .error(.notFound, "no connection \(parts[2])") }
            return .json(record)
        }
        if method == .GET, parts.count == 4, parts[0] == "api", parts[1] == "bodies", let seq = Self.seq(parts[2]),
           parts[3] == "request" || parts[3] == "response" {
            guard let body = store.body(seq, response: parts[3] == "response") else {
                return .error(.notFound, configuration.bodies ? "no \(parts[3]) body kept for \(seq)" : "bodies are kept with --bodies")
            }
            // Never a page of this origin: a download, sandboxed, not sniffed.
            return Response(type: "application/octet-stream", body: body,
                            extra: [("Content-Disposition", "attachment; filename=\"\(parts[3])-\(seq).bin\""),
                                    ("Content-Security-Policy", "sandbox; default-src 'none'")])
        }
        if Self.pooledPaths.contains(r.path) { return nil }
        return .error(.notFound, "no such page: \(r.path)")
    }

    /// The requests answered on the pool (`slowRoute`): they read every record.
    static let pooledPaths: Set<String> = ["/api/search", "/api/export.har", "/api/export.ndjson"]

    /// Sequence numbers and connection ids as the API takes them: up to 15 digits.
    static let seqRange = 0...999_999_999_999_999

    /// A sequence number in a path: digits only, within `seqRange`; nil otherwise (not found).
    static func seq(_ text: Substring) -> Int? {
        guard text.count <= 15 else { return nil }
        return RequestGuard.wholeNumber(text)
    }

    /// Does `method` on `path` take a request body? Only an export's list of seqs does.
    static func takesBody(_ method: HTTPMethod, _ path: String) -> Bool {
        method == .POST && (path == "/api/export.har" || path == "/api/export.ndjson")
    }

    /// Searches and exports (on the pool).
    func slowRoute(_ r: Request) -> Response {
        switch r.path {
        case "/api/search":
            // Text anywhere in a row or entry (q), or a header field by name on one side.
            let q: String, requestHeader: String?, responseHeader: String?
            do {
                q = try r.query.value("q") ?? ""
                requestHeader = try r.query.value("request-header")
                responseHeader = try r.query.value("response-header")
            } catch { return .error(.badRequest, error.message) }
            let seqs = responseHeader.map { store.search(header: $0, response: true) }
                ?? requestHeader.map { store.search(header: $0, response: false) }
                ?? store.search(q)
            return .json(Array("{\"seqs\":[\(seqs.map(String.init).joined(separator: ","))]}\n".utf8))
        case "/api/export.har", "/api/export.ndjson":
            // The transactions: a POSTed list of seqs ([1,5,7] or 1,5,7), or all of them.
            var seqs: [Int] = []
            if r.method == .POST {
                var n: Int? = nil
                // Numbers past any seq (more than 15 digits) are kept as one that matches nothing.
                for b in r.body + [0x20] {
                    if b >= 48 && b <= 57 { n = min((n ?? 0) * 10 + Int(b - 48), Self.seqRange.upperBound + 1) } else if let v = n { seqs.append(v); n = nil }
                }
            } else {
                seqs = Array(1...max(1, store.count))
            }
            let har = r.path.hasSuffix("har")
            return Response(type: har ? "application/json" : "application/x-ndjson", body: har ? store.har(seqs) : store.ndjson(seqs),
                            extra: [("Content-Disposition", "attachment; filename=\"icy-sniff.\(har ? "har" : "ndjson")\"")])
        default:
            return .error(.notFound, "no such page: \(r.path)")
        }
    }

    static let securityHeaders: [(String, String)] = [
        ("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
        ("Cache-Control", "no-store"),
        ("X-Frame-Options", "DENY"),
        ("Cross-Origin-Resource-Policy", "same-origin"),
    ]

    static func jsonString(_ s: String) -> String {
        let w = JSONWriter()
        w.string(s)
        return w.text
    }
}
