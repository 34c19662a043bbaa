/// The caching & connection report of one capture (`icy-sniff report`): what a performance
/// engineer wants at a glance. Built by `ReportCollector` as the transactions complete.
public struct Report: Sendable {
    public struct Line: Sendable {
        public var time: Timestamp
        public var method: String
        public var url: String
        /// The transaction's host (`Transaction.host`, lowercased), as every host figure counts it.
        public var host: String
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

    /// A list of examples: how many there were in all, the first `Report.examplesKept`, and how
    /// many came from each host (exact for the first `Report.hostsKept` hosts; the rest together
    /// under "other hosts").
    public struct Lines: Sendable {
        public private(set) var count = 0
        public private(set) var lines: [Line] = []
        public private(set) var byHost: [String: Int] = [:]
        public var isEmpty: Bool { count == 0 }
        mutating func append(_ line: Line) {
            count += 1
            if lines.count < Report.examplesKept { lines.append(line) }
            let host = line.host
            byHost[Report.counted(host, in: byHost, limit: Report.hostsKept, other: Report.otherHosts), default: 0] += 1
        }
        /// Hosts by count, most first.
        public var hosts: [(host: String, count: Int)] {
            byHost.map { ($0.key, $0.value) }.sorted { ($0.count, $1.host) > ($1.count, $0.host) }
        }
        public func prefix(_ n: Int) -> ArraySlice<Line> { lines.prefix(n) }
    }

    /// Examples kept per list (the text report shows 10 of them); counts and byte sums are exact.
    public static let examplesKept = 100
    /// Hosts listed; the rest are counted in the totals.
    public static let hostsKept = 1000
    /// Hosts counted one by one in the per-host tables (connections, errors); hosts after
    /// these are counted together under `otherHosts`, so a flood of names stays bounded.
    static let hostsCounted = 10_000
    static let otherHosts = "other hosts"

    /// How the report names a host: lower case, and at most 255 bytes (no DNS name is longer;
    /// a Host header of 8 KiB would otherwise be kept whole in every table that names hosts).
    static func hostKey(_ host: String) -> String { cut(host.lowercased()) }

    /// The key to count `key` under in a table that counts at most `limit` keys one by one:
    /// `key` itself while it is there or there is room, else `other` (all the rest together).
    /// The value at `p` (0...1) of non-empty sorted values: the nearest rank.
    static func percentile(_ sorted: [Double], _ p: Double) -> Double {
        sorted[min(sorted.count - 1, Int((p * Double(sorted.count - 1)).rounded()))]
    }

    static func counted<Key: Hashable, Value>(_ key: Key, in table: [Key: Value], limit: Int, other: Key) -> Key {
        table[key] != nil || table.count < limit ? key : other
    }

    /// `text` in at most 255 bytes, cut on a character, with "…" when cut.
    static func cut(_ text: String) -> String {
        let utf8 = text.utf8
        guard utf8.count > 255 else { return text }
        // Cut before a character that would not fit whole (a continuation byte is 10xxxxxx).
        var end = utf8.index(utf8.startIndex, offsetBy: 255)
        while end > utf8.startIndex && utf8[end] & 0xC0 == 0x80 { end = utf8.index(before: end) }
        return String(decoding: utf8[..<end], as: UTF8.self) + "…"
    }

    public var capture = ""
    /// Reading was stopped by a signal: the report covers the packets read before it.
    public var interrupted = false
    /// What the capture was, before the details: its span (the first to the last packet of its
    /// connections), the devices (client addresses) and hosts, the protocols the transactions
    /// travelled on, and the encrypted connections whose requests are not seen.
    public struct Overview: Sendable {
        public var start: Timestamp? = nil
        public var end: Timestamp? = nil
        public var devices = 0
        public var hosts = 0
        /// Transactions per protocol ("http/1.1", "h2", "h3", …), most first.
        public var protocols: [(name: String, count: Int)] = []
        /// TLS and QUIC connections whose traffic was not decrypted.
        public var encryptedTLS = 0
        public var encryptedQUIC = 0
        public var durationMilliseconds: Double? {
            guard let start, let end else { return nil }
            return end.milliseconds(since: start)
        }
    }
    public var overview = Overview()
    /// The HTTP messages seen, and their bytes (the text report's "Traffic:" line).
    public struct Traffic: Sendable {
        public var requests = 0
        public var responses = 0
        /// Requests' and responses' bytes on the wire (heads and bodies as sent).
        public var wireBytes: UInt64 = 0
        /// Responses' bodies after content decoding.
        public var decodedBytes: UInt64 = 0
    }
    public var traffic = Traffic()
    public var connections = 0
    public var reusedConnections = 0
    public var maxRequestsPerConnection = 0
    public var hosts: [HostConnections] = []
    public var shortConnectionHosts: [HostConnections] = []
    /// One device (client address): its connections and their bytes both ways (encrypted ones
    /// included: a phone's HTTPS without keys still counts), its requests, what its own cache
    /// should have served (docs/CACHE.md), and the apps it spoke as (User-Agents, most requests
    /// first).
    public struct Device: Sendable {
        /// How the report names it: its client address; for a device known by its link-layer
        /// address (`DeviceTable`), that address, and its name before it once named (`named`).
        public var client: String
        public var mac: String? = nil
        public var name: String? = nil
        public var connections = 0
        public var encryptedConnections = 0
        public var wireBytes: UInt64 = 0
        public var requests = 0
        public var avoidable = 0
        public var avoidableBytes: UInt64 = 0
        /// Requests answered 4xx or 5xx, or not answered at all.
        public var failed = 0
        public var userAgents: [(agent: String, requests: Int)] = []
        /// The JA4 fingerprints of its TLS and QUIC ClientHellos, with their connections.
        public var fingerprints: [(ja4: String, connections: Int)] = []
    }
    /// Devices, most bytes first: the first `hostsCounted` one by one, the rest as "other devices".
    public var devices: [Device] = []

    /// Names its devices known by link-layer address (`DeviceTable.names`): "Pixel-7 (02:…)".
    public mutating func nameDevices(_ names: [UInt64: String]) {
        for i in devices.indices {
            guard let mac = devices[i].mac, let raw = MACAddress(text: mac)?.raw, let name = names[raw] else { continue }
            devices[i].name = name
            devices[i].client = "\(name) (\(mac))"
        }
    }
    /// User-Agents kept per device (the rest are counted as "other").
    static let agentsPerDevice = 20
    /// What the transfers could have saved, as Lighthouse's "opportunities" are: requests a
    /// cache should have served, shortened or kept, and text sent without a coding the client
    /// offered (docs/CACHE.md). Each list keeps examples and exact counts (`Lines`).
    public struct Opportunities: Sendable {
        /// Requests a stored response was still fresh for, and their responses' wire bytes.
        public var avoidable = Lines()
        public var avoidableBytes: UInt64 = 0
        public var notModified = Lines()
        public var unchangedRedownloads = Lines()
        public var heuristicOnly = Lines()
        public var staticWithoutLifetime = Lines()
        public var staticWithoutValidator = Lines()
        public var uncompressedText = Lines()
        public var uncompressedTextBytes: UInt64 = 0
    }
    public var opportunities = Opportunities()
    /// Transactions whose bytes a later copy with the same sequence numbers contradicted
    /// (`injection_suspected`: a forged response racing the real one, or a broken middlebox).
    public var injectionSuspected = Lines()
    public var slowestByWait: [(line: Line, wait: Double)] = []
    public var errorsByHost: [(host: String, status: Int, count: Int)] = []
    /// QUIC connections (HTTP/3 and other QUIC), with the same figures; nil when there were none.
    public var quic: TLSSummary? = nil
    /// TLS connections (from their cleartext handshakes); nil when there were none.
    public var tls: TLSSummary? = nil
    /// Encrypted connections without keys: what their records say, per server name (estimates).
    public var estimated: EstimatedSummary? = nil
    /// HTTP/2 connections; nil when there were none.
    public var http2: HTTP2Summary? = nil
    /// HTTP/1.x hosts that had several connections open at once: one HTTP/2 connection would
    /// have carried their requests (most parallel first).
    public var parallelHTTP1Hosts: [ParallelHost] = []
    /// Where the time goes.
    public var time = TimeBreakdown()

    public struct HTTP2Summary: Sendable {
        public var connections = 0
        public var streams = 0
        public var maxStreamsPerConnection = 0
        /// The most streams one connection had open at once.
        public var peakConcurrentStreams = 0
        public var pushed = 0
        public var reset = 0
        public var streamsPerConnection: Double { connections == 0 ? 0 : Double(streams) / Double(connections) }
    }

    public struct ParallelHost: Sendable {
        public var host: String
        public var connections: Int
        /// The most of them open at the same time.
        public var peakParallel: Int
        public var requests: Int
    }

    /// The exchanges estimated from encrypted connections' records (`RecordPattern`), per server
    /// name: how a phone's HTTPS behaves without its keys.
    public struct EstimatedSummary: Sendable {
        public struct Host: Sendable {
            public var host: String
            public var connections: Int
            /// Connections that carried one exchange (a connection per request).
            public var singleExchange: Int
            public var exchanges: Int
            /// Some count is not exact (HTTP/2 and HTTP/3's, a cap, a lost record): `exchanges` is
            /// an estimate, not a count; `counted`: some connection had a count at all.
            public var atLeast: Bool
            public var counted: Bool = false
            public var responseBytes: UInt64
            /// Time to first byte (send + wait) of the exchanges alone on their connection (their
            /// responses are known: all of HTTP/1.1's), ms.
            public var ttfbP50: Double?
            public var ttfbP90: Double?
        }
        public var connections = 0
        public var exchanges = 0
        public var hosts: [Host] = []
    }

    /// The TLS part of the report: what the handshakes say, without keys.
    public struct TLSSummary: Sendable {
        public struct Host: Sendable {
            public var sni: String
            public var connections: Int
            public var resumed: Int
            /// Connections opened after an earlier one to the same host had closed: keeping that
            /// one open would have saved a handshake.
            public var sequential: Int
        }
        public var connections = 0
        /// Of those, the ones decrypted with a key log.
        public var decrypted = 0
        public var resumed = 0
        public var versions: [(version: String, count: Int)] = []
        /// Handshake times (ms): median, 90th percentile and maximum.
        public var handshakeP50: Double? = nil
        public var handshakeP90: Double? = nil
        public var handshakeMax: Double? = nil
        public var hosts: [Host] = []
        /// Bytes each way on these connections (TCP payload; QUIC: UDP payload).
        public var bytesFromClient: UInt64 = 0
        public var bytesFromServer: UInt64 = 0
        /// QUIC: how the connections ended (`QUICInfo.end`: "idle", "connection_close",
        /// "application_close", "stateless_reset"), most first; empty for TLS over TCP.
        public var ends: [(end: String, count: Int)] = []
        public var resumptionRate: Double { connections == 0 ? 0 : Double(resumed) / Double(connections) }
    }

    public var requestsPerConnection: Double { connections == 0 ? 0 : Double(traffic.requests) / Double(connections) }

    /// A static asset (an image, a font, a style sheet, a script), not an API answer in the form
    /// of one: JSONP (a `callback=` parameter) and tracking pixels (a small GIF with a query)
    /// are responses of their own, not assets to cache.
    static func isStaticAsset(type: String, url: String, bytes: UInt64 = .max) -> Bool {
        let utf8 = url.utf8
        // The '?' found in the contiguous bytes (a generic search of the view was a fifth of a
        // report's time on long URLs).
        let markOffset = utf8.withContiguousStorageIfAvailable { $0.firstIndex(of: 0x3F) } ?? utf8.firstIndex(of: 0x3F).map { utf8.distance(from: utf8.startIndex, to: $0) }
        let questionMark = markOffset.map { utf8.index(utf8.startIndex, offsetBy: $0) }
        if let mark = questionMark {
            let query = utf8[utf8.index(after: mark)...]
            if contains(query, "callback=") || contains(query, "jsonp=") { return false }
            if query.count > 0 && bytes <= 100 && (type.hasPrefix("image/gif") || endsWith(utf8[..<mark], ".gif")) { return false }
        }
        let t = type[...].utf8
        if type.hasPrefix("image/") || type.hasPrefix("font/") || contains(t, "css") || contains(t, "javascript")
            || contains(t, "woff") { return true }
        let path = utf8[..<(questionMark ?? utf8.endIndex)]
        for suffix: StaticString in [".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg", ".ico", ".css", ".js", ".woff", ".woff2", ".ttf", ".otf"]
        where endsWith(path, suffix) { return true }
        return false
    }

    /// Whether `text` contains `needle` (lower-case ASCII), ignoring ASCII case.
    private static func contains(_ text: Substring.UTF8View, _ needle: StaticString) -> Bool {
        let n = UnsafeBufferPointer(start: needle.utf8Start, count: needle.utf8CodeUnitCount)
        guard let first = n.first else { return true }
        var i = text.startIndex
        while i != text.endIndex {
            if text[i] | 0x20 == first {
                var j = i, k = 0
                while k < n.count, j != text.endIndex, text[j] | (text[j] >= 0x41 && text[j] <= 0x5A ? 0x20 : 0) == n[k] {
                    j = text.index(after: j); k += 1
                }
                if k == n.count { return true }
            }
            i = text.index(after: i)
        }
        return false
    }

    /// Whether `text` ends with `suffix` (lower-case ASCII), ignoring ASCII case.
    private static func endsWith(_ text: Substring.UTF8View, _ suffix: StaticString) -> Bool {
        let n = UnsafeBufferPointer(start: suffix.utf8Start, count: suffix.utf8CodeUnitCount)
        guard text.count >= n.count else { return false }
        return zip(text.suffix(n.count), n).allSatisfy { a, b in (a >= 0x41 && a <= 0x5A ? a | 0x20 : a) == b }
    }

    static func isText(_ type: String) -> Bool {
        let t = type[...].utf8
        return type.hasPrefix("text/") || contains(t, "json") || contains(t, "javascript") || contains(t, "xml") || contains(t, "svg")
    }
}

extension Array {
    /// A top-N list: keeps the `kept` largest elements by `key`, largest first; equal keys keep
    /// their order of arrival (a stable insertion).
    mutating func keepLargest(_ item: Element, kept: Int, by key: (Element) -> Double) {
        let k = key(item)
        guard count < kept || k > key(self[count - 1]) else { return }
        insert(item, at: firstIndex { key($0) < k } ?? count)
        if count > kept { removeLast() }
    }
}
