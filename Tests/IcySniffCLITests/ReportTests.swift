import Foundation
import Testing

/// `icy-sniff report` on traffic recorded live from a real nginx with several caching policies
/// and a real client (curl) fetching some URLs twice (scripts/record-sample).
@Suite struct ReportTests {
    @Test(.enabled(if: CLI.isRoot, "tcpdump on the loopback needs root"), .hangLimit)
    func reportNamesExactlyTheAvoidableRequests() throws {
        let dir = CLI.temporaryDirectory()
        let pcap = dir.appendingPathComponent("recorded.pcap").path
        let port = String(20000 + Int(getpid() % 10000))
        let record = try CLI.run([pcap, port], executable: CLI.packageRoot.appendingPathComponent("scripts/record-sample").path)
        #expect(record.status == 0, "\(record.stderr)")
        let r = try CLI.run(["report", "-r", pcap, "--format", "json"])
        #expect(r.status == 0, "\(r.stderr)")
        let reports = try JSONSerialization.jsonObject(with: r.stdout) as! [[String: Any]]
        let report = try #require(reports.first)
        #expect(report["requests"] as? Int == 12)
        let avoidable = (report["avoidable"] as! [[String: Any]]).map { "\($0["method"]!) \(URL(string: $0["url"] as! String)!.path) \($0["status"]!)" }
        // app.css (max-age=3600) fetched again, and logo.png (7 days) revalidated: both while fresh.
        // Not avoidable: no-store data.json, no-cache nocache.js, the 404, HEAD and POST.
        #expect(avoidable == ["GET /static/app.css 200", "GET /static/logo.png 304"])
        let notModified = (report["notModified"] as! [[String: Any]]).count
        #expect(notModified == 1)
        let unchanged = (report["unchangedRedownloads"] as! [[String: Any]]).map { URL(string: $0["url"] as! String)!.path }
        #expect(unchanged == ["/api/data.json", "/static/nocache.js"])
        #expect(report["connections"] as? Int == 9)
        let text = try CLI.run(["report", "-r", pcap])
        #expect(text.text.contains("Avoidable requests (a stored response was still fresh): 2"))
    }
}

/// The report's HTTP/2 section and its HTTP/1.x hosts that opened parallel connections.
@Suite struct HTTP2ReportTests {
    static func report(_ capture: String) throws -> [String: Any] {
        let r = try CLI.run(["report", "-r", CLI.packageRoot.appendingPathComponent("captures/\(capture)").path, "--format", "json"])
        #expect(r.status == 0, "\(r.stderr)")
        let reports = try JSONSerialization.jsonObject(with: r.stdout) as! [[String: Any]]
        return try #require(reports.first)
    }

    /// On an 80-column terminal (COLUMNS here) no line of the report wraps: the timing table
    /// narrows, URLs are cut in the middle, prose wraps with its indent; in a pipe, whole lines
    /// (a URL stays whole for grep). QUIC connections are not "HTTP/1.x hosts with parallel
    /// connections" (issue 30).
    /// The wasted bytes are the sum of the avoidable requests listed (their wire bytes: the
    /// bodies were listed, 90 B and 0 B of 630).
    @Test func theAvoidableBytesAreTheSumOfTheListed() throws {
        let r = try CLI.run(["report", "-r", CLI.capture("nginx-cache-demo.pcap.gz"), "--format", "json"])
        let reports = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [[String: Any]], "\(r.stderr)")
        let report = try #require(reports.first)
        let avoidable = try #require(report["avoidable"] as? [[String: Any]])
        #expect(avoidable.count == 2 && avoidable.compactMap { $0["bytes"] as? Int }.reduce(0, +) == report["avoidableBytes"] as? Int, "\(avoidable)")
        // curl's requests belong to no browser page: said so, not drawn as one page.
        let text = try CLI.run(["report", "-r", CLI.capture("nginx-cache-demo.pcap.gz")]).text
        #expect(text.contains("Requests outside any browser page: 12,") && !text.contains("Pages as the HAR groups them"), "\(text)")
        let wiki = try CLI.run(["report", "-r", CLI.capture("wikipedia.pcap")]).text
        #expect(wiki.contains("Pages as the HAR groups them: 1") && !wiki.contains("outside any browser page"), "\(wiki)")
    }

    @Test func reportFitsEightyColumns() throws {
        let captures = ["wikipedia.pcap", "nginx-cache-demo.pcap.gz", "h3-sample.pcap", "tunnel-sample.pcap", "tls-sample.pcap", "h2c-sample.pcap"]
        var args = ["report"]
        for c in captures { args += ["-r", CLI.capture(c)] }
        args += ["--keylog", CLI.capture("h3-sample.keys"), "--keylog", CLI.capture("tunnel-sample.keys")]
        for width in [80, 100] {
            let r = try CLI.run(args, environment: ["COLUMNS": String(width)])
            #expect(r.status == 0)
            let lines = r.text.split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.count > 100)
            for line in lines { #expect(line.unicodeScalars.count <= width, "\(width): \(line)") }
            #expect(r.text.contains("  host                     requests      RTT    TTFB p50/p90  server p50/p90"))
        }
        let piped = try CLI.run(args, environment: ["COLUMNS": ""])
        #expect(piped.text.contains("GET http://upload.wikimedia.org/wikipedia/commons/b/bd/Bookshelf-40x201_6.png → 304"))
        let h3 = try CLI.run(["report", "-r", CLI.capture("h3-sample.pcap"), "--keylog", CLI.capture("h3-sample.keys")])
        #expect(!h3.text.contains("HTTP/1.x hosts with parallel connections"), "\(h3.text)")
    }

    @Test func streamsPerConnectionConcurrencyAndPush() throws {
        let report = try Self.report("h2c-sample.pcap")
        let h2 = try #require(report["http2"] as? [String: Any])
        // Three connections: nghttp's (index.html, app.js and the pushed style.css), the
        // upgraded one (stream 1) and the upload.
        #expect(h2["connections"] as? Int == 3)
        #expect(h2["streams"] as? Int == 5)
        #expect(h2["maxStreamsPerConnection"] as? Int == 3)
        #expect(h2["peakConcurrentStreams"] as? Int == 3)
        #expect(h2["pushed"] as? Int == 1)
        #expect((report["parallelHTTP1Hosts"] as? [Any])?.isEmpty == true)
    }

    @Test func httpOneHostsWithParallelConnectionsAreNamed() throws {
        let report = try Self.report("wikipedia.pcap")
        #expect(report["http2"] == nil)
        let hosts = try #require(report["parallelHTTP1Hosts"] as? [[String: Any]])
        let upload = try #require(hosts.first)
        #expect(upload["host"] as? String == "upload.wikimedia.org")
        #expect(upload["connections"] as? Int == 6 && upload["peakParallel"] as? Int == 6)
    }
}

/// Where the time goes, in the JSON report, and the combined report of several captures.
@Suite struct TimeReportTests {
    /// Files named one by one are captures of their own, one report each, even when one could
    /// continue the other (same link type, later start): tls-sample and h2c-sample were one report.
    @Test func filesGivenOneByOneGetAReportEach() throws {
        let captures = ["tls-sample.pcap", "h2c-sample.pcap"].map { CLI.capture($0) }
        let r = try CLI.run(["report", "-r", captures[0], "-r", captures[1], "--format", "json"])
        let reports = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [[String: Any]])
        #expect(reports.map { $0["capture"] as? String ?? "" } == captures + ["all 2 captures"])
        // A rotated set found in a folder is one stream, unless --no-join.
        let dir = CLI.temporaryDirectory()
        for n in 1...2 {
            let piece = dir.appendingPathComponent("ring_0000\(n)_2011031819060\(n).pcap").path
            let split = try CLI.run(["-r", CLI.capture("wikipedia.pcap"), "-w", piece, "--quiet", n == 1 ? "tcp port 80 and host 208.80.152.2" : "tcp port 80 and not host 208.80.152.2"])
            #expect(split.status == 0, "\(split.stderr)")
        }
        let joined = try CLI.run(["report", "-r", dir.path, "--format", "json"])
        let one = try #require(try JSONSerialization.jsonObject(with: joined.stdout) as? [[String: Any]])
        let apart = try CLI.run(["report", "-r", dir.path, "--format", "json", "--no-join"])
        let two = try #require(try JSONSerialization.jsonObject(with: apart.stdout) as? [[String: Any]])
        #expect(two.count == one.count + 2, "\(one.count) joined, \(two.count) apart")
    }

    @Test func severalCapturesGetACombinedReport() throws {
        let captures = ["wikipedia.pcap", "nginx-sll2.pcap"].map { CLI.capture($0) }
        let r = try CLI.run(["report", "-r", captures[0], "-r", captures[1], "--format", "json"])
        #expect(r.status == 0, "\(r.stderr)")
        let reports = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [[String: Any]])
        try #require(reports.count == 3)
        #expect(reports[2]["capture"] as? String == "all 2 captures")
        let requests = reports.map { $0["requests"] as? Int ?? -1 }
        #expect(requests[2] == requests[0] + requests[1] && requests[0] == 15)
        // The time section: per-host phases in milliseconds, the server's share apart.
        let time = try #require(reports[0]["time"] as? [String: Any])
        let hosts = try #require(time["hosts"] as? [[String: Any]])
        let upload = try #require(hosts.first)
        #expect(upload["host"] as? String == "upload.wikimedia.org")
        let ttfb = try #require(upload["ttfbMs"] as? [String: Double]), server = try #require(upload["serverMs"] as? [String: Double])
        #expect(ttfb["p50"]! > 50 && server["p50"]! < 5)
        #expect((time["revalidations"] as? [String: Any])?["count"] as? Int == 15)
        // Long lists say where they come from: 12 of the 15 revalidations went to one host.
        let byHost = try #require(reports[0]["notModifiedByHost"] as? [String: Int])
        #expect(byHost["upload.wikimedia.org"] == 12 && byHost.values.reduce(0, +) == 15)
        // The text report says the same, with long URLs cut.
        let text = try CLI.run(["report", "-r", captures[0]])
        #expect(text.text.contains("Where the time goes") && text.text.contains("Slowest by server time:"))
        #expect(text.text.contains("  by host: upload.wikimedia.org 12, "))
        #expect(text.text.split(separator: "\n").allSatisfy { $0.count < 260 })
    }

    /// Without keys, report sums the exchanges estimated from encrypted records per server name
    /// (issue 52): their count, their response bytes (the decrypted responses' head and body
    /// together, to the byte), connections that carried one, times to first byte; within 80
    /// columns. With the key log the section is gone: the transactions are there instead.
    @Test func encryptedExchangesPerHostWithoutKeys() throws {
        let capture = CLI.capture("tls-sample.pcap"), keys = CLI.capture("tls-sample.keys")
        let json = try #require(try JSONSerialization.jsonObject(with: CLI.run(["report", "-r", capture, "--format", "json"]).stdout) as? [[String: Any]])
        let estimated = try #require(json.first?["estimated"] as? [String: Any])
        let hosts = try #require(estimated["hosts"] as? [[String: Any]])
        let har = try #require(try JSONSerialization.jsonObject(with: CLI.run(["-r", capture, "--keylog", keys, "--har", "--quiet"]).stdout) as? [String: Any])
        let entries = try #require((har["log"] as? [String: Any])?["entries"] as? [[String: Any]])
        let truthBytes = entries.reduce(0) { sum, e in
            let r = e["response"] as? [String: Any] ?? [:]
            return sum + max(0, r["headersSize"] as? Int ?? 0) + max(0, r["bodySize"] as? Int ?? 0)
        }
        #expect(estimated["exchanges"] as? Int == entries.count && hosts.count == 1, "\(estimated)")
        #expect(hosts.first?["host"] as? String == "tls.icy.test" && hosts.first?["responseBytes"] as? Int == truthBytes, "\(hosts)")
        #expect(hosts.first?["singleExchangeConnections"] as? Int == 3 && (hosts.first?["ttfbP50"] as? Double ?? -1) > 0)
        let text = try CLI.run(["report", "-r", capture]).text
        #expect(text.contains("Encrypted without keys: 3 connections, 3 exchanges estimated from records"), "\(text)")
        let rows = text.split(separator: "\n").filter { $0.hasPrefix("  tls.icy.test ") }
        #expect(rows.count == 1 && rows.allSatisfy { $0.count <= 80 }, "\(text)")
        let keyed = try #require(try JSONSerialization.jsonObject(with: CLI.run(["report", "-r", capture, "--keylog", keys, "--format", "json"]).stdout) as? [[String: Any]])
        #expect(keyed.first?["estimated"] == nil)
    }
}
