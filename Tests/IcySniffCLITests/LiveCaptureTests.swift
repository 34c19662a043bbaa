import Foundation
import Testing

/// Live capture on a real interface: two network namespaces and a veth pair, nginx in one, curl
/// in the other, icy-sniff capturing on the client's veth until SIGINT (scripts/live-capture-check).
@Suite struct LiveCaptureTests {
    @Test(.enabled(if: getuid() == 0, "needs root for network namespaces"), .timeLimit(.minutes(6)))
    func keepAliveConditional304And404AreAllSeen() throws {
        let dir = CLI.temporaryDirectory()
        let script = CLI.packageRoot.appendingPathComponent("scripts/live-capture-check").path
        let r = try CLI.run([CLI.binary, dir.path], executable: script)
        try #require(r.status != 77, "environment cannot run the check: \(r.stderr)")
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
}
