import Foundation
import Testing

/// `icy-sniff diff` on two real loads of the same site (Tests/Fixtures/diff, recorded with
/// scripts/record-diff-sample from nginx and curl): what was added, removed, fetched again, its
/// cache verdict and size; the API's cache-busting timestamp does not make it a new request; a
/// HAR or NDJSON side compares as its capture does.
@Suite struct DiffTests {
    static let before = CLI.packageRoot.appendingPathComponent("Tests/Fixtures/diff/before.pcap").path
    static let after = CLI.packageRoot.appendingPathComponent("Tests/Fixtures/diff/after.pcap").path

    static func json(_ a: String, _ b: String) throws -> [String: Any] {
        let r = try CLI.run(["diff", a, b, "--format", "json"])
        #expect(r.status == 0, "\(r.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any])
    }

    static func urls(_ d: [String: Any], _ key: String) -> [String] {
        ((d[key] as? [[String: Any]]) ?? []).compactMap { ($0["url"] as? String).map { String($0.split(separator: "/", maxSplits: 2).last ?? "") } }
    }

    @Test func whatChangedBetweenTwoLoads() throws {
        let d = try Self.json(Self.before, Self.after)
        #expect(Self.urls(d, "added") == ["static/app.js"])
        #expect(Self.urls(d, "removed") == ["static/logo.png"])
        #expect(Self.urls(d, "countChanged") == ["static/app.css"])
        #expect(Self.urls(d, "cacheChanged") == ["static/app.css"])
        #expect(Set(Self.urls(d, "sizeChanged")) == ["page.html", "static/app.css"], "gzip on the second load")
        let added = try #require((d["added"] as? [[String: Any]])?.first?["after"] as? [String: Any])
        #expect(added["statuses"] as? [String: Int] == ["404": 1])
        let css = try #require((d["cacheChanged"] as? [[String: Any]])?.first)
        #expect((css["after"] as? [String: Any])?["verdicts"] as? [String: Int] == ["fresh": 1, "avoidable": 1])
        #expect((d["totalsAfter"] as? [String: Any])?["avoidable"] as? Int == 1)
        let all = ["added", "removed", "countChanged", "statusChanged", "cacheChanged", "sizeChanged"].flatMap { Self.urls(d, $0) }
        #expect(!all.contains { $0.hasPrefix("api/data.json") }, "the ts= cache buster is masked: the same request")
        let text = try CLI.run(["diff", Self.before, Self.after])
        #expect(text.text.contains("requests 4 → 5 (+1)") && text.text.contains("1 → 2 times") && text.text.contains("fresh → avoidable, fresh"), "\(text.text)")
    }

    @Test func aHAROrNDJSONSideComparesAsItsCapture() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("icy-diff-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let har = dir.appendingPathComponent("before.har").path, nd = dir.appendingPathComponent("after.ndjson").path
        #expect(try CLI.run(["-r", Self.before, "--har", "-o", har, "--quiet"]).status == 0)
        #expect(try CLI.run(["-r", Self.after, "--format", "ndjson", "-o", nd, "--quiet"]).status == 0)
        let same = try Self.json(Self.before, har)
        for key in ["added", "removed", "countChanged", "statusChanged", "cacheChanged", "sizeChanged"] {
            #expect((same[key] as? [Any])?.isEmpty == true, "\(key): a capture and its own HAR")
        }
        let fromFiles = try Self.json(har, nd), fromCaptures = try Self.json(Self.before, Self.after)
        for key in ["added", "removed", "countChanged", "cacheChanged", "sizeChanged"] {
            #expect(Self.urls(fromFiles, key) == Self.urls(fromCaptures, key), "\(key)")
        }
    }

    @Test func anUnreadableSideIsOneLineAndExit2() throws {
        let r = try CLI.run(["diff", Self.before, "/nonexistent/after.pcap"])
        #expect(r.status == 2)
        #expect(r.stderr.split(separator: "\n").count == 1 && r.stderr.contains("/nonexistent/after.pcap"), "\(r.stderr)")
        let junk = FileManager.default.temporaryDirectory.appendingPathComponent("icy-diff-junk-\(getpid()).ndjson").path
        try Data("{\"not\": \"a transaction\"}\n".utf8).write(to: URL(fileURLWithPath: junk))
        defer { unlink(junk) }
        let bad = try CLI.run(["diff", Self.before, junk])
        #expect(bad.status == 2 && bad.stderr.contains("line 1"), "\(bad.stderr)")
    }

    /// Sides read as they stream: FIFOs (each opened once: a capture through a FIFO hung, the
    /// FIFO opened twice), a HAR and an NDJSON through them, a line too long for a row said with
    /// its number (a 50 MB line was taken for a transaction), a HAR entry past its cap counted.
    @Test(.hangLimit)
    func sidesStreamThroughFIFOsAndLinesHaveACap() throws {
        let dir = CLI.temporaryDirectory()
        let har = dir.appendingPathComponent("before.har").path, nd = dir.appendingPathComponent("after.ndjson").path
        #expect(try CLI.run(["-r", Self.before, "--har", "-o", har, "--quiet"]).status == 0)
        #expect(try CLI.run(["-r", Self.after, "--format", "ndjson", "-o", nd, "--quiet"]).status == 0)
        let expected = try Self.json(Self.before, Self.after)
        for (a, b) in [(Self.before, Self.after), (har, nd)] {
            let r = try CLI.run(["-c", "\"$0\" diff <(cat \"$1\") <(cat \"$2\") --format json", CLI.binary, a, b], executable: "/bin/bash")
            #expect(r.status == 0, "\(r.stderr)")
            let d = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any], "\(r.stderr)")
            for key in ["added", "removed", "countChanged", "cacheChanged", "sizeChanged"] {
                #expect(Self.urls(d, key) == Self.urls(expected, key), "\(a) through a FIFO: \(key)")
            }
        }
        let long = dir.appendingPathComponent("long.ndjson")
        var text = try String(contentsOfFile: nd, encoding: .utf8)
        text += "{\"url\":\"http://a.test/\(String(repeating: "x", count: 2 << 20))\"}\n"
        try text.write(to: long, atomically: true, encoding: .utf8)
        let r = try CLI.run(["diff", Self.before, long.path])
        let rows = text.split(separator: "\n").count
        #expect(r.status == 2 && r.stderr.contains("line \(rows) is longer than 1 MiB"), "\(r.stderr)")
    }

    /// Two phones in one hotspot capture (two-phones.pcap: the two loads with their clients set
    /// to 10.0.0.5 and 10.0.0.7): compared device against device, they differ as the loads do;
    /// each phone's cache is its own (the second phone's first style sheet is not avoidable).
    @Test func twoDevicesOfOneCapture() throws {
        let capture = CLI.packageRoot.appendingPathComponent("Tests/Fixtures/diff/two-phones.pcap").path
        let r = try CLI.run(["diff", capture, capture, "--client-before", "10.0.0.5", "--client-after", "10.0.0.7", "--format", "json"])
        #expect(r.status == 0, "\(r.stderr)")
        let phones = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any])
        let loads = try Self.json(Self.before, Self.after)
        for key in ["added", "removed", "countChanged", "cacheChanged", "sizeChanged"] {
            #expect(Self.urls(phones, key) == Self.urls(loads, key), "\(key)")
        }
        #expect(phones["after"] as? String == "\(capture) (client 10.0.0.7)")
        let same = try CLI.run(["diff", capture, capture, "--client", "10.0.0.0/24", "--format", "json"])
        let d = try #require(try JSONSerialization.jsonObject(with: same.stdout) as? [String: Any])
        #expect((d["added"] as? [Any])?.isEmpty == true && (d["totalsBefore"] as? [String: Any])?["requests"] as? Int == 9)
        let bad = try CLI.run(["diff", capture, capture, "--client", "10.0.0.5", "--client-after", "10.0.0.7"])
        #expect(bad.status == 64)
        let report = try CLI.run(["report", "-r", capture])
        #expect(report.text.contains("  10.0.0.7") && report.text.contains("device"), "\(report.text)")
    }
}
