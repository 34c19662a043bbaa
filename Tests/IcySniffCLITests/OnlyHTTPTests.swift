import Foundation
import Testing

/// Only HTTP is HTTP (issue 18): SMTP, FTP, IMAP, POP3, IRC, SIP, RTSP, Gnutella and a binary
/// protocol, each a connection written by scripts/make-protocol-captures (scapy) from a
/// transcript in its own words, give no transaction, and `--connections` says what each side
/// sent first; HTTP/1.1, HTTP/0.9 (GET, and POST as Zeek logs it), a 408 sent first by the
/// server, and a malformed request answered by a status line stay HTTP.
@Suite struct OnlyHTTPTests {
    @Test(.enabled(if: EncapsulationTests.hasScapy || ProcessInfo.processInfo.environment["CI"] != nil,
                   "scapy is not installed (scripts/install-deps installs it): protocol tests skipped"))
    func lineProtocolsAreNotTransactions() throws {
        let dir = CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let make = try CLI.run(["python3", CLI.packageRoot.appendingPathComponent("scripts/make-protocol-captures").path, dir.path],
                               executable: "/usr/bin/env")
        try #require(make.status == 0, "\(make.stderr)")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
        #expect(files.filter { $0.hasPrefix("not-http-") }.count == 9)
        for file in files {
            let path = dir.appendingPathComponent(file).path
            let r = try CLI.run(["-r", path, "--format", "ndjson"])
            #expect(r.status == 0, "\(file): \(r.stderr)")
            let transactions = r.text.split(separator: "\n").count
            let connections = try CLI.run(["-r", path, "--connections", "--format", "ndjson"])
            let row = try #require(try JSONSerialization.jsonObject(with: Data(connections.text.utf8)) as? [String: Any], "\(file)")
            let anomalies = row["anomalies"] as? [String] ?? []
            if file.hasPrefix("not-http-") {
                #expect(transactions == 0, "\(file): \(r.text)")
                #expect(anomalies == ["not_http"], "\(file): \(anomalies)")
                let seen = try #require(row["notHTTP"] as? [String: Any], "\(file)")
                let first = (seen["client"] as? String ?? "") + " " + (seen["server"] as? String ?? "")
                #expect(!first.trimmingCharacters(in: .whitespaces).isEmpty, "\(file)")
                #expect(r.stderr.contains("not_http×1"), "\(file): \(r.stderr)")
            } else if file.hasPrefix("http-") {
                let expected = Int(file.split(separator: "-").last!.dropLast(5))!
                #expect(transactions == expected, "\(file): \(r.stderr)")
                #expect(!anomalies.contains("not_http"), "\(file)")
                #expect(row["notHTTP"] == nil, "\(file)")
            } else {
                // Picked up inside a body: not HTTP evidence either way, and not judged.
                #expect(transactions == 0, "\(file)")
                #expect(!anomalies.contains("not_http"), "\(file)")
            }
        }
        // The first lines as seen, in the table's `seen` column.
        let smtp = try CLI.run(["-r", dir.appendingPathComponent("not-http-smtp.pcap").path, "--connections", "--format", "tsv"])
        let lines = smtp.text.split(separator: "\n")
        let header = lines[0].split(separator: "\t", omittingEmptySubsequences: false)
        let cells = lines[1].split(separator: "\t", omittingEmptySubsequences: false)
        let seen = cells[try #require(header.firstIndex(of: "seen"))]
        #expect(seen == "not HTTP: the server spoke first; server: 220 mail.example.com ESMTP Postfix", "\(seen)")
    }
}
