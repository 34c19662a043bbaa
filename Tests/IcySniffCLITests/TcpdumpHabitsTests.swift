import Foundation
import Testing

/// tcpdump's habits (issue 19): -D, a filter as trailing words, -n, -q, `--fields` with spaces.
@Suite struct TcpdumpHabitsTests {
    let capture = CLI.capture("wikipedia.pcap")

    @Test func listInterfacesAsTcpdumpDoes() throws {
        let r = try CLI.run(["-D"])
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.text.split(separator: "\n")
        #expect(lines.first?.hasPrefix("1.") == true, "\(r.text)")
        #expect(lines.contains { $0.contains(".lo ") && $0.contains("Loopback") }, "\(r.text)")
    }

    @Test func aFilterAsTrailingWordsIsTheFilter() throws {
        let words = try CLI.run(["-r", capture, "--format", "tsv", "host", "208.80.152.2", "and", "tcp"])
        let option = try CLI.run(["-r", capture, "--format", "tsv", "-f", "host 208.80.152.2 and tcp"])
        #expect(words.status == 0, "\(words.stderr)")
        #expect(words.text == option.text)
        #expect(words.text.split(separator: "\n").count == 3)
        let both = try CLI.run(["-r", capture, "-f", "tcp", "tcp", "port", "80"])
        #expect(both.status == 64)
        #expect(both.stderr.contains("give the filter once"), "\(both.stderr)")
    }

    @Test func quietNamesAndFieldsWithSpaces() throws {
        let r = try CLI.run(["-r", capture, "-n", "-q", "--format", "tsv", "--fields", "time, url ,status"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.isEmpty, "\(r.stderr)")
        #expect(r.text.hasPrefix("time\turl\tstatus\n"), "\(r.text)")
    }

    /// `-r … -w`: the packets that pass the filter are written, as tcpdump writes them; read
    /// back, they give the filtered run's transactions.
    @Test func writeThePacketsThatPassTheFilter() throws {
        let dir = CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let saved = dir.appendingPathComponent("saved.pcap").path
        let filtered = try CLI.run(["-r", capture, "-w", saved, "--format", "tsv", "host", "208.80.152.2"])
        #expect(filtered.status == 0, "\(filtered.stderr)")
        let again = try CLI.run(["-r", saved, "--format", "tsv"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.text == filtered.text)
        #expect(again.stderr.hasPrefix("icy-sniff: 10 packets"), "\(again.stderr)")
        let several = try CLI.run(["-r", capture, "-r", CLI.capture("h2c-sample.pcap"), "-w", saved, "--no-join"])
        #expect(several.status == 64, "\(several.stderr)")
    }

    /// A capture whose last record is cut short: that record is analysed (its tail a gap), and
    /// `-w` saves it too, so the saved capture gives the same transactions.
    @Test func writeKeepsTheCutLastRecord() throws {
        let dir = CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let plain = dir.appendingPathComponent("cut.pcap").path
        let unzip = Process()
        unzip.executableURL = URL(fileURLWithPath: "/bin/sh")
        unzip.arguments = ["-c", "gzip -dc '\(CLI.corpus("pcap2har/out-of-order.pcap.gz"))' > '\(plain)'"]
        try unzip.run(); unzip.waitUntilExit()
        let saved = dir.appendingPathComponent("saved.pcap").path
        let first = try CLI.run(["-r", plain, "-w", saved, "--format", "tsv"])
        #expect(first.stderr.contains("3215 packets, 46 TCP connections, 288 HTTP transactions"), "\(first.stderr)")
        let again = try CLI.run(["-r", saved, "--format", "tsv"])
        #expect(again.stderr.contains("3215 packets, 46 TCP connections, 288 HTTP transactions"), "\(again.stderr)")
        #expect(again.text == first.text)
    }
}

/// `-V`: each transaction's request and response heads as sent (issue 19, as tshark -V details
/// a packet), secrets redacted unless --keep-secrets.
@Suite struct HeadsViewTests {
    @Test func headsOfEveryTransaction() throws {
        let r = try CLI.run(["-r", CLI.capture("nginx-cache-demo.pcap.gz"), "-V", "-q"])
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.filter { $0.hasPrefix("── ") }.count == 12)
        #expect(lines.contains("GET /page.html HTTP/1.1") && lines.contains("Host: 127.0.0.1:18080"))
        #expect(lines.contains("HTTP/1.1 304 Not Modified") && lines.contains("[body: 113 bytes, 1882 decoded]"))
        #expect(lines.contains { $0.hasPrefix("── ") && $0.contains("cache: AVOIDABLE") })
        // The same as --format heads; refused with --connections.
        #expect(try CLI.run(["-r", CLI.capture("nginx-cache-demo.pcap.gz"), "--format", "heads", "-q"]).text == r.text)
        #expect(try CLI.run(["-r", CLI.capture("nginx-cache-demo.pcap.gz"), "-V", "--connections"]).status == 64)
    }

    @Test func secretsAreRedactedUnlessKept() throws {
        let capture = CLI.corpus("zeek/pipelined-requests.pcap")
        let cookies = { (extra: [String]) in
            try CLI.run(["-r", capture, "-V", "-q"] + extra).text.split(separator: "\n").filter { $0.hasPrefix("Cookie: ") }
        }
        let redacted = try cookies([]), kept = try cookies(["--keep-secrets"])
        #expect(!redacted.isEmpty && redacted.count == kept.count)
        #expect(redacted != kept, "cookie values are redacted by default")
    }
}
