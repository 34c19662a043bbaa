extension Report {
    /// Where the time goes (`icy-sniff report`): per-host phases, the slowest requests with the
    /// server's share of their wait apart from the network's, the largest responses, redirect
    /// chains and what 304 revalidations cost. All durations in milliseconds.
    public struct TimeBreakdown: Sendable {
        /// Median and 90th percentile of a phase.
        public struct Percentiles: Sendable, Equatable {
            public var p50: Double
            public var p90: Double
        }
        public struct Host: Sendable {
            public var host: String
            public var requests: Int
            /// The connections' round trip (TCP handshake, SYN to its ACK), median.
            public var roundTrip: Double?
            public var connect: Percentiles?
            /// Time to first byte: HAR `wait`, request sent to the first response byte.
            public var ttfb: Percentiles?
            /// TTFB minus the connection's round trip: what the server itself took.
            public var server: Percentiles?
            public var receive: Percentiles?
        }
        public struct Slow: Sendable {
            public var line: Line
            public var ttfb: Double
            public var roundTrip: Double?
            public var server: Double? { roundTrip.map { max(0, ttfb - $0) } }
        }
        /// Requests one client made following redirects: each step's line (its status says what
        /// came next); `complete` when the last step was answered by something else than a
        /// redirect, else its Location was not seen (another host, HTTPS without keys, not
        /// captured).
        public struct Chain: Sendable {
            public var steps: [Line]
            public var finalURL: String
            public var complete: Bool
            public var milliseconds: Double
        }
        /// A page as the HAR groups them (`PageGrouper`): a browser's document and what it
        /// loads, or one client's requests outside any document page.
        public struct Page: Sendable {
            /// The document's URL, or the earliest URL of a client's other requests.
            public var title: String
            /// Whether a browser's document started it (else: a client's requests outside any).
            public var document: Bool
            public var requests: Int
            /// Bytes on the wire of its requests and responses (heads and bodies).
            public var wireBytes: UInt64
            /// From its first request to its last response byte.
            public var first: Timestamp
            public var last: Timestamp
            public var spanMilliseconds: Double { last.milliseconds(since: first) }
        }
        public var first: Timestamp? = nil
        public var last: Timestamp? = nil
        public var spanMilliseconds: Double? {
            guard let first, let last else { return nil }
            return last.milliseconds(since: first)
        }
        public var hosts: [Host] = []
        public var slowest: [Slow] = []
        public var largest: [Line] = []
        public var pageCount = 0
        /// The pages with the longest spans, longest first.
        public var longestPages: [Page] = []
        public var redirectChainCount = 0
        public var redirectChains: [Chain] = []
        public var revalidations = 0
        public var revalidationMilliseconds = 0.0
        public var revalidationWireBytes: UInt64 = 0
    }
}

/// Collects `Report.TimeBreakdown` as transactions complete: bounded samples per host (the
/// first `samplesKept` of each phase), top-N lists and open redirect chains (least recently
/// used out), never the transactions.
final class TimeBreakdownCollector {
    /// Secret query parameters are taken out of the URLs kept (page titles, chains' ends).
    private let options: ExportOptions
    init(options: ExportOptions = ExportOptions()) { self.options = options }
    private struct Samples {
        var requests = 0
        var roundTrip: [Double] = []
        var connect: [Double] = []
        var ttfb: [Double] = []
        var server: [Double] = []
        var receive: [Double] = []
    }
    private var hosts = BoundedLRU<String, Samples>(capacity: 10_000)
    private let samplesKept = 4096
    /// Samples held over all hosts together (8 bytes each): at most 2^20, so 10,000 busy hosts
    /// cannot hold 1.6 GB; a host pushed out of the table gives its samples back.
    private var samplesHeld = 0
    private let samplesBudget = 1 << 20
    private var b = Report.TimeBreakdown()
    /// Entries of the top-N lists (slowest, largest).
    private let kept = 10
    /// Redirects whose next request has not come yet, by client and target URL (a redirect
    /// is followed within seconds: 2,048 at once is many, and each holds a few lines of URLs).
    private var pending = BoundedLRU<TextKey, (steps: [Report.Line], start: Timestamp, target: String)>(capacity: 2048)
    private static let maxChainSteps = 20
    /// The HAR's grouping, and each page's figures by its index. Both grow by one small record per
    /// page (a browser's navigations, or a client), not per transaction.
    private var grouper = PageGrouper()
    private var pages: [Report.TimeBreakdown.Page] = []

    func add(_ t: Transaction, _ line: Report.Line) {
        let timings = t.timings
        let start = timings.start
        let end = start.adding(seconds: max(0, timings.total) / 1000)
        if b.first.map({ start < $0 }) ?? true { b.first = start }
        if b.last.map({ end > $0 }) ?? true { b.last = end }
        let roundTrip = Self.roundTrip(t.connection)
        follow(t, line, end: end)
        addToPage(t, start: start, end: end)
        guard let response = t.response else { return }
        let samples = samplesKept
        let server = roundTrip.map { max(0, timings.wait - $0) }
        var held = samplesHeld
        let budget = samplesBudget
        let evicted = hosts.update(Report.hostKey(t.host)) { entry in
            var s = entry ?? Samples()
            s.requests += 1
            func add(_ v: Double?, to list: inout [Double]) {
                if let v, v >= 0, list.count < samples, held < budget { list.append(v); held += 1 }
            }
            add(roundTrip, to: &s.roundTrip)
            add(timings.connect >= 0 ? timings.connect : nil, to: &s.connect)
            add(timings.wait, to: &s.ttfb)
            add(server, to: &s.server)
            add(timings.receive, to: &s.receive)
            entry = s
        }
        if let s = evicted?.value { held -= s.roundTrip.count + s.connect.count + s.ttfb.count + s.server.count + s.receive.count }
        samplesHeld = held
        let slow = Report.TimeBreakdown.Slow(line: line, ttfb: timings.wait, roundTrip: roundTrip)
        b.slowest.keepLargest(slow, kept: kept) { $0.server ?? $0.ttfb }
        var big = line
        big.bytes = response.body.decodedBytes
        big.note = (response.headers.first(.contentType) ?? "").split(separator: ";").first.map(String.init) ?? ""
        if big.bytes > 0 { b.largest.keepLargest(big, kept: kept) { Double($0.bytes) } }
        if response.status == 304 {
            b.revalidations += 1
            b.revalidationMilliseconds += max(0, timings.total)
            b.revalidationWireBytes += UInt64(max(0, t.request?.headersSize ?? 0)) + UInt64(max(0, response.headersSize))
        }
    }

    private func addToPage(_ t: Transaction, start: Timestamp, end: Timestamp) {
        let index = grouper.page(of: t)
        let wire = (t.request?.wireBytes ?? 0) + (t.response?.wireBytes ?? 0)
        if index == pages.count {
            let page = grouper.pages[index]
            pages.append(.init(title: EntryEncoder.redactURL(page.title, options: options, readable: true), document: page.comment == nil, requests: 0,
                               wireBytes: 0, first: start, last: end))
        }
        pages[index].title = EntryEncoder.redactURL(grouper.pages[index].title, options: options, readable: true)
        pages[index].requests += t.request != nil ? 1 : 0
        pages[index].wireBytes += wire
        if start < pages[index].first { pages[index].first = start }
        if end > pages[index].last { pages[index].last = end }
    }

    /// The connection's transport round trip as the capture saw it (TCP: its handshake; QUIC has
    /// none apart from TLS: nil); never negative.
    static func roundTrip(_ c: ConnectionSnapshot) -> Double? { c.setup.roundTripMilliseconds }

    /// Redirect chains: a request for the Location of an earlier redirect to the same client
    /// continues that redirect's chain.
    private func follow(_ t: Transaction, _ line: Report.Line, end: Timestamp) {
        guard t.request != nil else { return }
        let client = t.connection.client.address.description
        let url = t.url
        var chain: (steps: [Report.Line], start: Timestamp, target: String)? = nil
        pending.update(TextKey("\(client) \(url)")) { entry in chain = entry; entry = nil }
        if let target = t.redirectTarget {
            var steps = chain?.steps ?? []
            guard steps.count < Self.maxChainSteps else { return finish(chain!, finalURL: url, complete: false, end: end) }
            steps.append(line)
            pending.set(TextKey("\(client) \(target)"), (steps, chain?.start ?? t.timings.start, target))
            return
        }
        if let c = chain { finish(c, finalURL: url, complete: true, end: end, last: line) }
    }

    private func finish(_ chain: (steps: [Report.Line], start: Timestamp, target: String), finalURL: String, complete: Bool, end: Timestamp,
                        last: Report.Line? = nil) {
        b.redirectChainCount += 1
        guard b.redirectChains.count < Report.examplesKept else { return }
        b.redirectChains.append(.init(steps: chain.steps + (last.map { [$0] } ?? []), finalURL: EntryEncoder.redactURL(finalURL, options: options, readable: true),
                                      complete: complete,
                                      milliseconds: end.milliseconds(since: chain.start)))
    }

    func breakdown() -> Report.TimeBreakdown {
        var out = b
        // Redirects whose next request never came: their Location was not seen.
        for key in pending.keys {
            guard let c = pending.peek(key) else { continue }
            let target = c.target
            out.redirectChainCount += 1
            if out.redirectChains.count < Report.examplesKept, let last = c.steps.last {
                out.redirectChains.append(.init(steps: c.steps, finalURL: EntryEncoder.redactURL(target, options: options, readable: true), complete: false,
                                                 milliseconds: last.time.milliseconds(since: c.start)))
            }
        }
        func percentiles(_ values: [Double]) -> Report.TimeBreakdown.Percentiles? {
            guard !values.isEmpty else { return nil }
            let sorted = values.sorted()
            func at(_ p: Double) -> Double { sorted[min(sorted.count - 1, Int((p * Double(sorted.count - 1)).rounded()))] }
            return .init(p50: at(0.5), p90: at(0.9))
        }
        var list: [Report.TimeBreakdown.Host] = []
        for host in hosts.keys {
            guard let s = hosts.peek(host) else { continue }
            list.append(.init(host: host, requests: s.requests, roundTrip: percentiles(s.roundTrip)?.p50, connect: percentiles(s.connect),
                              ttfb: percentiles(s.ttfb), server: percentiles(s.server), receive: percentiles(s.receive)))
        }
        out.pageCount = pages.count
        for page in pages { out.longestPages.keepLargest(page, kept: kept) { $0.spanMilliseconds } }
        out.hosts = Array(list.sorted { ($0.requests, $1.host) > ($1.requests, $0.host) }.prefix(Report.hostsKept))
        return out
    }
}
