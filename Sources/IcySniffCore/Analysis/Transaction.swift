/// What a transaction keeps of its connection (a copy taken when it is emitted).
public struct ConnectionSnapshot: Sendable {
    public var id: UInt64
    public var client: Endpoint
    public var server: Endpoint
    /// How the connection was set up (its transport's handshake, its TLS handshake).
    public var setup: ConnectionSetup
    public var midstream: Bool
    /// "TLS 1.3", … and the ClientHello's server_name, for a transaction carried by TLS. The
    /// version is kept as its number (0: none): as a String it was one more reference that
    /// every copy of the snapshot retained and released.
    public var tlsVersion: String? { TLSInfo.versionName(tlsVersionNumber) }
    var tlsVersionNumber: UInt16 = 0
    public var sni: String?
    /// The transaction came over QUIC.
    public var quic = false
    /// The link-layer address of the device that was its client (0: none known; `DeviceTable.mac`).
    public var deviceMAC: UInt64 = 0
    public var device: MACAddress? { deviceMAC == 0 ? nil : MACAddress(raw: deviceMAC) }

    /// The connection as a transaction of `scheme` sees it: the TLS fields only for one that
    /// TLS carried (a CONNECT before a tunnel's TLS handshake was not).
    init(_ c: Connection, scheme: String) {
        id = c.id
        client = c.movedClient ?? c.client
        server = c.server
        let secure = scheme == "https"
        setup = c.setup(withTLS: secure)
        midstream = c.midstream
        tlsVersionNumber = secure ? c.tls?.version ?? 0 : 0
        sni = secure ? c.tls?.sni : nil
        quic = c.transport == .quic
    }

    /// The endpoints and the id of `c`, for a transaction whose request has just begun: the
    /// snapshot its sinks see is taken when it is emitted (`InOrderPairing.emit`,
    /// `StreamPairing.close`), and nothing reads it before. Taking the whole one twice was ~480
    /// instructions a transaction.
    init(openingOn c: Connection) {
        self.init(archived: c.id, client: c.movedClient ?? c.client, server: c.server)
    }

    /// What a `TransactionArchive` keeps of a connection: the endpoints and the id.
    init(archived id: UInt64, client: Endpoint, server: Endpoint) {
        self.id = id
        self.client = client
        self.server = server
        setup = ConnectionSetup()
        midstream = false
    }

    public var label: String { Connection.label(id) }

    /// The `label` of the connection `id`, appended without making a String.
    static func appendLabel(of id: UInt64, to out: ByteBuffer) {
        out.append(0x43)
        JSONWriter.appendInteger(Int64(clamping: id), to: out)
    }
}

/// Bytes and time of a CONNECT or Upgrade tunnel after its 2xx / 101 reply.
public struct TunnelSummary: Sendable {
    public var bytesFromClient: UInt64 = 0
    public var bytesFromServer: UInt64 = 0
    public var start: Timestamp? = nil
    public var end: Timestamp? = nil
    public var durationMilliseconds: Double? {
        guard let start, let end else { return nil }
        return end.milliseconds(since: start)
    }
}

/// One request paired with its response (either may be missing), with everything the outputs need.
public final class Transaction {
    public internal(set) var connection: ConnectionSnapshot
    /// 1-based position on its connection (Zeek's trans_depth).
    public let depth: Int
    public internal(set) var request: HTTPMessage?
    public internal(set) var response: HTTPMessage?
    /// 1xx replies that came before the final response (100 Continue, 103 Early Hints).
    public internal(set) var interimResponses: [HTTPMessage] = []
    public internal(set) var weirds: [Weird] = []
    public internal(set) var tunnel: TunnelSummary? = nil
    /// The messages of the WebSocket this transaction opened (a 101 to `Upgrade: websocket`, or
    /// an RFC 8441 extended CONNECT answered 2xx).
    public internal(set) var webSocket: WebSocketLog? = nil { didSet { cachedURL = nil } }
    /// Order of emission within a run.
    public internal(set) var sequence: UInt64 = 0
    public internal(set) var timings = TransactionTimings()
    public internal(set) var cache: CacheAssessment? = nil
    /// Which capture it came from (batch and multi-file runs).
    public internal(set) var captureName: String = ""
    /// The URL scheme of the session that carried it ("http"; "https" inside TLS).
    public let scheme: String
    /// HTTP/2 and HTTP/3: the stream it was carried on (nil for HTTP/1.x).
    public internal(set) var streamID: UInt64? = nil
    /// HTTP/2 server push: the request is the server's PUSH_PROMISE, not the client's.
    public internal(set) var pushed = false

    /// `tunnel`: the proxy tunnel open on the connection when the transaction begins (decided
    /// once: the CONNECT that opens one was not carried in it).
    init(connection: ConnectionSnapshot, depth: Int, scheme: String = "http", tunnel: ProxyTunnel? = nil) {
        self.connection = connection
        self.depth = depth
        self.scheme = scheme
        proxyTunnel = tunnel
        if tunnel != nil { weirds.append(.tunnelled) }
    }

    /// The proxy tunnel that carried the transaction (nil: none; the CONNECT that opened one
    /// was not carried in it).
    public let proxyTunnel: ProxyTunnel?

    /// The protocol as ALPN names it (and DevTools shows it): "h2" inside TLS, "h2c" in clear,
    /// else the HTTP/1.x version in lower case ("http/1.1") that the response said (the version
    /// the exchange was spoken in, as DevTools names it: an HTTP/1.0 server answering an
    /// HTTP/1.1 request is "http/1.0"), or the request's when no response was read; "-" when no
    /// message says.
    public var protocolName: String {
        if response?.version == "HTTP/3" || request?.version == "HTTP/3" { return "h3" }
        if streamID != nil && (response?.version == "HTTP/2.0" || request?.version == "HTTP/2.0") {
            return scheme == "https" ? "h2" : "h2c"
        }
        let said = response?.startLineParsed == true ? response : request
        guard let m = said, m.startLineParsed else { return "-" }
        switch m.versionText {
        case "HTTP/1.1": return "http/1.1"
        case "HTTP/1.0": return "http/1.0"
        case "HTTP/0.9": return "http/0.9"
        default: return m.versionText.lowercased()
        }
    }

    /// The port a URL of this scheme leaves out.
    var defaultPort: UInt16 { scheme == "https" ? 443 : 80 }

    /// What this transaction is charged in the connection's `StateBudget` while it waits.
    var budgetCost = 0
    func note(_ weird: Weird) { if !weirds.contains(weird) { weirds.append(weird) } }

    /// Its response was in bytes the capture missed (`response_lost_in_gap`): none will come.
    var lostResponse: Bool { response == nil && weirds.contains(.responseLostInGap) }

    /// Its messages: the request, the final response, the interim responses.
    @inline(__always) private func eachMessage(_ body: (HTTPMessage) -> Void) {
        if let request { body(request) }
        if let response { body(response) }
        for m in interimResponses { body(m) }
    }

    /// Runs the decoding its messages' bodies left to the export thread
    /// (`HTTPMessage.settleDecoding`); answers whether there was any.
    @discardableResult
    func settleDecoding() -> Bool {
        var any = false
        eachMessage { if $0.settleDecoding() { any = true } }
        return any
    }

    /// Compressed body bytes held until `settleDecoding()`.
    var bytesToSettle: Int {
        var n = 0
        eachMessage { n += $0.bytesToSettle }
        return n
    }

    /// Bytes of bodies its messages keep in memory (`--bodies`; 0 otherwise).
    public var keptBodyBytes: Int {
        var n = 0
        eachMessage { n += $0.body.kept?.count ?? 0 }
        return n
    }

    /// Every anomaly of the transaction and its messages, sorted and without repeats.
    public var allWeirds: [Weird] {
        // Most transactions have none: no arrays joined (400 instructions a transaction).
        if weirds.isEmpty && (request?.weirds.isEmpty ?? true) && (response?.weirds.isEmpty ?? true) && interimResponses.isEmpty {
            return []
        }
        var all = weirds
        if let request { all += request.weirds }
        if let response { all += response.weirds }
        for m in interimResponses { all += m.weirds }
        guard all.count > 1 else { return all }   // most transactions: nothing to sort, no allocation
        all.sort()
        var unique = 1
        for i in 1..<all.count where all[i] != all[unique - 1] { all[unique] = all[i]; unique += 1 }
        all.removeSubrange(unique...)
        return all
    }

    /// The time the transaction starts: its first counted timing phase.
    public var startTime: Timestamp { timings.start }

    /// Host header, or the server address.
    public var host: String {
        if let cachedHost { return cachedHost }
        let h = computeHost()
        if request?.headersComplete ?? true { cachedHost = h }
        return h
    }
    private var cachedHost: String? = nil
    /// `url` once known (set by `TransactionArchive.read` to the URL the original computed).
    var cachedURL: String? = nil

    private func computeHost() -> String {
        if let request {
            // HTTP/2's and HTTP/3's :authority stands for Host (RFC 9113 §8.3.1), and wins over one.
            if streamID != nil || pushed, let a = request.headers.first(.authority), !a.isEmpty { return a }
            if let h = request.headers.first(.host), !h.isEmpty { return h }
        }
        // Inside a proxy tunnel the server address is the proxy's: the target names the origin.
        if let (host, port) = proxyTunnel?.hostAndPort {
            guard let port, port != defaultPort else { return host }
            return "\(host):\(port)"
        }
        let s = connection.server
        let addr = s.address.isIPv4 ? s.address.description : "[\(s.address.description)]"
        return s.port == defaultPort ? addr : "\(addr):\(s.port)"
    }

    /// Absolute URL: the request-target when it is absolute already, else http:// + host + target.
    public var url: String {
        if let cachedURL { return cachedURL }
        let u = computeURL()
        if request?.headersComplete ?? true { cachedURL = u }
        return u
    }

    private func computeURL() -> String {
        guard let request else { return "\(scheme)://\(host)/" }
        return request.withTargetUTF8 { url(target: $0, request: request) }
    }

    /// The URL of a request whose target is `t` (its text's UTF-8).
    private func url(target t: UnsafeBufferPointer<UInt8>, request: HTTPMessage) -> String {
        if hasPrefixIgnoringCase(t, "http://") || hasPrefixIgnoringCase(t, "https://") { return URLText.sanitized("", t) }
        // CONNECT's authority-form target; an extended CONNECT (RFC 8441) has a path instead.
        if request.method == "CONNECT" && !request.targetStartsWithSlash { return URLText.sanitized("https://", t) }
        // A WebSocket's URL has its own scheme (RFC 6455 §3), as DevTools shows it.
        var urlScheme = webSocket == nil ? scheme : scheme == "https" ? "wss" : "ws"
        var host = self.host
        // Written once into a buffer on the stack, then into a String of its size: through a
        // byte array it was 2,100 instructions a URL (each transaction's, in every output).
        return urlScheme.withUTF8 { s in host.withUTF8 { h in
            // Asterisk-form (OPTIONS *): the effective URI has an empty path (RFC 9110 §7.1);
            // the target itself stays in the entry's target field.
            let asterisk = t.count == 1 && t[0] == UInt8(ascii: "*")
            let path = asterisk ? UnsafeBufferPointer(rebasing: t[0..<0]) : t
            let slash = !asterisk && t.first != UInt8(ascii: "/")
            // Every byte becomes at most three (%XX).
            let capacity = s.count + 3 + 3 * h.count + (slash ? 1 : 0) + 3 * path.count
            return URLText.string(capacity: capacity) { out in
                var n = URLText.copy(s, to: out, at: 0)
                let separator: StaticString = "://"
                n = URLText.copy(UnsafeBufferPointer(start: separator.utf8Start, count: 3), to: out, at: n)
                n = URLText.writeSanitized(h, to: out, at: n)
                if slash { out[n] = UInt8(ascii: "/"); n += 1 }
                return URLText.writeSanitized(path, to: out, at: n)
            }
        } }
    }
}

extension Transaction {
    /// Where this response redirects the client: the Location of a 301, 302, 303, 307 or 308
    /// (the redirects Fetch follows; 300, 305 and 306 are not followed), resolved against the
    /// request's URL. The one rule for pages and for the report's redirect chains.
    var redirectTarget: String? {
        guard request != nil, let response, [301, 302, 303, 307, 308].contains(response.status),
              let location = response.headers.first(.location), !location.isEmpty else { return nil }
        return URLText.resolve(location, against: url)
    }
}

/// URL text: request-targets made into valid URI text (bytes outside the URI character set
/// percent-encoded, as a browser would before sending them), and Locations resolved.
enum URLText {
    /// A Location (RFC 9110 §10.2.2) as an absolute URL: absolute already, scheme-relative, or
    /// a path on the request's origin.
    static func resolve(_ location: String, against url: String) -> String {
        let lower = location.lowercased()
        if lower.hasPrefix("http://") || lower.hasPrefix("https://") { return location }
        guard let schemeEnd = url.firstRange(of: "://") else { return location }
        let scheme = url[..<schemeEnd.lowerBound]
        if location.hasPrefix("//") { return "\(scheme):\(location)" }
        let afterScheme = url[schemeEnd.upperBound...]
        let origin = url[..<(afterScheme.firstIndex(of: "/") ?? url.endIndex)]
        if location.hasPrefix("/") { return origin + location }
        // Relative to the request's directory.
        let path = url[(afterScheme.firstIndex(of: "/") ?? url.endIndex)...].split(separator: "?", maxSplits: 1).first ?? ""
        let directory = path.lastIndex(of: "/").map { path[...$0] } ?? "/"
        return origin + directory + location
    }

    /// The text `write` puts into a buffer of `capacity` bytes and counts, as a String of exactly
    /// that size: a URL lives as long as its transaction, and storage sized for the worst case
    /// (every byte %-encoded) raised a run's peak memory.
    static func string(capacity: Int, _ write: (UnsafeMutableBufferPointer<UInt8>) -> Int) -> String {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { buffer in
            String(decoding: UnsafeBufferPointer(rebasing: buffer[..<write(buffer)]), as: UTF8.self)
        }
    }

    /// `prefix` (allowed text) and `bytes` sanitized, as one String.
    static func sanitized(_ prefix: StaticString, _ bytes: UnsafeBufferPointer<UInt8>) -> String {
        string(capacity: prefix.utf8CodeUnitCount + 3 * bytes.count) { out in
            let n = copy(UnsafeBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount), to: out, at: 0)
            return writeSanitized(bytes, to: out, at: n)
        }
    }

    /// `bytes` into `out` from `at` (which has room); answers the end.
    @inline(__always)
    static func copy(_ bytes: UnsafeBufferPointer<UInt8>, to out: UnsafeMutableBufferPointer<UInt8>, at: Int) -> Int {
        if let b = bytes.baseAddress, let o = out.baseAddress { ByteBuffer.copy(UnsafeRawPointer(b), bytes.count, to: o + at) }
        return at + bytes.count
    }

    /// `bytes` sanitized into `out` from `at` (which has room for three bytes each); answers the
    /// end. Runs of allowed bytes are copied whole (a URL is usually one run).
    static func writeSanitized(_ bytes: UnsafeBufferPointer<UInt8>, to out: UnsafeMutableBufferPointer<UInt8>, at: Int) -> Int {
        let hex: StaticString = "0123456789ABCDEF"
        var n = at
        var runStart = 0
        for i in bytes.indices where !allowed(bytes[i]) {
            n = copy(UnsafeBufferPointer(rebasing: bytes[runStart..<i]), to: out, at: n)
            let b = bytes[i]
            out[n] = 0x25; out[n + 1] = hex.utf8Start[Int(b >> 4)]; out[n + 2] = hex.utf8Start[Int(b & 15)]
            n += 3
            runStart = i + 1
        }
        return copy(UnsafeBufferPointer(rebasing: bytes[runStart...]), to: out, at: n)
    }

    /// The bytes a URL keeps as they are: letters, digits, `-._~` and the delimiters
    /// `:/?#[]@!$&'()*+,;=`, and `%` (escapes already made). A bit per byte below 128, as two
    /// masks (bits 0-63, 64-127): a switch cost about 15 instructions a byte of every URL.
    @inline(__always) static func allowed(_ b: UInt8) -> Bool {
        let mask: UInt64 = b < 64 ? 0xAFFF_FFFA_0000_0000 : b < 128 ? 0x47FF_FFFE_AFFF_FFFF : 0
        return (mask >> UInt64(b & 63)) & 1 == 1
    }
}
