/// The caching & connection report of one capture (`icy-sniff report`): what a performance
/// engineer wants at a glance. Built from all transactions in request order.
public struct Report: Sendable {
    public struct Line: Sendable {
        public var time: Timestamp
        public var method: String
        public var url: String
        public var status: Int
        public var bytes: UInt64
        public var note: String
    }
    public struct HostConnections: Sendable {
        public var host: String
        public var connections: Int
        public var requests: Int
        public var singleRequestConnections: Int
    }

    public var capture = ""
    public var requests = 0
    public var responses = 0
    public var connections = 0
    public var wireBytes: UInt64 = 0
    public var decodedBytes: UInt64 = 0
    public var reusedConnections = 0
    public var maxRequestsPerConnection = 0
    public var hosts: [HostConnections] = []
    public var shortConnectionHosts: [HostConnections] = []
    public var avoidable: [Line] = []
    public var avoidableBytes: UInt64 = 0
    public var notModified: [Line] = []
    public var unchangedRedownloads: [Line] = []
    public var heuristicOnly: [Line] = []
    public var staticWithoutLifetime: [Line] = []
    public var staticWithoutValidator: [Line] = []
    public var uncompressedText: [Line] = []
    public var uncompressedTextBytes: UInt64 = 0
    public var slowestByWait: [(line: Line, wait: Double)] = []
    public var errorsByHost: [(host: String, status: Int, count: Int)] = []

    public var requestsPerConnection: Double { connections == 0 ? 0 : Double(requests) / Double(connections) }

    /// Builds the report. `transactions` must carry their cache assessment (CacheTracker) and be
    /// in request order.
    public static func build(capture: String, transactions: [Transaction]) -> Report {
        var r = Report()
        r.capture = capture
        var perConnection: [UInt64: (host: String, count: Int)] = [:]
        var lastOK: [String: (etag: String?, lastModified: String?, length: UInt64)] = [:]
        var errors: [String: [Int: Int]] = [:]
        for t in transactions {
            let line = Line(time: t.startTime, method: t.request?.method ?? "", url: t.url, status: t.response?.status ?? 0,
                            bytes: t.response?.bodyBytes ?? 0, note: "")
            if let req = t.request {
                r.requests += 1
                r.wireBytes += UInt64(max(0, req.headersSize)) + req.bodyWireBytes
                let entry = perConnection[t.connection.id] ?? (t.host.lowercased(), 0)
                perConnection[t.connection.id] = (entry.host, entry.count + 1)
            }
            guard let resp = t.response else { continue }
            r.responses += 1
            r.wireBytes += UInt64(max(0, resp.headersSize)) + resp.bodyWireBytes
            r.decodedBytes += resp.decodedBytes
            let type = (resp.headers.first(.contentType) ?? "").lowercased()
            let cache = t.cache
            if let cache {
                if cache.avoidable {
                    var l = line
                    l.note = cache.notModified ? "revalidated while fresh" : "re-fetched while fresh"
                    r.avoidable.append(l)
                    r.avoidableBytes += UInt64(max(0, resp.headersSize)) + resp.bodyWireBytes
                }
                if cache.notModified { r.notModified.append(line) }
                if cache.storable, cache.lifetimeSource == "heuristic", (cache.freshFor ?? 0) > 0, !cache.mustRevalidate {
                    var l = line
                    l.note = "fresh for \(CacheAssessment.shortDuration(cache.freshFor ?? 0)) by heuristic only"
                    r.heuristicOnly.append(l)
                }
                if resp.status == 200, isStaticAsset(type: type, url: t.url) {
                    if (cache.freshnessLifetime ?? 0) <= 0 && !cache.noStore {
                        r.staticWithoutLifetime.append(line)
                    }
                    if cache.etag == nil && cache.lastModified == nil { r.staticWithoutValidator.append(line) }
                }
            }
            // A 200 for a URL whose previous 200 had the same validator (or the same length): unchanged.
            if resp.status == 200, t.request?.method == "GET" {
                let key = t.url
                let etag = resp.headers.first(.etag), lm = resp.headers.first(.lastModified)
                if let previous = lastOK[key] {
                    let sameValidator = (etag != nil && etag == previous.etag) || (etag == nil && lm != nil && lm == previous.lastModified)
                    if sameValidator && !(cache?.avoidable ?? false) {
                        var l = line
                        l.note = etag != nil ? "same ETag \(etag!)" : "same Last-Modified"
                        r.unchangedRedownloads.append(l)
                    }
                }
                lastOK[key] = (etag, lm, resp.decodedBytes)
            }
            if isText(type), resp.headers.first(.contentEncoding) == nil, resp.bodyBytes >= 1024 {
                r.uncompressedText.append(line)
                r.uncompressedTextBytes += resp.bodyBytes
            }
            if resp.status >= 400 { errors[t.host.lowercased(), default: [:]][resp.status, default: 0] += 1 }
            r.slowestByWait.append((line, t.timings.wait))
        }
        r.slowestByWait.sort { $0.wait > $1.wait }
        r.slowestByWait = Array(r.slowestByWait.prefix(10))
        r.connections = perConnection.count
        r.reusedConnections = perConnection.values.filter { $0.count > 1 }.count
        r.maxRequestsPerConnection = perConnection.values.map(\.count).max() ?? 0
        var byHost: [String: HostConnections] = [:]
        for (_, c) in perConnection {
            var h = byHost[c.host] ?? HostConnections(host: c.host, connections: 0, requests: 0, singleRequestConnections: 0)
            h.connections += 1
            h.requests += c.count
            if c.count == 1 { h.singleRequestConnections += 1 }
            byHost[c.host] = h
        }
        r.hosts = byHost.values.sorted { ($0.connections, $0.host) > ($1.connections, $1.host) }
        // Many one-request connections to one host: keep-alive would have saved a handshake each.
        r.shortConnectionHosts = r.hosts.filter { $0.connections >= 3 && $0.singleRequestConnections * 2 >= $0.connections }
        r.errorsByHost = errors.flatMap { host, statuses in statuses.map { (host, $0.key, $0.value) } }
            .sorted { ($0.count, $0.host) > ($1.count, $1.host) }
        return r
    }

    static func isStaticAsset(type: String, url: String) -> Bool {
        if type.hasPrefix("image/") || type.hasPrefix("font/") || type.contains("css") || type.contains("javascript")
            || type.contains("woff") { return true }
        let path = url.split(separator: "?").first.map(String.init)?.lowercased() ?? ""
        return [".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg", ".ico", ".css", ".js", ".woff", ".woff2", ".ttf", ".otf"]
            .contains { path.hasSuffix($0) }
    }

    static func isText(_ type: String) -> Bool {
        type.hasPrefix("text/") || type.contains("json") || type.contains("javascript") || type.contains("xml") || type.contains("svg")
    }
}

/// Collects the transactions of one capture for its report.
public final class ReportCollector: TransactionSink {
    private var transactions: [Transaction] = []
    public init() {}
    public func consume(_ transaction: Transaction) { transactions.append(transaction) }
    public func connectionFinished(_ connection: Connection) {}

    public func report(capture: String) -> Report {
        transactions.sort { ($0.startTime, $0.sequence) < ($1.startTime, $1.sequence) }
        let tracker = CacheTracker()
        for t in transactions { tracker.assess(t) }
        return Report.build(capture: capture, transactions: transactions)
    }
}
