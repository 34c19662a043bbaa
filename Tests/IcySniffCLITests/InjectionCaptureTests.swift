import Foundation
import Testing

/// An on-path injection (issue 18), written by scripts/make-injection-capture (scapy): a forged
/// 302 to a block page races the real 200 on one connection; another connection is answered by
/// the real server alone. What the client read is shown; the connection is flagged in every
/// output, the forged entry in the HAR and the report.
@Suite struct InjectionCaptureTests {
    @Test(.enabled(if: EncapsulationTests.hasScapy || ProcessInfo.processInfo.environment["CI"] != nil,
                   "scapy is not installed (scripts/install-deps installs it)"))
    func aForgedRedirectIsFlaggedWhereItLands() throws {
        let dir = CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let capture = dir.appendingPathComponent("injection.pcap").path
        let make = try CLI.run(["python3", CLI.packageRoot.appendingPathComponent("scripts/make-injection-capture").path, capture],
                               executable: "/usr/bin/env")
        try #require(make.status == 0, "\(make.stderr)")

        let rows = try CLI.run(["-r", capture, "--format", "ndjson", "-q"]).text.split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }
        #expect(rows.map { $0["status"] as? Int } == [302, 200], "what the client read first is what is shown")

        let connections = try CLI.run(["-r", capture, "--connections", "--format", "ndjson", "-q"]).text.split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
        }
        #expect(connections.map { ($0["anomalies"] as? [String] ?? []).contains("retransmission_inconsistency") } == [true, false])

        let har = try JSONSerialization.jsonObject(with: Data(try CLI.run(["-r", capture, "--har", "-q"]).text.utf8)) as! [String: Any]
        let entries = (har["log"] as! [String: Any])["entries"] as! [[String: Any]]
        #expect(entries.map { $0["_injection_suspected"] as? Bool ?? false } == [true, false])
        #expect(entries.map { ($0["response"] as! [String: Any])["status"] as? Int } == [302, 200])

        let report = try CLI.run(["report", "-r", capture])
        #expect(report.status == 0)
        #expect(report.text.contains("injection suspected") && report.text.contains("GET http://example.com/news → 302"), "\(report.text)")
        let json = try JSONSerialization.jsonObject(with: Data(try CLI.run(["report", "-r", capture, "--format", "json"]).text.utf8)) as! [[String: Any]]
        #expect(json.first?["injectionSuspectedCount"] as? Int == 1)
    }
}
