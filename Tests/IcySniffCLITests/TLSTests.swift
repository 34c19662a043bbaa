import Foundation
import Testing

/// TLS connections without keys, on a real capture (curl and openssl s_server, recorded with
/// scripts/record-tls-sample): listed with their handshakes, counted, reported — never
/// mistaken for HTTP.
@Suite struct TLSTests {
    let capture = CLI.capture("tls-sample.pcap")

    @Test func connectionsListTheHandshakes() throws {
        let r = try CLI.run(["-r", capture, "--connections", "--format", "tsv"])
        #expect(r.status == 0, "\(r.stderr)")
        let rows = r.text.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
        try #require(rows.count == 4 && rows.allSatisfy { $0.count == 18 }, "\(r.text)")
        let header = rows[0]
        func column(_ name: String) throws -> [String] {
            let i = try #require(header.firstIndex(of: name), "column \(name)")
            return rows.dropFirst().map { $0[i] }
        }
        #expect(try column("tls_version") == ["TLS 1.3", "TLS 1.2", "TLS 1.2"])
        #expect(try column("sni") == ["tls.icy.test", "tls.icy.test", "tls.icy.test"])
        #expect(try column("resumed") == ["no", "no", "session-id"])
        #expect(try column("anomalies").allSatisfy { !$0.contains("unexpected") }, "TLS is not taken for HTTP")
        #expect(try column("tls_handshake_ms").allSatisfy { (Double($0) ?? -1) > 0 })
        #expect(r.stderr.contains("3 TLS connections"), "\(r.stderr)")
    }

    @Test func harListsTLSConnectionsWithoutEntries() throws {
        let r = try CLI.run(["-r", capture, "--har", "--quiet"])
        #expect(r.status == 0)
        let har = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any])
        let log = try #require(har["log"] as? [String: Any])
        #expect((log["entries"] as? [Any])?.isEmpty == true, "no entry for an undecrypted connection")
        let connections = try #require(log["_connections"] as? [[String: Any]])
        #expect(connections.count == 3)
        let tls = connections.compactMap { $0["tls"] as? [String: Any] }
        #expect(tls.count == 3)
        #expect(tls.map { $0["cipher"] as? String } == ["TLS_AES_256_GCM_SHA384", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
                                                         "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"])
        #expect(tls.allSatisfy { ($0["alpnOffered"] as? [String])?.contains("http/1.1") == true })
        #expect(tls.first?["earlyData"] is NSNull, "unknown for TLS 1.3 without keys")
        #expect(tls.last?["resumed"] as? Bool == true)
        #expect(tls.allSatisfy { $0["decrypted"] as? Bool == false })
    }

    @Test func reportHasATLSSection() throws {
        let r = try CLI.run(["report", "-r", capture, "--format", "json"])
        #expect(r.status == 0, "\(r.stderr)")
        let reports = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [[String: Any]])
        let tls = try #require(reports.first?["tls"] as? [String: Any])
        #expect(tls["connections"] as? Int == 3 && tls["resumed"] as? Int == 1)
        #expect((tls["versions"] as? [String: Int]) == ["TLS 1.2": 2, "TLS 1.3": 1])
        let hosts = try #require(tls["hosts"] as? [[String: Any]])
        #expect(hosts.first?["sni"] as? String == "tls.icy.test" && hosts.first?["sequentialConnections"] as? Int == 2)
        let text = try CLI.run(["report", "-r", capture])
        #expect(text.text.contains("TLS: 3 connections"), "\(text.text)")
    }
}
