import Foundation
import Testing

/// HARs every reader loads (issue 19): the HAR of every capture the repository has (the corpus
/// copies in Tests/Fixtures and captures/), with and without `--bodies`, loaded by haralyzer
/// (with serverAddress), har2tree, mitmproxy and har2warc through scripts/check-har-readers.
/// Each HAR with entries has a page (har2tree needs `pages[0]`).
///
/// The readers come from PyPI (scripts/install-deps installs them); one that is missing is
/// skipped by the script and named, except under CI, where all must be there.
@Suite struct HARReadersTests {
    @Test(.hangLimit)
    func everyReaderLoadsEveryHAR() throws {
        let dir = CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let fm = FileManager.default
        var captures: [String] = []
        for folder in ["Tests/Fixtures/corpus/zeek", "Tests/Fixtures/corpus/pcap2har", "captures"] {
            let path = CLI.packageRoot.appendingPathComponent(folder).path
            for name in try fm.contentsOfDirectory(atPath: path).sorted() where name.contains(".pcap") && !name.hasSuffix(".har") {
                captures.append("\(path)/\(name)")
            }
        }
        #expect(captures.count >= 25)
        var files: [String] = []
        for (i, capture) in captures.enumerated() {
            let keys = capture.replacingOccurrences(of: ".pcap", with: ".keys")
            let keyLog = fm.fileExists(atPath: keys) ? ["--keylog", keys] : []
            for bodies in [false, true] {
                let out = dir.appendingPathComponent("\(i)\(bodies ? "-bodies" : "").har").path
                let r = try CLI.run(["-r", capture, "--har", "-o", out, "--quiet"] + (bodies ? ["--bodies"] : []) + keyLog)
                #expect(r.status == 0, "\(capture): \(r.stderr)")
                let data = try Data(contentsOf: URL(fileURLWithPath: out))
                let log = try #require((try JSONSerialization.jsonObject(with: data) as? [String: Any])?["log"] as? [String: Any])
                let entries = log["entries"] as? [[String: Any]] ?? []
                let pages = log["pages"] as? [[String: Any]] ?? []
                if !entries.isEmpty {
                    #expect(!pages.isEmpty, "\(capture): entries but no page")
                    let ids = Set(pages.compactMap { $0["id"] as? String })
                    #expect(entries.allSatisfy { ($0["pageref"] as? String).map(ids.contains) == true }, "\(capture)")
                }
                files.append(out)
            }
        }
        let r = try CLI.run(["python3", CLI.packageRoot.appendingPathComponent("scripts/check-har-readers").path] + files,
                            executable: "/usr/bin/env")
        #expect(r.status == 0, "\(r.text.suffix(3000)) \(r.stderr.suffix(2000))")
        #expect(r.text.contains("haralyzer: \(files.count) of \(files.count) loaded"), "\(r.text.suffix(1000))")
        for line in r.text.split(separator: "\n") where line.hasSuffix(": not installed, skipped") {
            _ = Unchecked.note(false, "loading the HARs in \(line.prefix { $0 != ":" })")
        }
        if ProcessInfo.processInfo.environment["CI"] != nil {
            #expect(!r.text.contains("skipped"), "a HAR reader is not installed: \(r.text)")
        }
    }
}
