/// Builds the report of one capture as its transactions complete (each with its cache verdict:
/// put it behind a `CacheJudgingSink`). It keeps aggregates, bounded example lists and top-N
/// lists, never the transactions: memory does not grow with the capture.
public final class ReportCollector: TransactionSink {
    private var r = Report()
    /// The latest transactions' lines by sequence, for those found contradicted after they
    /// were emitted (a forged response is answered by the real one within seconds).
    private var recentLines = BoundedLRU<UInt64, Report.Line>(capacity: 4096)
    /// Requests per open connection; folded into the per-host figures when it finishes.
    private var open: [UInt64: (host: String, count: Int)] = [:]
    private var http2Summary = Report.HTTP2Summary()
    /// HTTP/1.x connections per host: when each was open, and its requests (at most
    /// `intervalsKept` per host, hosts least recently used out).
    private var http1Intervals = BoundedLRU<String, [(start: Timestamp, end: Timestamp, requests: Int)]>(capacity: 10_000)
    private let intervalsKept = 4096
    private var byHost: [String: Report.HostConnections] = [:]
    private var connectionCount = 0
    /// The last 200 of each URL per client (validator and length), for "re-downloaded
    /// unchanged": one device's download does not make another's a re-download (the clients of
    /// the cache model, docs/CACHE.md). Bounded, least recently used out.
    private var lastOK = BoundedLRU<TextKey, (etag: String?, lastModified: String?)>(capacity: 50_000)
    private var errors: [String: [Int: Int]] = [:]
    /// The slowest waits so far, at most `slowestKept`, slowest first.
    private var slowest: [(line: Report.Line, wait: Double)] = []
    private let slowestKept = 10
    /// TLS over TCP, and QUIC (whose handshake is TLS 1.3): the same figures, apart.
    private var tlsHandshakes = HandshakeAggregate()
    private var estimated = EstimatedAggregate()
    private var quicHandshakes = HandshakeAggregate()

    private let time: TimeBreakdownCollector
    /// Secrets (query parameters) are taken out of every URL the report keeps, when it keeps it.
    private let options: ExportOptions

    public init(options: ExportOptions = ExportOptions()) {
        self.options = options
        time = TimeBreakdownCollector(options: options)
    }

    /// The overview's counts (`OverviewAggregate`).
    private var overview = OverviewAggregate()

    /// Per device (client address), the first `Report.hostsCounted`; later ones under one key.
    /// A device: its link-layer address where known (its IPv4 and IPv6 traffic together), else
    /// its client address.
    private enum DeviceKey: Hashable { case mac(UInt64), address(IPAddress), other }
    private var byDevice: [DeviceKey: (device: Report.Device, agents: [String: Int], ja4s: [String: Int])] = [:]

    /// Counts into the device of `client` (or "other devices" past the first `Report.hostsCounted`).
    private func countDevice(_ client: IPAddress, mac: UInt64, _ body: (inout (device: Report.Device, agents: [String: Int], ja4s: [String: Int])) -> Void) {
        let key = Report.counted(mac != 0 ? .mac(mac) : .address(client), in: byDevice, limit: Report.hostsCounted, other: DeviceKey.other)
        var entry = byDevice.removeValue(forKey: key)     // modified, then put back: not copied
            ?? {
                switch key {
                case .other: return (Report.Device(client: "other devices"), [:], [:])
                case .address(let a): return (Report.Device(client: a.description), [:], [:])
                case .mac(let m):
                    // Its link-layer address and the address it was first seen with, until it is
                    // named (`Report.nameDevices`).
                    let text = MACAddress(raw: m).description
                    return (Report.Device(client: "\(text) (\(client.description))", mac: text), [:], [:])
                }
            }()
        body(&entry)
        byDevice[key] = entry
    }

    private func countDevice(_ t: Transaction) {
        countDevice(t.connection.client.address, mac: t.connection.deviceMAC) { entry in
            if t.request != nil { entry.device.requests += 1 }
            if t.request != nil, (t.response?.status ?? 0) >= 400 || t.response == nil { entry.device.failed += 1 }
            if t.cache?.avoidable ?? false { entry.device.avoidable += 1; entry.device.avoidableBytes += t.response?.wireBytes ?? 0 }
            if let agent = t.request?.headers.first(.userAgent) {
                let key = Report.cut(agent)
                entry.agents[Report.counted(key, in: entry.agents, limit: Report.agentsPerDevice, other: "other"), default: 0] += 1
            }
        }
    }

    public func consume(_ t: Transaction) {
        let host = Report.hostKey(t.host)
        overview.add(t, host: host)
        countDevice(t)
        let line = Report.Line(time: t.startTime, method: t.request?.method ?? "", url: EntryEncoder.redactURL(t.url, options: options, readable: true),
                               host: host,
                               status: t.response?.status ?? 0,
                               bytes: t.response?.body.bytes ?? 0, note: "")
        time.add(t, line)
        if t.allWeirds.contains(.injectionSuspected) { r.injectionSuspected.append(line) }
        else {
            // Kept in case a later copy contradicts it: its URL cut to 255 bytes, as host names
            // are (4,096 lines of 2 KiB URLs were 9 MiB).
            var kept = line
            kept.url = Report.cut(line.url)
            _ = recentLines.set(t.sequence, kept)
        }
        if let req = t.request {
            r.traffic.requests += 1
            r.traffic.wireBytes += req.wireBytes
            let entry = open[t.connection.id] ?? (host, 0)
            open[t.connection.id] = (entry.host, entry.count + 1)
        }
        guard let resp = t.response else { return }
        r.traffic.responses += 1
        r.traffic.wireBytes += resp.wireBytes
        r.traffic.decodedBytes += resp.body.decodedBytes
        let type = (resp.headers.first(.contentType) ?? "").lowercased()
        let cache = t.cache
        if let cache {
            if cache.avoidable {
                var l = line
                // What was wasted is what crossed the network: the listed bytes add up to the
                // total (the body's bytes were listed against the wire's total: 90 B and 0 B of 630).
                l.bytes = resp.wireBytes
                l.note = cache.notModified ? "revalidated while fresh" : "re-fetched while fresh"
                r.opportunities.avoidable.append(l)
                r.opportunities.avoidableBytes += resp.wireBytes
            }
            if cache.notModified { r.opportunities.notModified.append(line) }
            if cache.storable, cache.lifetimeSource == .heuristic, (cache.freshFor ?? 0) > 0, !cache.mustRevalidate {
                var l = line
                l.note = "fresh for \(CacheAssessment.shortDuration(cache.freshFor ?? 0)) by heuristic only"
                r.opportunities.heuristicOnly.append(l)
            }
            if resp.status == 200, Report.isStaticAsset(type: type, url: t.url, bytes: resp.body.decodedBytes) {
                if (cache.freshnessLifetime ?? 0) <= 0 && !cache.noStore { r.opportunities.staticWithoutLifetime.append(line) }
                if !resp.headers.contains(.etag) && !resp.headers.contains(.lastModified) { r.opportunities.staticWithoutValidator.append(line) }
            }
        }
        // A 200 for a URL whose previous 200 had the same validator: unchanged.
        if resp.status == 200, t.request?.method == "GET" {
            let key = CacheTracker.client(of: t) + "\u{0}" + t.url
            let etag = resp.headers.first(.etag), lm = resp.headers.first(.lastModified)
            if let previous = lastOK.value(for: TextKey(key)) {
                let sameValidator = (etag != nil && etag == previous.etag) || (etag == nil && lm != nil && lm == previous.lastModified)
                if sameValidator && !(cache?.avoidable ?? false) {
                    var l = line
                    l.note = etag != nil ? "same ETag \(etag!)" : "same Last-Modified"
                    r.opportunities.unchangedRedownloads.append(l)
                }
            }
            lastOK.set(TextKey(key), (etag, lm))
        }
        // Only where the client offered a coding the server could have used: a client that
        // offers none gets its text as it asked.
        let offered = (t.request?.headers.first("accept-encoding") ?? "").lowercased()
        let couldCompress = ["gzip", "br", "zstd", "deflate"].contains { offered.contains($0) }
        if Report.isText(type), couldCompress, resp.headers.first(.contentEncoding) == nil, resp.body.bytes >= 1024 {
            r.opportunities.uncompressedText.append(line)
            r.opportunities.uncompressedTextBytes += resp.body.bytes
        }
        if resp.status >= 400 {
            let host = Report.hostKey(t.host)
            errors[Report.counted(host, in: errors, limit: Report.hostsCounted, other: Report.otherHosts), default: [:]][resp.status, default: 0] += 1
        }
        slowest.keepLargest((line, t.timings.wait), kept: slowestKept) { $0.wait }
    }

    public func connectionFinished(_ connection: Connection) {
        overview.add(connection)
        let hidden = connection.quic.map { !$0.decrypted } ?? connection.tls.map { !$0.decrypted } ?? false
        countDevice(connection.client.address, mac: connection.deviceMAC) { entry in
            entry.device.connections += 1
            if hidden { entry.device.encryptedConnections += 1 }
            entry.device.wireBytes += connection.bytesFromClient + connection.bytesFromServer
            if let ja4 = connection.tls?.ja4 {
                entry.ja4s[Report.counted(ja4, in: entry.ja4s, limit: Report.agentsPerDevice, other: "other"), default: 0] += 1
            }
        }
        // Transactions whose bytes were contradicted after they were emitted.
        for sequence in connection.contradictedTransactions {
            if let line = recentLines.value(for: sequence) {
                r.injectionSuspected.append(line)
                _ = recentLines.update(sequence) { $0 = nil }
            }
        }
        if let tls = connection.tls, let inferred = tls.inferred {
            estimated.add(inferred, host: tls.sni ?? connection.server.address.description)
        }
        if let tls = connection.tls {
            if let quic = connection.quic {
                quicHandshakes.add(tls, connection, version: QUICVersion.name(quic.version), decrypted: quic.decrypted,
                                   handshakeMilliseconds: quic.handshakeMilliseconds, bytes: (quic.traffic.bytesFromClient, quic.traffic.bytesFromServer),
                                   end: quic.end)
            } else {
                tlsHandshakes.add(tls, connection, version: tls.versionName ?? "unknown", decrypted: tls.decrypted,
                                  handshakeMilliseconds: tls.handshakeMilliseconds,
                                  bytes: (connection.bytesFromClient, connection.bytesFromServer))
            }
        }
        if let h2 = connection.http2, h2.streams > 0 {
            http2Summary.connections += 1
            http2Summary.streams += h2.streams
            http2Summary.maxStreamsPerConnection = max(http2Summary.maxStreamsPerConnection, h2.streams)
            http2Summary.peakConcurrentStreams = max(http2Summary.peakConcurrentStreams, h2.peakConcurrentStreams)
            http2Summary.pushed += h2.pushed
            http2Summary.reset += h2.reset
        }
        guard let c = open.removeValue(forKey: connection.id) else { return }
        // HTTP/1.x only: HTTP/2 and HTTP/3 (QUIC) connections multiplex already.
        if connection.http2 == nil && connection.transport == .tcp {
            let start = connection.began
            let end = connection.times.finished ?? connection.times.last
            let kept = intervalsKept
            http1Intervals.update(c.host) { entry in
                var list = entry ?? []
                if list.count < kept { list.append((start, end, c.count)) }
                entry = list
            }
        }
        fold(c)
    }

    /// HTTP/1.x hosts with connections open at the same time, from the kept intervals.
    private func parallelHosts() -> [Report.ParallelHost] {
        var out: [Report.ParallelHost] = []
        for host in http1Intervals.keys {
            guard let list = http1Intervals.peek(host), list.count >= 2 else { continue }
            // Sweep: +1 at each start, -1 at each end (ends first at equal times: back to back
            // is not parallel).
            let events = list.flatMap { [($0.start, 1), ($0.end, -1)] }.sorted { ($0.0, $0.1) < ($1.0, $1.1) }
            var open = 0, peak = 0
            for (_, delta) in events { open += delta; peak = max(peak, open) }
            if peak >= 2 {
                out.append(.init(host: host, connections: list.count, peakParallel: peak, requests: list.reduce(0) { $0 + $1.requests }))
            }
        }
        return Array(out.sorted { ($0.peakParallel, $0.connections, $0.host) > ($1.peakParallel, $1.connections, $1.host) }.prefix(Report.hostsKept))
    }

    private func fold(_ c: (host: String, count: Int)) {
        connectionCount += 1
        if c.count > 1 { r.reusedConnections += 1 }
        r.maxRequestsPerConnection = max(r.maxRequestsPerConnection, c.count)
        let host = Report.counted(c.host, in: byHost, limit: Report.hostsCounted, other: Report.otherHosts)
        var h = byHost[host] ?? Report.HostConnections(host: host, connections: 0, requests: 0, singleRequestConnections: 0)
        h.connections += 1
        h.requests += c.count
        if c.count == 1 { h.singleRequestConnections += 1 }
        byHost[host] = h
    }

    /// The report so far (connections still open are counted as they stand).
    public func report(capture: String) -> Report {
        for (_, c) in open.sorted(by: { $0.key < $1.key }) { fold(c) }
        open.removeAll()
        var out = r
        out.capture = capture
        out.overview = overview.result()
        out.connections = connectionCount
        out.slowestByWait = slowest
        let hosts = byHost.values.sorted { ($0.connections, $0.host) > ($1.connections, $1.host) }
        // Many one-request connections to one host: keep-alive would have saved a handshake each.
        out.shortConnectionHosts = hosts.filter { $0.connections >= 3 && $0.singleRequestConnections * 2 >= $0.connections }
        out.hosts = Array(hosts.prefix(Report.hostsKept))
        out.devices = byDevice.values.map { entry in
            var d = entry.device
            d.userAgents = entry.agents.map { ($0.key, $0.value) }.sorted { ($0.requests, $1.agent) > ($1.requests, $0.agent) }
            d.fingerprints = entry.ja4s.map { ($0.key, $0.value) }.sorted { ($0.connections, $1.ja4) > ($1.connections, $0.ja4) }
            return d
        }.sorted { ($0.wireBytes, $1.client) > ($1.wireBytes, $0.client) }
        out.tls = tlsHandshakes.summary()
        out.estimated = estimated.summary()
        out.quic = quicHandshakes.summary()
        out.http2 = http2Summary.connections > 0 ? http2Summary : nil
        out.parallelHTTP1Hosts = parallelHosts()
        out.time = time.breakdown()
        out.errorsByHost = errors.flatMap { host, statuses in statuses.map { (host, $0.key, $0.value) } }
            .sorted { ($0.count, $0.host, $1.status) > ($1.count, $1.host, $0.status) }
        return out
    }
}

/// `Report.Overview`'s counts: devices (client addresses) and hosts, at most 100,000 each (then
/// counted no more), transactions per protocol, the capture's span from its connections, and the
/// TLS and QUIC connections not decrypted.
struct OverviewAggregate {
    static let kept = 100_000
    private var devices = Set<IPAddress>()
    private var hostNames = Set<TextKey>()
    private var protocols: [String: Int] = [:]
    private var span: (start: Timestamp, end: Timestamp)? = nil
    private var encrypted = (tls: 0, quic: 0)

    mutating func add(_ t: Transaction, host: String) {
        if devices.count < Self.kept { devices.insert(t.connection.client.address) }
        if hostNames.count < Self.kept { hostNames.insert(TextKey(host)) }
        protocols[t.protocolName, default: 0] += 1
    }

    mutating func add(_ connection: Connection) {
        if devices.count < Self.kept { devices.insert(connection.client.address) }
        let first = connection.began, last = connection.times.last
        span = span.map { (min($0.start, first), max($0.end, last)) } ?? (first, last)
        if let q = connection.quic { if !q.decrypted { encrypted.quic += 1 } }
        else if let tls = connection.tls, !tls.decrypted { encrypted.tls += 1 }
    }

    func result() -> Report.Overview {
        var o = Report.Overview()
        o.start = span?.start
        o.end = span?.end
        o.devices = devices.count
        o.hosts = hostNames.count
        o.protocols = protocols.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.map { ($0.key, $0.value) }
        o.encryptedTLS = encrypted.tls
        o.encryptedQUIC = encrypted.quic
        return o
    }
}

/// `Report.EstimatedSummary`'s counts: per host at most `Report.hostsCounted` (then "other
/// hosts"), each with at most 1,000 times to first byte (the first ones).
struct EstimatedAggregate {
    private var connections = 0
    private var exchanges = 0
    private var hosts: [String: Report.EstimatedSummary.Host] = [:]
    private var ttfbs: [String: [Double]] = [:]
    static let ttfbsKept = 1000

    mutating func add(_ inferred: InferredTraffic, host name: String) {
        connections += 1
        let key = Report.counted(Report.hostKey(name), in: hosts, limit: Report.hostsCounted, other: Report.otherHosts)
        var h = hosts[key] ?? .init(host: key, connections: 0, singleExchange: 0, exchanges: 0, atLeast: false, responseBytes: 0)
        h.connections += 1
        let count = inferred.exchangeCount ?? 0
        exchanges += count
        h.exchanges += count
        if count == 1 { h.singleExchange += 1 }
        if inferred.exchangeCount != nil { h.counted = true; if !inferred.exact { h.atLeast = true } }
        var times = ttfbs[key] ?? []
        for x in inferred.exchanges {
            h.responseBytes += UInt64(x.responseBytes ?? 0)
            if times.count < Self.ttfbsKept, let ttfb = x.firstByteMilliseconds { times.append(ttfb) }
        }
        ttfbs[key] = times
        hosts[key] = h
    }

    func summary() -> Report.EstimatedSummary? {
        guard connections > 0 else { return nil }
        var s = Report.EstimatedSummary()
        s.connections = connections
        s.exchanges = exchanges
        s.hosts = hosts.values.map { h in
            var h = h
            let sorted = (ttfbs[h.host] ?? []).sorted()
            if !sorted.isEmpty {
                h.ttfbP50 = Report.percentile(sorted, 0.5)
                h.ttfbP90 = Report.percentile(sorted, 0.9)
            }
            return h
        }.sorted { ($0.exchanges, $0.connections, $1.host) > ($1.exchanges, $1.connections, $0.host) }
        s.hosts = Array(s.hosts.prefix(Report.hostsKept))
        return s
    }
}

/// The figures of the report's TLS and QUIC sections: connections by version, resumption,
/// handshake times (all of the first `handshakesKept`, then a deterministic reservoir sample),
/// bytes, and the hosts by SNI (bounded, least recently used out).
struct HandshakeAggregate {
    private var connections = 0
    private var decrypted = 0
    private var resumed = 0
    private var versions: [String: Int] = [:]
    private var handshakes: [Double] = []
    private var handshakesSeen = 0
    private let handshakesKept = 65_536
    /// A fixed-seed linear congruential generator: the sample, and so the report, is the same
    /// on every run.
    private var sampler: UInt64 = 0x1C5A1F
    private var bytes: (fromClient: UInt64, fromServer: UInt64) = (0, 0)
    private var ends: [String: Int] = [:]
    private var hosts = BoundedLRU<String, (connections: Int, resumed: Int, sequential: Int, lastEnd: Timestamp)>(capacity: 50_000)

    mutating func add(_ tls: TLSInfo, _ connection: Connection, version: String, decrypted isDecrypted: Bool,
                      handshakeMilliseconds: Double?, bytes b: (UInt64, UInt64), end: String? = nil) {
        connections += 1
        if let end { ends[end, default: 0] += 1 }
        if isDecrypted { decrypted += 1 }
        if tls.resumed { resumed += 1 }
        versions[version, default: 0] += 1
        bytes.fromClient += b.0
        bytes.fromServer += b.1
        if let ms = handshakeMilliseconds {
            handshakesSeen += 1
            if handshakes.count < handshakesKept {
                handshakes.append(ms)
            } else {
                sampler = sampler &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                let k = Int((sampler >> 33) % UInt64(handshakesSeen))
                if k < handshakesKept { handshakes[k] = ms }
            }
        }
        let sni = Report.hostKey(tls.sni ?? connection.server.description)
        let start = connection.began
        let end = connection.times.finished ?? connection.times.last
        let wasResumed = tls.resumed
        hosts.update(sni) { entry in
            var e = entry ?? (0, 0, 0, .zero)
            if e.connections > 0 && start >= e.lastEnd { e.sequential += 1 }
            e.connections += 1
            if wasResumed { e.resumed += 1 }
            e.lastEnd = max(e.lastEnd, end)
            entry = e
        }
    }

    func summary() -> Report.TLSSummary? {
        guard connections > 0 else { return nil }
        var s = Report.TLSSummary()
        s.connections = connections
        s.decrypted = decrypted
        s.resumed = resumed
        s.bytesFromClient = bytes.fromClient
        s.bytesFromServer = bytes.fromServer
        s.versions = versions.sorted { ($0.value, $0.key) > ($1.value, $1.key) }.map { ($0.key, $0.value) }
        s.ends = ends.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.map { ($0.key, $0.value) }
        let sorted = handshakes.sorted()
        if !sorted.isEmpty {
            s.handshakeP50 = Report.percentile(sorted, 0.5)
            s.handshakeP90 = Report.percentile(sorted, 0.9)
            s.handshakeMax = sorted.last
        }
        var list: [Report.TLSSummary.Host] = []
        for key in hosts.keys {
            if let e = hosts.peek(key) {
                list.append(.init(sni: key, connections: e.connections, resumed: e.resumed, sequential: e.sequential))
            }
        }
        s.hosts = Array(list.sorted { ($0.connections, $0.sni) > ($1.connections, $1.sni) }.prefix(Report.hostsKept))
        return s
    }
}
