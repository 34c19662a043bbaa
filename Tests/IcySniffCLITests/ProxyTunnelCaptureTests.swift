import Foundation
import Testing

/// HTTP inside proxy tunnels on a real capture (issue 18): curl through tinyproxy (CONNECT, a
/// plain forward-proxy request, a CONNECT the proxy cannot carry out), microsocks (SOCKS5) and
/// pproxy (SOCKS4) to nginx and openssl s_server, recorded with scripts/record-tunnel-sample.
@Suite struct ProxyTunnelCaptureTests {
    let capture = CLI.capture("tunnel-sample.pcap")
    let keys = CLI.capture("tunnel-sample.keys")

    func rows(_ arguments: [String]) throws -> [[String: Any]] {
        let r = try CLI.run(["-r", capture, "--format", "ndjson"] + arguments)
        #expect(r.status == 0, "\(r.stderr)")
        return try r.text.split(separator: "\n").map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
    }

    @Test func transactionsInsideTunnelsAreFound() throws {
        let all = try rows(["--keylog", keys])
        let tunnelled = all.filter { ($0["flags"] as? [String] ?? []).contains("tunnelled") }
        #expect(all.count == 10, "\(all.map { $0["url"] ?? "" })")
        #expect(Set(tunnelled.map { $0["url"] as? String ?? "" }) == [
            "https://tls.icy.test:44341/", "http://web.icy.test:18090/page.html", "http://web.icy.test:18090/static/app.css",
            "http://web.icy.test:18090/static/nocache.js",
        ])
        #expect(tunnelled.count == 6)
        #expect(tunnelled.allSatisfy { $0["status"] as? Int == 200 })
        // The two CONNECTs the proxy carried out are flagged as tunnels, not as tunnelled; the
        // one it could not carry out (500) and the forward-proxy GET are neither.
        let connects = all.filter { $0["method"] as? String == "CONNECT" }
        #expect(connects.map { $0["status"] as? Int ?? 0 }.sorted() == [200, 200, 500])
        #expect(connects.allSatisfy { !($0["flags"] as? [String] ?? []).contains("tunnelled") })
        #expect(all.contains { $0["url"] as? String == "http://web.icy.test:18090/api/data.json" && ($0["flags"] as? [String] ?? []).isEmpty })
        // Without keys the TLS inside the tunnels is listed, not decrypted: its two GETs are
        // estimates from the records, of the tunnel's target, with the decrypted responses' size.
        let keyless = try rows([])
        #expect(keyless.filter { $0["inferred"] == nil && $0["type"] == nil }.count == 8)
        // Each encrypted connection inside a tunnel: its handshake and its end, named by its SNI.
        let tls = keyless.filter { $0["type"] as? String == "connection" }
        #expect(tls.map { "\($0["event"]!) \($0["url"]!)" } == ["handshake https://tls.icy.test:44341/", "end https://tls.icy.test:44341/",
                                                            "handshake https://tls.icy.test:44341/", "end https://tls.icy.test:44341/"], "\(tls)")
        let estimated = keyless.filter { $0["inferred"] as? Bool == true }
        #expect(estimated.map { $0["url"] as? String ?? "" } == ["https://tls.icy.test:44341/", "https://tls.icy.test:44341/"], "\(estimated)")
        let decrypted = all.filter { $0["url"] as? String == "https://tls.icy.test:44341/" }
        #expect(estimated.count == decrypted.count)
    }

    /// A reverse SOCKS5 proxy (Tests/Fixtures/tunnel/reverse-socks5.pcap, recorded with
    /// scripts/record-reverse-socks-sample): the proxy's side sent the SYN, the side that accepted
    /// the connection greets it in SOCKS5. That side is the client: its GETs are found inside the
    /// tunnels, not lost as bytes that are not HTTP (issue 32).
    @Test func reverseSOCKSProxy() throws {
        let fixture = CLI.packageRoot.appendingPathComponent("Tests/Fixtures/tunnel/reverse-socks5.pcap").path
        let r = try CLI.run(["-r", fixture, "--format", "ndjson"])
        #expect(r.status == 0, "\(r.stderr)")
        let all = try r.text.split(separator: "\n").map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        #expect(all.map { $0["url"] as? String ?? "" } == ["http://web.icy.test:18090/page.html", "http://web.icy.test:18090/api/data.json"])
        #expect(all.allSatisfy { $0["status"] as? Int == 200 && ($0["flags"] as? [String] ?? []) == ["tunnelled"] })
        #expect(all.allSatisfy { $0["client_port"] as? Int == 11091 }, "the side that greeted the proxy is the client")
        let c = try CLI.run(["-r", fixture, "--connections", "--format", "ndjson"])
        let connections = try c.text.split(separator: "\n").map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        #expect(connections.compactMap { ($0["tunnel"] as? [String: String])?["target"] } == ["web.icy.test:18090", "web.icy.test:18090"])
        #expect(connections.allSatisfy { ($0["anomalies"] as? [String] ?? []).isEmpty })
    }

    @Test func connectionsNameTheirTunnels() throws {
        let r = try CLI.run(["-r", capture, "--keylog", keys, "--connections", "--format", "ndjson"])
        #expect(r.status == 0, "\(r.stderr)")
        let connections = try r.text.split(separator: "\n").map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        let tunnels = connections.compactMap { $0["tunnel"] as? [String: String] }
        #expect(tunnels.map { "\($0["protocol"]!) \($0["target"]!)" }.sorted() == [
            "CONNECT tls.icy.test:44341", "CONNECT web.icy.test:18090", "SOCKS4 127.0.0.1:18090",
            "SOCKS5 127.0.0.1:44341", "SOCKS5 web.icy.test:18090",
        ])
        #expect(connections.allSatisfy { ($0["anomalies"] as? [String] ?? []).allSatisfy { $0 != "not_http" } })
        // The TLS inside a tunnel is the connection's TLS: SNI and version as for a direct one.
        let tls = connections.compactMap { $0["tls"] as? [String: Any] }
        #expect(tls.map { $0["sni"] as? String } == ["tls.icy.test", "tls.icy.test"])
        #expect(tls.map { $0["version"] as? String } == ["TLS 1.3", "TLS 1.2"])
    }

    @Test func harCarriesTheTunnels() throws {
        let r = try CLI.run(["-r", capture, "--keylog", keys, "--har"])
        #expect(r.status == 0, "\(r.stderr)")
        let har = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any])
        let log = try #require(har["log"] as? [String: Any])
        let entries = try #require(log["entries"] as? [[String: Any]])
        let via = entries.compactMap { $0["_proxyTunnel"] as? [String: String] }
        #expect(via.count == 6)
        let https = try #require(entries.first { ($0["request"] as? [String: Any])?["url"] as? String == "https://tls.icy.test:44341/"
                                                  && ($0["_proxyTunnel"] as? [String: String])?["protocol"] == "CONNECT" })
        // TLS inside the tunnel: the handshake is the entry's ssl phase, inside connect.
        let timings = try #require(https["timings"] as? [String: Double])
        #expect(timings["ssl"]! > 0 && timings["connect"]! >= timings["ssl"]!, "\(timings)")
        // Key material never appears.
        let secrets = try String(contentsOfFile: keys, encoding: .utf8).split(separator: "\n").compactMap { $0.split(separator: " ").last }
        let text = String(decoding: r.stdout, as: UTF8.self)
        #expect(secrets.allSatisfy { !text.contains($0) })
        // (HARReadersTests loads this HAR, as every capture's, in haralyzer, har2tree, mitmproxy
        // and har2warc.)
    }
}
