import Foundation
import Testing

/// -G, -C and -W (tcpdump's rotation) for the transaction outputs and for -w, read from a file so
/// the periods come from packet times: every rotated file is complete and valid on its own, and
/// together they hold exactly what the unrotated run writes.
@Suite struct RotationTests {
    /// 287 transactions over 48 s of packet time (3214 packets).
    static let capture = CLI.corpus("pcap2har/out-of-order.pcap.gz")
    static let utc = ["TZ": "UTC"]

    func files(_ dir: URL, prefix: String) throws -> [URL] {
        try FileManager.default.contentsOfDirectory(at: dir, includingPropertiesForKeys: nil)
            .filter { $0.lastPathComponent.hasPrefix(prefix) }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }

    func lines(_ url: URL) throws -> [String] {
        try String(contentsOf: url, encoding: .utf8).split(separator: "\n").map(String.init)
    }

    @Test func byTimeEachPeriodIsAFileAndTheyAddUpToTheUnrotatedRun() throws {
        let dir = CLI.temporaryDirectory()
        let whole = try CLI.run(["-r", Self.capture, "--format", "tsv", "-q"])
        let wholeRows = whole.text.split(separator: "\n").map(String.init)
        try #require(wholeRows.count == 288)

        let r = try CLI.run(["-r", Self.capture, "--format", "tsv", "-q", "-G", "10", "-o", dir.appendingPathComponent("http-%H%M%S.tsv").path],
                            environment: Self.utc)
        #expect(r.status == 0, "\(r.stderr)")
        let rotated = try files(dir, prefix: "http-")
        // Packet times 13:18:38 to 13:19:28: the 10 s periods from 13:18:30 to 13:19:20.
        #expect(rotated.map(\.lastPathComponent) == ["131830", "131840", "131850", "131900", "131910", "131920"].map { "http-\($0).tsv" })
        var rows: [String] = []
        for file in rotated {
            let content = try lines(file)
            // Each file is a table of its own: the header first.
            #expect(content.first == wholeRows[0], "\(file.lastPathComponent)")
            rows += content.dropFirst()
            // A transaction is in the file of the period in which it completed, so it started
            // before that period's end.
            let name = file.deletingPathExtension().lastPathComponent.dropFirst(5)
            let end = "2011-05-02T\(name.prefix(2)):\(name.dropFirst(2).prefix(2)):\(name.suffix(2))"
            for row in content.dropFirst() {
                let started = String(row.prefix(19))
                #expect(started < Self.plus10(end), "\(row.prefix(40)) in \(file.lastPathComponent)")
            }
        }
        #expect(rows.sorted() == wholeRows.dropFirst().sorted())
    }

    static func plus10(_ iso: String) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withFullDate, .withTime, .withColonSeparatorInTime, .withDashSeparatorInDate]
        let date = f.date(from: iso + "Z")!.addingTimeInterval(10)
        return String(f.string(from: date).prefix(19))
    }

    @Test func aHARPerPeriodEachValidTheEntriesAddUp() throws {
        let dir = CLI.temporaryDirectory()
        let whole = try CLI.run(["-r", Self.capture, "--har", "-q"])
        let wholeEntries = try Self.entries(whole.stdout)
        let r = try CLI.run(["-r", Self.capture, "--har", "-q", "-G", "20", "-o", dir.appendingPathComponent("h-%H%M%S.har").path],
                            environment: Self.utc)
        #expect(r.status == 0, "\(r.stderr)")
        let hars = try files(dir, prefix: "h-")
        #expect(hars.map(\.lastPathComponent) == ["h-131820.har", "h-131840.har", "h-131900.har", "h-131920.har"])
        var urls: [String] = []
        for file in hars {
            let data = try Data(contentsOf: file)
            let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            let log = try #require(object["log"] as? [String: Any])
            #expect(log["version"] as? String == "1.2")
            let entries = try Self.entries(data)
            #expect(!entries.isEmpty)
            // Every page an entry names is in the same file.
            let pages = Set((log["pages"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String })
            #expect(entries.allSatisfy { ($0["pageref"] as? String).map(pages.contains) ?? true })
            urls += entries.map { ($0["request"] as! [String: Any])["url"] as! String }
        }
        #expect(urls.sorted() == wholeEntries.map { ($0["request"] as! [String: Any])["url"] as! String }.sorted())
    }

    static func entries(_ data: Data) throws -> [[String: Any]] {
        let object = try JSONSerialization.jsonObject(with: data) as! [String: Any]
        return (object["log"] as! [String: Any])["entries"] as! [[String: Any]]
    }

    @Test func bySizeFilesReachTheLimitAndTheRingKeepsTheNewest() throws {
        let dir = CLI.temporaryDirectory()
        let whole = try CLI.run(["-r", Self.capture, "--format", "ndjson", "-q"]).text.split(separator: "\n").map(String.init)
        // -C 20k: 20,480 bytes.
        let r = try CLI.run(["-r", Self.capture, "--format", "ndjson", "-q", "-C", "20k", "-o", dir.appendingPathComponent("x.ndjson").path])
        #expect(r.status == 0, "\(r.stderr)")
        let names = try files(dir, prefix: "x.").map(\.lastPathComponent)
        let expectedNames = ["x.ndjson"] + (1..<names.count).map { "x.\($0).ndjson" }
        #expect(names.sorted() == expectedNames.sorted())
        #expect(names.count > 5)
        var rows: [String] = []
        for (i, name) in expectedNames.enumerated() {
            let url = dir.appendingPathComponent(name)
            let size = try FileManager.default.attributesOfItem(atPath: url.path)[.size] as! Int
            // Every file but the last reached the limit; none went on after it by more than a row.
            if i < expectedNames.count - 1 { #expect(size >= 20_480, "\(name): \(size)") }
            let content = try lines(url)
            #expect(size - (content.last?.utf8.count ?? 0) - 1 < 20_480, "\(name)")
            rows += content
        }
        // In order: file by file, the rows of the unrotated run.
        #expect(rows == whole)

        // -W 3: the three newest files stay, holding the last rows.
        let ring = CLI.temporaryDirectory()
        let w = try CLI.run(["-r", Self.capture, "--format", "ndjson", "-q", "-C", "20k", "-W", "3", "-o", ring.appendingPathComponent("x.ndjson").path])
        #expect(w.status == 0, "\(w.stderr)")
        let kept = try files(ring, prefix: "x.").map(\.lastPathComponent)
        #expect(kept.sorted() == expectedNames.suffix(3).sorted())
        let keptRows = try expectedNames.suffix(3).flatMap { try lines(ring.appendingPathComponent($0)) }
        #expect(keptRows == Array(whole.suffix(keptRows.count)))
    }

    @Test func packetsRotateTooAndReadBackAsTheSameTraffic() throws {
        let dir = CLI.temporaryDirectory()
        let whole = try CLI.run(["-r", Self.capture, "--format", "tsv"])
        let r = try CLI.run(["-r", Self.capture, "--format", "tsv", "-G", "10", "-w", dir.appendingPathComponent("p-%H%M%S.pcap").path],
                            environment: Self.utc)
        #expect(r.status == 0, "\(r.stderr)")
        let pieces = try files(dir, prefix: "p-")
        #expect(pieces.count == 6)
        // Every packet read is in one piece, and the pieces read as one stream give the same
        // transactions.
        let again = try CLI.run(pieces.flatMap { ["-r", $0.path] } + ["--format", "tsv"])
        #expect(again.text == whole.text.replacingOccurrences(of: Self.capture, with: ""), "\(again.stderr)")
        #expect(again.stderr.contains("3214 packets,"), "\(again.stderr)")
        #expect(whole.stderr.contains("3214 packets,"))
    }

    @Test func aNameThatIsTakenIsNeverOverwritten() throws {
        let dir = CLI.temporaryDirectory()
        let path = dir.appendingPathComponent("same.ndjson")
        try "kept\n".write(to: path, atomically: false, encoding: .utf8)
        // No time format in the name: each period's file takes the next free number, and the file
        // that was there before is kept.
        let r = try CLI.run(["-r", Self.capture, "--format", "ndjson", "-q", "-G", "10", "-o", path.path], environment: Self.utc)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try String(contentsOf: path, encoding: .utf8) == "kept\n")
        let names = try files(dir, prefix: "same.").map(\.lastPathComponent).sorted()
        #expect(names == ["same.1.ndjson", "same.2.ndjson", "same.3.ndjson", "same.4.ndjson", "same.5.ndjson", "same.6.ndjson", "same.ndjson"])
    }

    @Test func misuseIsOneLineAndExit64() throws {
        let cases: [([String], String)] = [
            (["-r", Self.capture, "-W", "3", "-o", "/tmp/x.tsv"], "-W keeps a ring"),
            (["-r", Self.capture, "-G", "60"], "give -o FILE"),
            (["-r", Self.capture, "-C", "ten", "-o", "/tmp/x.tsv"], "-C takes a size"),
            (["-r", Self.capture, "-G", "0", "-o", "/tmp/x.tsv"], "-G needs at least 1"),
            (["-r", Self.capture, "-B", "4096"], "-B applies to live capture"),
            (["-r", Self.capture, "--stats", "0"], "--stats needs"),
        ]
        for (arguments, text) in cases {
            let r = try CLI.run(arguments)
            #expect(r.status == 64, "\(arguments)")
            #expect(r.stderr.contains(text), "\(arguments): \(r.stderr)")
        }
        // A directory that is not there: said before anything is read, exit 3.
        let r = try CLI.run(["-r", Self.capture, "-G", "10", "-o", "/nonexistent-dir/x-%H.tsv"])
        #expect(r.status == 3 && r.stderr.contains("cannot write '/nonexistent-dir/"), "\(r.stderr)")
    }

    @Test func statsLinesWhileReadingFiles() throws {
        // --stats on a file run: at least the figures a live line has, minus the drops.
        let r = try CLI.run(["-r", CLI.corpus("zeek/1000-requests-one-dropped-response.pcap.gz"), "-q", "--stats", "0.001", "--format", "tsv"])
        #expect(r.status == 0)
        let stats = r.stderr.split(separator: "\n").filter { $0.contains(": stats ") }
        #expect(!stats.isEmpty, "\(r.stderr)")
        #expect(stats.allSatisfy { $0.contains(" packets (+") && $0.contains("connections open") && $0.contains("MiB resident") })
    }
}
