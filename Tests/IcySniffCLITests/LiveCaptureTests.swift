import Foundation
import Testing

/// Live capture on a real interface: two network namespaces and a veth pair, nginx in one, curl
/// in the other, icy-sniff capturing on the client's veth until SIGINT (scripts/live-capture-check).
@Suite struct LiveCaptureTests {
    /// Runs scripts/NAME with the binary and a directory of its own for what it writes; a script
    /// that cannot run here (exit 77: not root, no namespaces) makes the test fail with its reason.
    static func check(_ name: String) throws -> (dir: URL, result: CLI.Result) {
        let dir = CLI.temporaryDirectory()
        let script = CLI.packageRoot.appendingPathComponent("scripts/\(name)").path
        let r = try CLI.run([CLI.binary, dir.path], executable: script)
        try #require(r.status != 77, "environment cannot run the check: \(r.stderr)")
        return (dir, r)
    }

    @Test(.enabled(if: CLI.isRoot, "needs root for network namespaces"), .hangLimit)
    func keepAliveConditional304And404AreAllSeen() throws {
        let (dir, r) = try Self.check("live-capture-check")
        #expect(r.status == 0, "\(r.stderr)")
        func read(_ name: String) throws -> String { try String(contentsOf: dir.appendingPathComponent(name), encoding: .utf8) }

        // The table (TSV): every request, in order, with status and decoded size.
        // Columns by their names in the header line, not by position.
        let lines = try read("live.tsv").split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
        let header = try #require(lines.first)
        let rows = lines.dropFirst().map { row in Dictionary(uniqueKeysWithValues: zip(header, row)) }
        let expected = try read("requests.txt").split(separator: "\n").map(String.init)
        try #require(rows.count == 6 && rows.allSatisfy { $0.count == header.count }, "\(rows)")
        #expect(rows.map { "\($0["method"]!) \(URL(string: $0["url"]!)!.path) \($0["status"]!)" } == expected)
        #expect(rows.map { $0["size"] } == ["1882", "4400", "2056", "2056", "0", "153"])
        #expect(rows.allSatisfy { $0["protocol"] == "http/1.1" })
        #expect(rows[4]["cache"] == "AVOIDABLE", "a 304 for a response that was still fresh")
        // Both captures stopped cleanly on SIGINT and reported pcap statistics.
        for name in ["stderr-tsv.txt", "stderr-har.txt"] {
            let text = try read(name)
            #expect(text.contains("packets received by filter"), "\(name): \(text)")
            // tcpdump's start line: what is captured, before the first packet.
            #expect(text.contains("listening on ") && text.contains("link-type EN10MB (Ethernet), snapshot length"), "\(name): \(text)")
            #expect(text.contains("exit 0"), "\(name): \(text)")
        }

        // The HAR written at stop: the same transactions; keep-alive shares a connection.
        let har = try JSONSerialization.jsonObject(with: Data(contentsOf: dir.appendingPathComponent("live.har"))) as! [String: Any]
        let entries = (har["log"] as! [String: Any])["entries"] as! [[String: Any]]
        let summary = entries.map { e -> String in
            let req = e["request"] as! [String: Any], resp = e["response"] as! [String: Any]
            return "\(req["method"]!) \(URL(string: req["url"] as! String)!.path) \(resp["status"]!)"
        }
        #expect(summary == expected)
        try #require(entries.count == 6)
        let connections = entries.map { $0["connection"] as! String }
        #expect(connections[0] == connections[1] && connections[1] == connections[2])
        #expect(Set(connections).count == 4)
        let timings = entries[0]["timings"] as! [String: Any]
        #expect((timings["connect"] as! Double) >= 0, "the first request of a captured handshake has connect time")

        // -w saved the packets: reading them back gives the same transactions.
        let replay = try CLI.run(["-r", dir.appendingPathComponent("live.pcap").path, "--format", "tsv", "--quiet"])
        #expect(replay.text.split(separator: "\n").count == 7)
    }

    /// HTTPS live, with the key log curl writes as it connects (scripts/live-tls-check): each
    /// connection's secrets are logged only after its ServerHello reached curl, about when
    /// icy-sniff sees it. Every request is decrypted: HTTP/2 over TLS 1.3, HTTP/1.1 over 1.2 and 1.3.
    @Test(.enabled(if: CLI.isRoot, "needs root for network namespaces"), .hangLimit)
    func httpsWithAKeyLogWrittenAsTheCaptureRuns() throws {
        let (dir, r) = try Self.check("live-tls-check")
        #expect(r.status == 0, "\(r.stderr)")
        func read(_ name: String) throws -> String { try String(contentsOf: dir.appendingPathComponent(name), encoding: .utf8) }
        let rows = try read("live.ndjson").split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }
        let expected = try read("requests.txt").split(separator: "\n").map(String.init)
        let seen = rows.map { row in
            "\(row["method"]!) \(URL(string: row["url"] as! String)!.path) \(row["status"]!) \(row["protocol"]!) \(row["tls_version"]!)"
        }
        #expect(seen == expected)
        #expect(rows.allSatisfy { ($0["flags"] as? [String] ?? []).isEmpty }, "\(rows.map { $0["flags"] ?? "" })")
        let stderr = try read("stderr.txt")
        #expect(stderr.contains("3 TLS connections (3 decrypted)") && stderr.contains("exit 0"), "\(stderr)")
        #expect(!stderr.contains("tls_keys_not_found"))
        #expect(stderr.contains("does not exist yet"), "started before the key log was written: said so, not refused")
        // Key material never appears in any output.
        let secrets = try read("keys").split(separator: "\n").compactMap { $0.split(separator: " ").last.map(String.init) }
        #expect(secrets.count >= 9)
        let outputs = try read("live.ndjson") + stderr
        #expect(!secrets.contains { outputs.lowercased().contains($0.lowercased()) })
        // Read back from -w with the same key log: the same transactions.
        let replay = try CLI.run(["-r", dir.appendingPathComponent("live.pcap").path, "--keylog", dir.appendingPathComponent("keys").path,
                                  "--format", "ndjson", "--quiet"])
        #expect(replay.text.split(separator: "\n").count == expected.count)
        // Without keys, --connections shows each HTTPS connection as it ends, before Ctrl-C, and
        // the --stats line counts the encrypted ones (issue 30: never a blank screen).
        let before = try read("connections-before-stop.ndjson").split(separator: "\n")
        #expect(before.count == 3, "\(before)")
        #expect(before.allSatisfy { $0.contains("\"sni\":\"tls.icy.test\"") })
        let heartbeat = try read("connections-stderr.txt")
        #expect(heartbeat.contains("3 TLS (3 encrypted)"), "\(heartbeat)")
        #expect(heartbeat.contains("3 TLS connections; 3 encrypted") && heartbeat.contains("exit 0"), "\(heartbeat)")
        // Without keys, the default output shows each connection when its handshake is seen and
        // again when it ends (issue 52): 1 s after the first curl, its connection's two rows and
        // its estimated HTTP/2 requests are there, before Ctrl-C.
        func ndjson(_ name: String) throws -> [[String: Any]] {
            try read(name).split(separator: "\n").map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
        }
        let early = try ndjson("keyless-after-first.ndjson").filter { $0["type"] as? String == "connection" }
        #expect(early.map { "\($0["event"]!) \($0["tls_version"]!)" } == ["handshake TLS 1.3", "end TLS 1.3"], "\(early)")
        #expect(early.last?["protocol"] as? String == "h2" && early.last?["exchanges"] as? Int == 2, "\(early)")
        let keyless = try ndjson("keyless.ndjson")
        let events = keyless.filter { $0["type"] as? String == "connection" }
        #expect(events.count == 6 && events.allSatisfy { $0["sni"] as? String == "tls.icy.test" && $0["keys"] as? String == "none" }, "\(events)")
        #expect(Set(events.map { $0["connection"] as! String }).count == 3)
        // The exchanges, estimated: the HTTP/2 connection's two requests, the HTTP/1.1 over 1.2
        // one's two and the 1.3 one's 404.
        let estimated = keyless.filter { $0["inferred"] as? Bool == true }.map { $0["protocol"] as? String ?? "" }
        #expect(estimated == ["h2", "h2", "http/1.1", "http/1.1", "http/1.1"], "\(keyless)")
        let keylessStderr = try read("keyless-stderr.txt")
        #expect(keylessStderr.contains("3 TLS connections; 3 encrypted") && keylessStderr.contains("exit 0"), "\(keylessStderr)")
    }

    /// Live HTTP/3 whose key log is written after the connection's first packets, as a browser
    /// under load writes it (scripts/live-quic-late-keys-check, issue 52): the packets that came
    /// before their secrets are held and read once the key log has them — every request as
    /// reading the capture with its key log gives it (before: status 0, no method,
    /// http3_headers_undecodable). Written too late (past the 1 s wait), the packets are counted
    /// and the connection flagged quic_keys_late, which says the -w file can be read again.
    @Test(.enabled(if: CLI.isRoot, "needs root for network namespaces"), .hangLimit)
    func http3WithAKeyLogWrittenLate() throws {
        let (dir, r) = try Self.check("live-quic-late-keys-check")
        #expect(r.status == 0, "\(r.stderr)")
        func read(_ name: String) throws -> String { try String(contentsOf: dir.appendingPathComponent(name), encoding: .utf8) }
        func rows(_ name: String) throws -> [String] {
            try read(name).split(separator: "\n").map { line in
                let row = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
                return "\(row["method"] ?? "") \(row["url"] ?? "") \(row["status"] ?? "") \(row["flags"] ?? "")"
            }
        }
        let truth = try rows("file.ndjson")
        #expect(truth.count == 13)
        #expect(try rows("late.ndjson") == truth)
        let late = try read("late-stderr.txt")
        #expect(late.contains("13 HTTP transactions") && !late.contains("quic_keys_late") && late.contains("exit 0"), "\(late)")
        let tooLate = try read("too-late-stderr.txt")
        #expect(tooLate.contains("quic_keys_late") && tooLate.contains("exit 0"), "\(tooLate)")
        #expect(try rows("too-late.ndjson").allSatisfy { !$0.hasPrefix("GET ") })
    }

    /// A capture run as a service (scripts/live-rotation-check): -G 2 on the transactions and on
    /// -w, SIGHUP after logrotate moved the file away and once without, --stats, -B.
    @Test(.enabled(if: CLI.isRoot, "needs root for network namespaces"), .hangLimit)
    func rotationHangupHeartbeatAndBufferSize() throws {
        let (dir, r) = try Self.check("live-rotation-check")
        try #require(r.status == 0, "\(r.stderr)")
        func url(_ name: String) -> URL { dir.appendingPathComponent(name) }
        func rows(_ name: String) throws -> [[String: Any]] {
            try String(contentsOf: url(name), encoding: .utf8).split(separator: "\n").map {
                try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
            }
        }
        func targets(_ rows: [[String: Any]]) -> [String] { rows.map { "\($0["method"]!) \($0["target"]!)" } }
        let requests = try String(contentsOf: url("requests.txt"), encoding: .utf8).split(separator: "\n").map(String.init)
        try #require(requests.count == 12)
        #expect(targets(try rows("all.ndjson")) == requests)

        // -G 2 over about 7 s: several files, each whole NDJSON, together every transaction.
        let names = try FileManager.default.contentsOfDirectory(atPath: url("rotated").path).sorted()
        let ndjson = names.filter { $0.hasPrefix("http-") && $0.hasSuffix(".ndjson") }
        let pcaps = names.filter { $0.hasPrefix("packets-") && $0.hasSuffix(".pcap") }
        #expect(ndjson.count >= 3, "\(names)")
        #expect(pcaps.count >= 3, "\(names)")
        #expect(names.allSatisfy { !$0.hasPrefix(".") }, "no temporary file left: \(names)")
        let rotated = try ndjson.flatMap { try rows("rotated/\($0)") }
        #expect(targets(rotated).sorted() == requests.sorted())
        // The rotated packets, read back in order as one stream: the same 12 transactions.
        let replay = try CLI.run(pcaps.flatMap { ["-r", url("rotated/\($0)").path] } + ["--format", "ndjson", "-q"])
        #expect(replay.status == 0, "\(replay.stderr)")
        #expect(replay.text.split(separator: "\n").count == 12)

        // SIGHUP: the file logrotate moved away holds batch 1; the file that came back under the
        // name holds batch 2; the name still held at the end, batch 3 went to the next number.
        #expect(targets(try rows("hup/moved-1.ndjson")).allSatisfy { $0.contains("batch=1") })
        #expect(targets(try rows("hup/http.ndjson")).allSatisfy { $0.contains("batch=2") })
        #expect(targets(try rows("hup/http.1.ndjson")).allSatisfy { $0.contains("batch=3") })
        let hup = try rows("hup/moved-1.ndjson") + rows("hup/http.ndjson") + rows("hup/http.1.ndjson")
        #expect(targets(hup) == requests, "nothing lost, nothing twice")

        // The start line says what is captured; --stats prints a line a second with the figures.
        let stderr = try String(contentsOf: url("stderr-rotated.txt"), encoding: .utf8)
        #expect(stderr.contains("listening on vc") && stderr.contains("filter 'tcp port 8080'"), "\(stderr)")
        let stats = stderr.split(separator: "\n").filter { $0.contains(": stats ") }
        #expect(stats.count >= 5, "\(stderr)")
        #expect(stats.allSatisfy { $0.contains("dropped 0 by kernel") && $0.contains("connections open") && $0.contains("MiB resident") }, "\(stats)")
        #expect(stats.last?.contains("12 transactions") == true, "\(stats)")
        #expect(stderr.contains("dropped by kernel") && stderr.contains("peak"), "the final line: \(stderr)")

        // -B reaches libpcap: the packet ring it maps grows with it (8x the KiB, 8x the ring).
        let small = Int(try String(contentsOf: url("ring-4096.txt"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        let large = Int(try String(contentsOf: url("ring-32768.txt"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        #expect(small >= 4096 * 1024, "ring \(small)")
        #expect(large == 8 * small, "rings \(small), \(large)")
    }

    /// The systemd unit in contrib/ (scripts/service-check): systemd-analyze accepts it, and its
    /// ExecStart runs without root, with only CAP_NET_RAW; reload (SIGHUP) completes the hour's
    /// file and begins the next; stop (SIGTERM) loses nothing.
    @Test(.enabled(if: CLI.isRoot, "needs root for network namespaces"), .hangLimit)
    func theServiceUnitRunsWithoutRoot() throws {
        let (dir, r) = try Self.check("service-check")
        try #require(r.status == 0, "\(r.stderr)")
        let verify = try String(contentsOf: dir.appendingPathComponent("verify.txt"), encoding: .utf8)
        #expect(verify.isEmpty || verify.contains("not available"), "systemd-analyze verify: \(verify)")
        let stderr = try String(contentsOf: dir.appendingPathComponent("stderr.txt"), encoding: .utf8)
        #expect(stderr.contains("listening on vc") && stderr.contains("exit 0"), "\(stderr)")
        let log = dir.appendingPathComponent("log")
        let files = try FileManager.default.contentsOfDirectory(atPath: log.path).sorted()
        // One hour's name; SIGHUP completed the first file, so the rest went to the next number.
        #expect(files.count == 2 && files.allSatisfy { $0.hasSuffix(".ndjson") && $0.contains("-http-") }, "\(files)")
        var targets: [String] = []
        for name in files {
            let attributes = try FileManager.default.attributesOfItem(atPath: log.appendingPathComponent(name).path)
            #expect((attributes[.ownerAccountID] as? NSNumber)?.intValue == 65534, "written as the unprivileged user: \(name)")
            let text = try String(contentsOf: log.appendingPathComponent(name), encoding: .utf8)
            targets += text.split(separator: "\n").map { (try! JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any])["target"] as! String }
        }
        #expect(targets.sorted() == ["/page.html?n=1", "/static/app.css?n=2", "/static/logo.png?n=3"])
    }
}
