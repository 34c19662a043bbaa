/// `icy-sniff diff`: what changed between two runs of the same app or page (before and after a
/// release, one device and another). Each side is aggregated by request — method and URL with
/// its volatile query values (timestamps, cache busters, nonces, ids) masked — and by host; the
/// comparison lists the requests added and removed, those made more or fewer times, whose status
/// or cache verdict changed, whose size changed, and each host's requests, bytes and median time.
///
/// Input: `ComparisonRow`s, one per transaction (from a capture through the pipeline and the
/// cache judgement, or from a HAR or NDJSON icy-sniff wrote). Output: a `Comparison`. A side
/// keeps one aggregate per distinct request (at most `maxKeys`; past it the rest are counted
/// together) and per host (at most `maxHosts`), not one per transaction.
public struct ComparisonRow: Sendable {
    public var method: String
    /// The URL as the outputs show it (secret query values redacted).
    public var url: String
    public var host: String
    /// 0: no response.
    public var status: Int
    /// Response body bytes on the wire (before content decoding).
    public var bytes: Int
    /// The cache verdict's kind (`CacheAssessment.verdict`): "fresh", "avoidable", "304", …; ""
    /// when the source does not say.
    public var verdict: String
    public var timeMilliseconds: Double

    /// A row from what an output said (a HAR entry, an NDJSON line); the URL's secrets are
    /// redacted as in every output (a browser's HAR has them), the host is the URL's.
    public init(method: String, url: String, status: Int, bytes: Int, verdict: String, timeMilliseconds: Double, options: ExportOptions) {
        self.method = method
        self.url = EntryEncoder.redactURL(url, options: options, readable: true)
        self.host = Self.host(of: url)
        self.status = status
        self.bytes = bytes
        self.verdict = verdict
        self.timeMilliseconds = timeMilliseconds
    }

    /// The row of an emitted transaction (its cache verdict judged).
    public init(_ t: Transaction, options: ExportOptions) {
        self.init(method: t.request?.method ?? "", url: t.url, status: t.response?.status ?? 0,
                  bytes: Int(clamping: t.response?.body.bytes ?? 0), verdict: t.cache?.verdict ?? "",
                  timeMilliseconds: t.timings.total, options: options)
    }

    /// The authority of `scheme://authority/…`, without user information, in lower case.
    static func host(of url: String) -> String {
        var rest = Substring(url)
        if let r = rest.firstRange(of: "://") { rest = rest[r.upperBound...] }
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let host = authority.lastIndex(of: "@").map { authority[authority.index(after: $0)...] } ?? authority
        return host.lowercased()
    }
}

/// What identifies "the same request" on both sides.
public enum ComparisonKey {
    /// Query parameters whose values change from one load to the next by design.
    static let volatileNames: Set<String> = ["_", "cb", "cachebuster", "cache_buster", "nocache", "ts", "timestamp", "t", "time",
                                             "rand", "random", "rnd", "nonce", "r", "requestid", "request_id", "correlationid", "cid"]

    /// `METHOD scheme://host/path?query` with each volatile query value as `*`: the value of a
    /// cache-busting name, or one that looks generated (9 or more digits, a UUID, 16 or more hex
    /// digits, a redacted secret). The fragment is dropped (it never goes on the wire).
    public static func of(method: String, url: String) -> String {
        var u = Substring(url)
        if let hash = u.firstIndex(of: "#") { u = u[..<hash] }
        guard let q = u.firstIndex(of: "?") else { return method + " " + u }
        var out = method + " " + u[...q]
        var first = true
        for pair in u[u.index(after: q)...].split(separator: "&", omittingEmptySubsequences: false) {
            if !first { out += "&" }
            first = false
            guard let eq = pair.firstIndex(of: "=") else { out += pair; continue }
            let name = pair[..<eq], value = pair[pair.index(after: eq)...]
            out += name + "="
            out += volatileNames.contains(name.lowercased()) || looksGenerated(value) ? "*" : value
        }
        return out
    }

    static func looksGenerated(_ v: Substring) -> Bool {
        if v.hasPrefix("[redacted") || v.hasPrefix("%5Bredacted") { return true }
        let bytes = Array(v.utf8)
        var digits = 0, hex = 0
        for b in bytes {
            if b >= 0x30 && b <= 0x39 { digits += 1; hex += 1 }
            else if (b >= 0x61 && b <= 0x66) || (b >= 0x41 && b <= 0x46) { hex += 1 }
        }
        if digits == bytes.count && digits >= 9 { return true }
        let dashes = bytes.filter { $0 == 0x2D }.count
        if bytes.count == 36 && dashes == 4 && hex == 32 { return true }   // a UUID
        return hex == bytes.count && hex >= 16
    }
}

/// One side of a comparison, aggregated as rows come.
public final class ComparisonSide {
    public let name: String
    struct Request {
        var method: String
        var url: String
        var host: String
        var count = 0
        var statuses: [Int: Int] = [:]
        var verdicts: [String: Int] = [:]
        var bytes = 0
        var time = 0.0
    }
    struct Host {
        var requests = 0
        var bytes = 0
        /// The first `maxSamples` times (for the median).
        var times: [Double] = []
    }
    private(set) var requests: [String: Request] = [:]
    /// Keys in the order they were first seen (outputs list in that order).
    private(set) var order: [String] = []
    private(set) var hosts: [String: Host] = [:]
    public private(set) var total = 0
    public private(set) var bytes = 0
    public private(set) var avoidable = 0
    /// Transactions past the key cap (counted, not compared one by one).
    public private(set) var uncompared = 0

    /// About 1 KiB each (the key, the URL cut to 255 bytes, two small tables): 20,000 per side
    /// keep `diff` of two 300 MB NDJSON files of 200,000 distinct URLs at 60 MiB (100,000 took
    /// 210); a page load has hundreds.
    static let maxKeys = 20_000
    static let maxHosts = 10_000
    static let maxSamples = 4096
    static let otherHost = "(other hosts)"

    public init(name: String) { self.name = name }

    public func add(_ row: ComparisonRow) {
        total += 1
        bytes += row.bytes
        if row.verdict == "avoidable" { avoidable += 1 }
        let hostKey = Report.counted(Report.hostKey(row.host), in: hosts, limit: Self.maxHosts, other: Self.otherHost)
        hosts[hostKey, default: Host()].requests += 1
        hosts[hostKey]!.bytes += row.bytes
        if hosts[hostKey]!.times.count < Self.maxSamples { hosts[hostKey]!.times.append(row.timeMilliseconds) }
        let key = ComparisonKey.of(method: row.method, url: row.url)
        if requests[key] == nil {
            guard requests.count < Self.maxKeys else { uncompared += 1; return }
            requests[key] = Request(method: row.method, url: Report.cut(row.url), host: row.host)
            order.append(key)
        }
        requests[key]!.count += 1
        requests[key]!.statuses[row.status, default: 0] += 1
        requests[key]!.verdicts[row.verdict, default: 0] += 1
        requests[key]!.bytes += row.bytes
        requests[key]!.time += row.timeMilliseconds
    }
}

/// What changed from side `a` to side `b`.
public struct Comparison: Sendable {
    /// One request (method and masked URL) as each side had it.
    public struct Change: Sendable {
        public var method: String
        public var url: String
        public var host: String
        public var before: Side?
        public var after: Side?
        public struct Side: Sendable {
            public var count: Int
            /// The status most of its responses had (0: none), and every status with its count.
            public var status: Int
            public var statuses: [Int: Int]
            /// The cache verdict most had, and each verdict with its count.
            public var verdict: String
            public var verdicts: [String: Int]
            /// Response body bytes on the wire per request, on average.
            public var bytesEach: Int
            public var bytes: Int
            public var averageMilliseconds: Double
        }
    }
    public struct HostShift: Sendable {
        public var host: String
        public var requestsBefore = 0, requestsAfter = 0
        public var bytesBefore = 0, bytesAfter = 0
        public var medianBefore: Double? = nil, medianAfter: Double? = nil
    }
    public struct Totals: Sendable {
        public var requests: Int
        public var bytes: Int
        public var avoidable: Int
        public var uncompared: Int
    }

    public var before: String
    public var after: String
    public var totalsBefore: Totals
    public var totalsAfter: Totals
    public var added: [Change] = []
    public var removed: [Change] = []
    /// Made more or fewer times (a re-download a cache should have answered shows here).
    public var countChanged: [Change] = []
    public var statusChanged: [Change] = []
    public var cacheChanged: [Change] = []
    /// Bytes per request changed by 10% and at least 1 KiB.
    public var sizeChanged: [Change] = []
    public var hosts: [HostShift] = []

    public init(_ a: ComparisonSide, _ b: ComparisonSide) {
        before = a.name
        after = b.name
        totalsBefore = Totals(requests: a.total, bytes: a.bytes, avoidable: a.avoidable, uncompared: a.uncompared)
        totalsAfter = Totals(requests: b.total, bytes: b.bytes, avoidable: b.avoidable, uncompared: b.uncompared)
        func side(_ r: ComparisonSide.Request) -> Change.Side {
            let status = r.statuses.max { ($0.value, -$0.key) < ($1.value, -$1.key) }?.key ?? 0
            let verdict = r.verdicts.max { ($0.value, $1.key) < ($1.value, $0.key) }?.key ?? ""
            return Change.Side(count: r.count, status: status, statuses: r.statuses, verdict: verdict, verdicts: r.verdicts,
                               bytesEach: r.count > 0 ? r.bytes / r.count : 0, bytes: r.bytes,
                               averageMilliseconds: r.count > 0 ? r.time / Double(r.count) : 0)
        }
        for key in a.order {
            let r = a.requests[key]!
            guard let s = b.requests[key] else {
                removed.append(Change(method: r.method, url: r.url, host: r.host, before: side(r), after: nil))
                continue
            }
            let change = Change(method: s.method, url: s.url, host: s.host, before: side(r), after: side(s))
            let x = change.before!, y = change.after!
            if x.count != y.count { countChanged.append(change) }
            if x.statuses.keys.sorted() != y.statuses.keys.sorted() { statusChanged.append(change) }
            if (x.verdicts["avoidable"] ?? 0) != (y.verdicts["avoidable"] ?? 0) || x.verdict != y.verdict { cacheChanged.append(change) }
            let delta = abs(y.bytesEach - x.bytesEach)
            if delta >= 1024 && Double(delta) >= 0.1 * Double(max(x.bytesEach, 1)) { sizeChanged.append(change) }
        }
        for key in b.order where a.requests[key] == nil {
            let s = b.requests[key]!
            added.append(Change(method: s.method, url: s.url, host: s.host, before: nil, after: side(s)))
        }
        var shifts: [String: HostShift] = [:]
        for (host, h) in a.hosts {
            shifts[host, default: HostShift(host: host)].requestsBefore = h.requests
            shifts[host]!.bytesBefore = h.bytes
            shifts[host]!.medianBefore = Self.median(h.times)
        }
        for (host, h) in b.hosts {
            shifts[host, default: HostShift(host: host)].requestsAfter = h.requests
            shifts[host]!.bytesAfter = h.bytes
            shifts[host]!.medianAfter = Self.median(h.times)
        }
        hosts = shifts.values.sorted { (max($0.bytesBefore, $0.bytesAfter), $1.host) > (max($1.bytesBefore, $1.bytesAfter), $0.host) }
    }

    static func median(_ values: [Double]) -> Double? {
        guard !values.isEmpty else { return nil }
        let s = values.sorted()
        return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
    }

    /// Nothing changed that the comparison lists.
    public var isEmpty: Bool {
        added.isEmpty && removed.isEmpty && countChanged.isEmpty && statusChanged.isEmpty && cacheChanged.isEmpty && sizeChanged.isEmpty
    }
}

/// The rows of a run's transactions, into one side of a comparison (after the cache judgement).
public final class ComparisonSink: TransactionSink {
    public let side: ComparisonSide
    private let options: ExportOptions
    public init(side: ComparisonSide, options: ExportOptions) {
        self.side = side
        self.options = options
    }
    public func consume(_ transaction: Transaction) { side.add(ComparisonRow(transaction, options: options)) }
    public func connectionFinished(_ connection: Connection) {}
}
