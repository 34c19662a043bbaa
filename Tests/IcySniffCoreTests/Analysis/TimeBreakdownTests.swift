import Testing
@testable import IcySniffCore

/// Where the time goes (`icy-sniff report`, issue 19): the server's share of a wait apart from
/// the network's, per-host percentiles, the largest responses, redirect chains and what 304s
/// cost.
@Suite struct TimeBreakdownTests {
    func report(_ path: String) throws -> Report {
        let collector = ReportCollector()
        let pipeline = Pipeline(sink: collector)
        _ = pipeline.run(try PcapSource.open(path: path))
        pipeline.finish()
        return collector.report(capture: path)
    }

    @Test func waitsOnALongPathAreTheNetworkNotTheServer() throws {
        // Wikipedia over a 60 ms path: every wait is about one round trip.
        let t = try report(Paths.captures.appendingPathComponent("wikipedia.pcap").path).time
        let upload = try #require(t.hosts.first)
        #expect(upload.host == "upload.wikimedia.org" && upload.requests == 12)
        let rtt = try #require(upload.roundTrip)
        #expect((55...65).contains(rtt), "round trip \(rtt) ms")
        let ttfb = try #require(upload.ttfb), server = try #require(upload.server)
        #expect(ttfb.p50 > 55 && server.p50 < 5, "TTFB \(ttfb.p50) ms, server \(server.p50) ms")
        #expect(server.p50 <= server.p90 && ttfb.p50 <= ttfb.p90)
        // Slowest first by server time; where the handshake was not seen, the round trip is
        // unknown and so is the server's share.
        let keys = t.slowest.map { $0.server ?? $0.ttfb }
        #expect(keys == keys.sorted(by: >) && t.slowest.count == 10)
        for s in t.slowest { if let rtt = s.roundTrip { #expect(abs(max(0, s.ttfb - rtt) - s.server!) < 0.001, "never below 0") } else { #expect(s.server == nil) } }
        #expect(t.revalidations == 15 && t.revalidationMilliseconds > 15 * 55)
        #expect(t.largest.isEmpty, "304s have no body")
        #expect(try #require(t.spanMilliseconds) > 300)
    }

    @Test func pagesAreGroupedAsTheHARGroupsThem() throws {
        // A browser reloading Wikipedia: one page, its document a 304, all 15 requests in it,
        // spanning the whole capture.
        let wiki = try report(Paths.captures.appendingPathComponent("wikipedia.pcap").path)
        let t = wiki.time
        #expect(t.pageCount == 1)
        let page = try #require(t.longestPages.first)
        #expect(page.title == "http://www.wikipedia.org/" && page.document && page.requests == 15)
        #expect(page.wireBytes == wiki.traffic.wireBytes, "every request and response is on the page")
        #expect(abs(page.spanMilliseconds - (t.spanMilliseconds ?? 0)) < 0.001)
        // curl fetching a page and its parts: no browser document, one page of the client's
        // other requests, titled with its earliest URL.
        let curl = try report(Paths.captures.appendingPathComponent("nginx-cache-demo.pcap.gz").path)
        #expect(curl.time.pageCount == 1)
        let other = try #require(curl.time.longestPages.first)
        #expect(!other.document && other.requests == curl.traffic.requests)
        #expect(other.first == curl.time.first && other.last == curl.time.last)
    }

    @Test func redirectChainsFollowTheLocation() {
        let transactions = Transcript("""
        >>>
        GET / HTTP/1.1
        Host: a.test

        <<<
        HTTP/1.1 301 Moved Permanently
        Location: /home
        Content-Length: 0

        >>>
        GET /home HTTP/1.1
        Host: a.test

        <<<
        HTTP/1.1 200 OK
        Content-Length: 5

        hello\\
        >>>
        GET /old HTTP/1.1
        Host: a.test

        <<<
        HTTP/1.1 302 Found
        Location: https://b.test/new
        Content-Length: 0


        """).run()
        let collector = ReportCollector()
        for t in transactions { collector.consume(t) }
        let t = collector.report(capture: "-").time
        #expect(t.redirectChainCount == 2)
        let complete = t.redirectChains.first { $0.complete }
        #expect(complete?.steps.map(\.url) == ["http://a.test/", "http://a.test/home"])
        #expect(complete?.steps.map(\.status) == [301, 200])
        let open = t.redirectChains.first { !$0.complete }
        #expect(open?.finalURL == "https://b.test/new" && open?.steps.map(\.status) == [302])
        #expect(t.largest.map(\.url) == ["http://a.test/home"])
    }

    @Test func locationsResolveAgainstTheRequest() {
        let base = "http://h.test:8080/a/b?q=1"
        #expect(URLText.resolve("https://x.test/y", against: base) == "https://x.test/y")
        #expect(URLText.resolve("//cdn.test/z", against: base) == "http://cdn.test/z")
        #expect(URLText.resolve("/x", against: base) == "http://h.test:8080/x")
        #expect(URLText.resolve("y", against: base) == "http://h.test:8080/a/y")
    }

    @Test func apiAnswersAndBeaconsAreNotStaticAssets() {
        #expect(Report.isStaticAsset(type: "application/javascript", url: "http://x.test/app.js"))
        #expect(!Report.isStaticAsset(type: "application/javascript", url: "http://x.test/api?callback=jQuery123"))
        #expect(!Report.isStaticAsset(type: "image/gif", url: "http://t.test/p.gif?uid=1&ev=view", bytes: 43))
        #expect(Report.isStaticAsset(type: "image/gif", url: "http://x.test/spinner.gif", bytes: 43))
    }
}
