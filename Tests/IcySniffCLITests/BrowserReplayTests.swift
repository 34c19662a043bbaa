import Foundation
import Testing

/// A page replayed offline in a real browser from icy-sniff's HAR (issue 19): Debian's Chromium,
/// driven by Playwright, loads a page from nginx while tcpdump records it; icy-sniff makes the HAR
/// with --bodies; with nginx stopped, Chromium replays the page from the HAR alone
/// (route_from_har, nothing from the network) and the screenshots must be identical, the style
/// sheet served from the HAR, and a replay without its entry must lose the style
/// (scripts/har-replay-check). The same for captures/nginx-cache-demo.pcap.gz against a live load
/// of its page from nginx.
@Suite struct BrowserReplayTests {
    static var hasBrowser: Bool {
        Unchecked.note(FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium")
            && (try? CLI.run(["python3", "-c", "import playwright.sync_api"], executable: "/usr/bin/env").status) == 0,
                       "the HAR replay in Chromium (chromium, python playwright)")
    }

    @Test(.enabled(if: CLI.isRoot, "tcpdump on the loopback needs root"),
          .enabled(if: BrowserReplayTests.hasBrowser || ProcessInfo.processInfo.environment["CI"] != nil,
                   "chromium or playwright is not installed (scripts/install-deps installs them)"),
          .hangLimit)
    func pageReplaysOfflineFromTheHAR() throws {
        let r = try CLI.run(["python3", CLI.packageRoot.appendingPathComponent("scripts/har-replay-check").path, CLI.binary, "18096"],
                            executable: "/usr/bin/env")
        #expect(r.status == 0, "\(r.text) \(r.stderr)")
        let line = try #require(r.text.split(separator: "\n").last, "\(r.stderr)")
        let figures = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(figures["screenshotsIdentical"] as? Bool == true)
        #expect((figures["servedFromHAR"] as? [String])?.contains { $0.hasSuffix("/static/app.css") } == true)
        #expect(figures["replayColor"] as? String == figures["liveColor"] as? String)
        #expect(figures["colorWithoutCSS"] as? String != figures["liveColor"] as? String)
        // The sample capture of captures/ (curl's traffic, recorded earlier), replayed from its HAR.
        let sample = try #require(figures["sample"] as? [String: Any])
        #expect(sample["screenshotsIdentical"] as? Bool == true && sample["replayStatus"] as? Int == 200)
    }
}
