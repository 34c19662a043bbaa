import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The web view (`--serve`, issue 33) in a real browser: Debian's Chromium driven by Playwright
/// (scripts/webview-check, which says what it does). A file's transactions, filters, search,
/// the detail pane, the waterfall, the exports and a HAR loaded back; encrypted connections as
/// rows; attacker-controlled text shown and never run; the token and the Host check; and, as
/// root, a live capture in network namespaces whose rows appear while it runs.
@Suite struct WebViewTests {
    static var hasBrowser: Bool {
        Unchecked.note(FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium")
            && (try? CLI.run(["python3", "-c", "import playwright.sync_api, scapy, axe_playwright_python"], executable: "/usr/bin/env").status) == 0,
                       "the web view in Chromium (chromium, python playwright, scapy, axe-playwright-python)")
    }

    /// Runs scripts/NAME (python) with the binary, a directory of its own and `extra`, and
    /// answers what it found: the JSON object of its last line. A script that fails fails the test.
    static func findings(of script: String, _ extra: [String] = []) throws -> [String: Any] {
        let r = try CLI.run(["python3", CLI.packageRoot.appendingPathComponent("scripts/\(script)").path,
                             CLI.binary, CLI.temporaryDirectory().path] + extra, executable: "/usr/bin/env")
        try #require(r.status == 0, "\(r.text) \(r.stderr)")
        let line = try #require(r.text.split(separator: "\n").last, "\(r.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }

    /// What a user can get wrong: one line each, with the documented exit code.
    @Test func aBadAddressOrABusyPortIsOneLine() throws {
        let sample = CLI.packageRoot.appendingPathComponent("captures/wikipedia.pcap").path
        for bad in ["abc", "70000", "[::1]8080"] {
            let r = try CLI.run(["-r", sample, "--serve", bad])
            #expect(r.status == 64 && r.stderr.contains("--serve takes PORT or ADDR:PORT"), "\(bad): \(r.stderr)")
        }
        let r = try CLI.run(["-r", sample, "--serve", "8080", "--out-dir", CLI.temporaryDirectory().path])
        #expect(r.status == 64 && r.stderr.contains("--serve shows one run"), "\(r.stderr)")
        // A port another program listens on.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try withUnsafeMutablePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                try #require(bind(fd, sa, length) == 0 && listen(fd, 1) == 0 && getsockname(fd, sa, &length) == 0)
            }
        }
        let port = Int(UInt16(bigEndian: address.sin_port))
        let busy = try CLI.run(["-r", sample, "--serve", "\(port)"])
        #expect(busy.status == 3, "\(busy.stderr)")
        let lines = busy.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].contains("cannot listen on 127.0.0.1:\(port): Address already in use"), "\(busy.stderr)")
    }

    /// A browser that does not read its event stream never holds the run up: with 60,000
    /// transactions (60,002 records) and a reader that reads nothing until the run has read the
    /// capture to the end, the run ends, the reader gets what the socket held, then an
    /// `event: skipped` saying how many records it missed and from where (one for each time it
    /// fell more than 20,000 records behind), then the newest
    /// records and the final status; nothing is lost without being said
    /// (scripts/webview-slow-client, about 20 s with the debug binary).
    @Test(.hangLimit)
    func aReaderThatDoesNotReadSkipsAndIsTold() throws {
        let facts = try Self.findings(of: "webview-slow-client")
        let status = try #require(facts["status"] as? [[String: Any]])
        let final = try #require(status.last)
        #expect(final["running"] as? Bool == false && final["records"] as? Int == 60_002, "\(status)")
        #expect(facts["readBefore"] as? Int == 0)
        let skipped = try #require(facts["skipped"] as? [[String: Int]])
        let gaps = try #require(facts["gaps"] as? [[Int]])
        // Each skip is said once, where the sequence numbers jump: to the record after `at`;
        // `skipped` counts since the stream opened (what the page shows).
        try #require(!skipped.isEmpty && skipped.count == gaps.count, "\(skipped) \(gaps)")
        var before = 0
        for (skip, gap) in zip(skipped, gaps) {
            let missed = skip["skipped"]! - before
            before = skip["skipped"]!
            #expect(missed > 20_000, "more than EventStream.maxBacklog behind: \(skip)")
            #expect(gap[1] == skip["at"]! + 1 && gap[1] - gap[0] - 1 == missed, "\(gaps) \(skipped)")
        }
        // Every record is either received or counted as skipped, the last one received.
        #expect((facts["received"] as? Int ?? 0) + before == 60_002)
        #expect(facts["firstSeq"] as? Int == 1 && facts["lastSeq"] as? Int == 60_002)
    }

    /// Any page the user visits can make the browser send requests to the view (issue 51): every
    /// route with hostile numbers, rebinding Host names, another site's requests, bodies where
    /// none belong, 1,000 clients that never read and 100 unfinished uploads, and (with Chromium)
    /// a page on another origin that asks with <img>, <script>, fetch and EventSource
    /// (scripts/webview-hostile, about 90 s with the debug binary). Before: `after` past Int.max
    /// killed the run, `127.0.0.1.nip.io` read the whole API, and the clients took 800 MB.
    @Test(.hangLimit)
    func theServerLivesThroughHostileRequests() throws {
        let all = try Self.findings(of: "webview-hostile", WebViewTests.hasBrowser ? ["--browser"] : [])
        let params = try #require(all["params"] as? [String: Any])
        #expect((params["failures"] as? [Any])?.isEmpty == true, "5xx or a dead server: \(params["failures"] ?? "")")
        #expect((params["requests"] as? Int ?? 0) > 100)
        #expect(params["huge"] as? Int == 400 && params["negative"] as? Int == 400 && params["repeated"] as? Int == 400)
        #expect(params["limitHuge"] as? Int == 200, "a limit above 50,000 is cut to it, as documented")
        let host = try #require(all["host"] as? [String: Int])
        for name in ["127.0.0.1.nip.io", "127.attacker.example", "[::1].evil", "localhost.attacker.example", "evil.example", "otherPort", "noPort"] {
            #expect(host[name] == 403, "Host \(name): \(host[name] ?? 0)")
        }
        for name in ["127.0.0.1", "localhost", "ipv6"] { #expect(host[name] == 200, "Host \(name): \(host[name] ?? 0)") }
        #expect(host["twoHosts"] == 400)
        let site = try #require(all["site"] as? [String: Int])
        #expect(site["crossSiteNoCors"] == 403 && site["sameSiteCors"] == 403, "\(site)")
        #expect(site["crossSiteLink"] == 200 && site["ownPage"] == 200, "a link to the page and the page itself: \(site)")
        let bodies = try #require(all["bodies"] as? [String: Int])
        #expect(bodies["getWithBody"] == 413 && bodies["postElsewhere"] == 405 && bodies["exportTooLarge"] == 413, "\(bodies)")
        #expect(bodies["export"] == 200 && (bodies["exportRows"] ?? 0) >= 1, "\(bodies)")
        let head = try #require(all["head"] as? [String: Int])
        #expect(head["status"] == 200 && (head["length"] ?? 0) > 1000 && head["body"] == 0, "\(head)")
        #expect(all["aliveAfterRequests"] as? Bool == true)
        let memory = try #require(all["memory"] as? [String: Any])
        let before = memory["beforeKiB"] as? Int ?? 0, during = memory["duringKiB"] as? Int ?? .max
        #expect(memory["clients"] as? Int == 1100 && memory["aliveAfter"] as? Bool == true, "\(memory)")
        #expect(during - before < 32 << 10, "1,000 clients that never read and 100 uploads grew the server by \(during - before) KiB")
        if let browser = all["browser"] as? [String: Any] {
            #expect(browser["cors"] as? String == "blocked", "another origin read the API: \(browser)")
            #expect(browser["noCorsBody"] == nil || browser["noCorsBody"] as? String == "", "\(browser)")
            #expect(browser["event"] == nil, "another origin read the event stream: \(browser)")
            #expect(browser["imageWidth"] as? Int == 0)
            #expect(all["aliveAfterBrowser"] as? Bool == true)
        }
        #expect(all["exit"] as? Int == 0)
    }

    /// With an NDJSON output beside it, the feed takes the output's row instead of encoding it
    /// again (`FeedSink.sharedRow`): the API's rows must be the file's, row for row, and the
    /// same as `--serve` alone gives.
    @Test(.hangLimit)
    func theRowsOfAnNDJSONOutputAreTheFeedsRows() throws {
        let dir = CLI.temporaryDirectory()
        let file = dir.appendingPathComponent("out.ndjson")
        let sample = CLI.capture("wikipedia.pcap")
        func served(_ extra: [String]) throws -> [NSDictionary] {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: CLI.binary)
            process.arguments = ["-r", sample, "--serve", "127.0.0.1:0"] + extra
            let errors = Pipe()
            process.standardError = errors
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            defer { process.interrupt(); process.waitUntilExit() }
            var text = "", url: String? = nil
            while !text.contains("read to the end") {
                let data = errors.fileHandleForReading.availableData
                if data.isEmpty { break }
                text += String(decoding: data, as: UTF8.self)
            }
            if let r = text.range(of: #"http://127\.0\.0\.1:[0-9]+/"#, options: .regularExpression) { url = String(text[r]) }
            let base = try #require(url, "\(text)")
            let r = try CLI.run(["-s", base + "api/records?after=0&limit=5000"], executable: "/usr/bin/curl")
            let answer = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any], "\(r.text)")
            let records = answer["records"] as? [[String: Any]] ?? []
            return records.filter { $0["kind"] as? String == "transaction" }.compactMap { $0["data"] as? NSDictionary }
        }
        let shared = try served(["--format", "ndjson", "-o", file.path])
        let rows = try String(contentsOf: file, encoding: .utf8).split(separator: "\n").map {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as! NSDictionary
        }
        #expect(rows.count == 15 && shared == rows, "\(shared.count) rows served, \(rows.count) in the file")
        #expect(try served([]) == rows)
    }

    @Test(.enabled(if: WebViewTests.hasBrowser || ProcessInfo.processInfo.environment["CI"] != nil,
                   "chromium, playwright, scapy or axe-playwright-python is not installed (scripts/install-deps installs them)"),
          .hangLimit)
    func theWebViewShowsWhatTheFilesHold() throws {
        let all = try Self.findings(of: "webview-check", CLI.isRoot ? ["--live"] : [])

        // captures/wikipedia.pcap: the rows are the NDJSON output's, in its order.
        let file = try #require(all["file"] as? [String: Any])
        #expect(file["rows"] as? Int == file["expected"] as? Int && (file["expected"] as? Int ?? 0) > 10)
        #expect(file["urls"] as? [String] == file["expectedUrls"] as? [String])
        for (got, expected) in [("stylesheets", "expectedStylesheets"), ("wikinews", "expectedWikinews"),
                                ("headerSearch", "expectedHeaderSearch"), ("status3xx", "expectedStatus3xx"),
                                ("waterfallRows", "expectedWaterfallRows"), ("exportCount", "expectedExportCount")] {
            #expect(file[got] as? Int == file[expected] as? Int, "\(got): \(file[got] ?? "nil") against \(file[expected] ?? "nil")")
            #expect((file[expected] as? Int ?? 0) > 0, "\(expected) is 0: the check proves nothing")
        }
        #expect(file["hash"] as? String == "#q=Wikinews", "the filter is in the page's address")
        let restored = file["restored"] as? [String: Any]
        #expect(restored?["q"] as? String == "Wikinews" && restored?["shown"] as? Int == file["expectedWikinews"] as? Int)
        #expect(file["detailHasHeaders"] as? Bool == true && file["detailHasTiming"] as? Bool == true && file["detailHasCache"] as? Bool == true)
        // The detail pane open: the list narrows to time, method, URL and status, none cut off
        // (the size, duration, cache and flags columns were, unreachable); closed, all 11 again.
        #expect(file["openColumns"] as? Int == 4 && file["openCut"] as? Int == 0, "\(file["openColumns"] ?? "") columns, \(file["openCut"] ?? "") cut off")
        #expect(file["closedColumns"] as? Int == 11)
        // The keyboard (issue 54): Home, Page Down, End, Up, Home, Down move the selection.
        let keys = file["keys"] as? [String: [Int]] ?? [:], shown = file["shownCount"] as? Int ?? 0, page = file["pageRows"] as? Int ?? 0
        // The drawn rows after the keys' jumps: each at its place with its own row's URL, the
        // selected one alone marked (row elements are lent between rows and written in part).
        let drawnRows = file["drawnRows"] as? [Any] ?? []
        #expect(drawnRows.count == 2 && (drawnRows[0] as? Int ?? 0) > 0 && (drawnRows[1] as? [Any])?.isEmpty == true, "\(drawnRows)")
        #expect(shown > page && page > 1, "\(shown) rows, \(page) a page: the check needs more rows than a page")
        #expect(keys["Home"] == [0, 0] && keys["PageDown"] == [page] && keys["End"] == [shown - 1] && keys["ArrowUp"] == [shown - 2]
                && keys["ArrowDown"] == [1], "\(keys), \(shown) rows, \(page) a page")
        #expect(file["detailOpenBeforeEsc"] as? Bool == true && file["detailOpenAfterEsc"] as? Bool == false, "Esc closes the detail")
        #expect(file["slashFocus"] as? String == "f-q", "/ goes to the search")
        let ring = file["tabRing"] as? [String] ?? []
        #expect(ring.count == 2 && ring[0] == "f-client" && ring[1] != "none", "Tab moves on, and the focus is seen: \(ring)")
        #expect(file["barsWithWidth"] as? Int == file["expectedWaterfallRows"] as? Int)
        #expect(file["zoomWidens"] as? Bool == true)
        #expect(file["exportSameEntries"] as? Bool == true, "the exported HAR holds icy-sniff --har's entries")
        #expect(file["ndjsonSameRows"] as? Bool == true, "the exported NDJSON holds --format ndjson's rows")
        #expect(file["exportPages"] as? [String] == ["page_1"])
        // (ConformanceTests checks the export against the HAR 1.2 validator.)
        #expect(file["reloadedRows"] as? Int == file["expectedExportCount"] as? Int && file["reloadedDetail"] as? Bool == true)
        // Chrome's HAR: a 304's type from _resourceType (not "other" for x-unknown), no ":" for
        // a client it does not name.
        #expect(file["chromeTypes"] as? [String] == ["image", "document"], "\(file["chromeTypes"] ?? "")")
        #expect(file["chromeClientTitles"] as? [String] == ["|", "|"], "\(file["chromeClientTitles"] ?? "")")
        #expect((file["pageErrors"] as? [Any])?.isEmpty == true, "\(file["pageErrors"] ?? "")")
        #expect(file["violations"] as? Int == 0)
        // Copy as cURL (parsed as a shell parses it), as fetch, as HAR, the URL: the entry's.
        let curl = file["curl"] as? [String: Any] ?? [:]
        #expect(curl["program"] as? String == "curl" && curl["url"] as? Bool == true && curl["headers"] as? Bool == true
                && curl["compressed"] as? Bool == true && curl["hostDropped"] as? Bool == true, "\(curl)")
        #expect(file["fetch"] as? Bool == true && file["copiedEntry"] as? Bool == true && file["copiedURL"] as? Bool == true)
        // axe-core's WCAG rules on the list, the detail pane, the waterfall and an opened HAR:
        // none violated (before: landmarks, heading order, a scrollable pane the keyboard could
        // not reach, contrast of the waterfall's labels).
        let axe = file["axe"] as? [String: [String]] ?? [:]
        #expect(Set(axe.keys) == ["list", "detail", "waterfall", "openedHAR"] && axe.values.allSatisfy(\.isEmpty), "\(axe)")
        #expect(file["exit"] as? Int == 0, "Ctrl-C after a file run ends it normally")

        // Encrypted connections without keys: rows of their own.
        let keyless = try #require(all["keyless"] as? [String: [String: Any]])
        for (name, f) in keyless {
            let text = f["text"] as? String ?? ""
            #expect((f["connectionRows"] as? Int ?? 0) >= 1, "\(name)")
            #expect(text.contains(f["sni"] as? String ?? "?") && text.contains("encrypted"), "\(name): \(text)")
        }
        // Durations in ms, as --connections and the HAR write them (they were shown 1000x).
        for (name, f) in keyless {
            let ms = try #require(f["durationMs"] as? Double, "\(name)")
            let cell = f["durationCell"] as? String ?? ""
            let shown = cell.hasSuffix(" ms") ? Double(cell.dropLast(3)) : cell.hasSuffix(" s") ? Double(cell.dropLast(2)).map { $0 * 1000 } : nil
            #expect(shown.map { abs($0 - ms) <= max(0.05 * ms, 0.06) } == true, "\(name): \(cell) for \(ms) ms")
            let detail = f["detail"] as? String ?? ""
            #expect(detail.contains("Estimated without keys") && detail.contains(cell), "\(name): \(detail)")
            #expect((f["text"] as? String ?? "").contains("≈ "), "\(name): the estimate in the row")
        }
        // The exchanges estimated from records: a row each, as many as NDJSON's `inferred` rows;
        // one's detail has its connection's waterfall, a bar per exchange, and no axe violation.
        for (name, f) in keyless {
            let estimates = f["ndjsonEstimates"] as? Int ?? -1
            #expect(estimates > 0 && f["estimateRows"] as? Int == estimates, "\(name): \(f["estimateRows"] ?? "") rows for \(estimates)")
            #expect((f["count"] as? String ?? "").contains("\(estimates) estimated exchanges"), "\(name): \(f["count"] ?? "")")
            #expect((f["connectionEstimates"] as? Int ?? 0) > 0 && f["waterfallRows"] as? Int == f["connectionEstimates"] as? Int,
                    "\(name): \(f["waterfallRows"] ?? "") bars for \(f["connectionEstimates"] ?? "")")
            let detail = f["estimateDetail"] as? String ?? ""
            let first = f["firstEstimate"] as? [String: Any] ?? [:]
            #expect(detail.contains("Request bytes\t\(first["request_bytes"] ?? "?")"), "\(name): \(detail)")
            #expect(detail.contains("Estimated without keys") && !detail.contains("Status"), "\(name): \(detail)")
            #expect((f["axe"] as? [String])?.isEmpty == true, "\(name): \(f["axe"] ?? "")")
        }
        // Devices by link-layer address (captures/hotspot-sample.pcap): a choice each, named as
        // the phone named itself (the record script's truth), and one chosen shows its requests
        // over IPv4 and IPv6 alike, each row's client cell with its name.
        let devices = try #require(all["devices"] as? [String: Any])
        let phones = devices["phones"] as? [[String: Any]] ?? []
        #expect(Set(devices["choices"] as? [String] ?? []) == Set(phones.compactMap { $0["mac"] as? String }), "\(devices)")
        let labels = devices["labels"] as? [String: String] ?? [:]
        // A HAR of the capture opened in the page: its log._devices names the phones the same way.
        #expect(devices["harLabels"] as? [String: String] == labels, "\(devices["harLabels"] ?? "")")
        for phone in phones {
            let mac = phone["mac"] as? String ?? "?", name = (phone["names"] as? [String])?.first ?? "?"
            #expect(labels[mac] == "\(name) (\(mac))", "\(labels)")
            #expect(phone["cells"] as? [String] == [name], "\(phone)")
            #expect(phone["shown"] as? Int == phone["requests"] as? Int, "\(phone)")
            #expect((phone["clients"] as? [String] ?? []).contains { $0.contains(":") } && (phone["clients"] as? [String] ?? []).contains { $0.contains(".") }, "\(phone)")
        }
        // The search box's filter syntax, as DevTools has it (status-code:, domain: globs, method:,
        // mime-type:, resource-type:, larger-than:, has-response-header: and has-request-header:
        // asked of the server, -negation, /regex/): each query shows the rows the capture's NDJSON
        // rows and HAR entries say it should; completion offers keys and the values seen.
        let query = try #require(all["query"] as? [String: Any])
        var expectedCounts: Set<Int> = []
        for capture in ["nginx-cache-demo.pcap.gz", "wikipedia.pcap"] {
            let cases = query[capture] as? [String: [String: Int]] ?? [:]
            #expect(cases.count >= 3, "\(capture): \(query)")
            for (q, c) in cases {
                #expect(c["expected"] != nil && c["shown"] == c["expected"], "\(capture) \(q): \(c)")
                expectedCounts.insert(c["expected"] ?? -1)
            }
        }
        #expect(expectedCounts.count >= 6, "queries that tell rows apart: \(expectedCounts)")
        #expect((query["hash"] as? String)?.contains("q=status-code:200") == true, "\(query["hash"] ?? "")")
        let complete = query["complete"] as? [String: [String]] ?? [:]
        #expect(complete["stat"] == ["status-code:"] && complete["status-code:200 -me"] == ["status-code:200 -method:"], "\(complete)")
        #expect(complete["method:"] == ["method:GET", "method:HEAD", "method:POST"], "\(complete)")
        #expect((query["axe"] as? [String])?.isEmpty == true, "\(query["axe"] ?? "")")
        // Columns: one hidden from the menu goes from the header and the rows; a header's edge
        // dragged 60 px widens header and cells by 60 px, not sorting; both survive a reload
        // (localStorage); "Default columns" brings them back.
        let columns = try #require(all["columns"] as? [String: Any])
        #expect(columns["protoBefore"] as? [String] == ["block", "block"] && columns["protoHidden"] as? [String] == ["none", "none"], "\(columns)")
        #expect(columns["menuOpen"] as? Bool == true && columns["menuClosed"] as? Bool == true && (columns["menuItems"] as? [String]) == ["Time", "Client", "Method", "URL", "Status", "Protocol", "Type", "Size", "Duration", "Cache", "Flags", "Connection", "Server"], "\(columns)")
        #expect((columns["axeMenu"] as? [String])?.isEmpty == true, "\(columns["axeMenu"] ?? "")")
        let before = columns["clientBefore"] as? [Double] ?? [], after = columns["clientAfter"] as? [Double] ?? []
        #expect(before.count == 2 && after.count == 2 && before[0] == before[1] && after[0] == after[1] && abs(after[0] - before[0] - 60) <= 2, "\(before) \(after)")
        #expect(columns["sortAfterDrag"] is NSNull, "a drag is not a sort")
        let reloaded = columns["reloaded"] as? [String: Any] ?? [:], reset = columns["reset"] as? [String: Any] ?? [:]
        #expect(reloaded["proto"] as? String == "none" && reloaded["client"] as? [Double] == after, "\(reloaded)")
        #expect(reset["proto"] as? String == "block" && reset["client"] as? [Double] == before, "\(reset)")
        // Order: header and row cells always in the same order; "Move Status left" puts Status
        // before URL (the focus stays on the button, the menu open); Duration dragged onto
        // Time's left half goes first, not sorting; kept across a reload; the defaults again.
        let defaultOrder = ["c-time", "c-client", "c-method", "c-url", "c-status", "c-proto", "c-type", "c-size", "c-dur", "c-cache", "c-flags", "c-conn", "c-server"]
        func order(_ key: String) -> [String] {
            let pair = columns[key] as? [[String]] ?? []
            return pair.count == 2 && pair[0] == pair[1] ? pair[0] : ["header and row differ: \(pair)"]
        }
        var menuMoved = defaultOrder
        menuMoved.swapAt(3, 4)
        var dragged = menuMoved
        dragged.insert(dragged.remove(at: dragged.firstIndex(of: "c-dur")!), at: 0)
        #expect(order("orderBefore") == defaultOrder && order("orderAfterMenu") == menuMoved && order("orderAfterDrag") == dragged, "\(columns)")
        #expect(columns["focusAfterMove"] as? String == "move-c-status--1", "\(columns["focusAfterMove"] ?? "")")
        #expect(columns["sortAfterMove"] is NSNull && order("orderReloaded") == dragged && order("orderReset") == defaultOrder, "\(columns)")
        // The connection and server columns: hidden until chosen, then the row's own values;
        // the duration cell's tooltip names its phases.
        #expect(columns["connBefore"] as? [String] == ["none", "none"], "\(columns)")
        let connServer = columns["connServer"] as? [String] ?? []
        #expect(connServer.count == 4 && connServer[0] == connServer[1] && connServer[2] == connServer[3] && connServer[0].hasPrefix("C") && connServer[2].hasSuffix(":80"), "\(connServer)")
        #expect((columns["durationTitle"] as? String)?.contains("wait ") == true, "\(columns["durationTitle"] ?? "")")
        #expect((columns["axeColumns"] as? [String])?.isEmpty == true, "\(columns["axeColumns"] ?? "")")
        // The list as an ARIA grid: a row per drawn row with its index (the header is row 1),
        // aria-rowcount the rows listed plus the header, a cell per column, the sort on the
        // header (ascending, descending, none), the selection as the active row.
        let grid = try #require(all["gridMenu"] as? [String: Any])
        let g = grid["grid"] as? [String: Any] ?? [:]
        #expect(g["role"] as? String == "grid" && g["rowcount"] as? Int == (g["listed"] as? Int ?? -9) + 1 && g["headers"] as? Int == 13, "\(g)")
        #expect(g["rowsWithRole"] as? Int == g["rows"] as? Int && (g["rows"] as? Int ?? 0) > 0 && g["firstIndex"] as? Int == 2 && g["cells"] as? Int == 13, "\(g)")
        #expect("\(grid["sort1"] ?? "")" == "\(["ascending", "status"])" && grid["sort2"] as? String == "descending" && grid["sort3"] is NSNull, "\(grid)")
        let active = grid["active"] as? [Any] ?? []
        #expect(active.count == 3 && active[0] as? Bool == true && active[1] as? String == "true" && active[2] as? Int == 1, "\(active)")
        // The rows' menu: Shift+F10 opens it on the selected row, focus on its first item, the
        // arrows move; Enter copies the cURL command of the row's entry and closes it, the focus
        // back on the list; Esc closes it; a right click opens it; its response headers are the
        // entry's; "Hide DOMAIN" is a -domain: term that leaves the other hosts' rows.
        let items = grid["menuItems"] as? [String] ?? []
        #expect(grid["menuOpen"] as? Bool == true && items.first == "Copy as cURL" && items.contains("Copy response headers") && items.last?.hasPrefix("Hide ") == true, "\(items)")
        #expect(grid["focusFirst"] as? String == "Copy as cURL" && grid["focusSecond"] as? String == "Copy as fetch", "\(grid)")
        let menuCurl = grid["curlFromMenu"] as? String ?? ""
        #expect(menuCurl.hasPrefix("curl '\(grid["curlURL"] as? String ?? "?")'"), "\(menuCurl)")
        #expect(grid["menuClosedAfter"] as? Bool == true && grid["focusBack"] as? String == "list" && grid["escCloses"] as? Bool == true && grid["rightClickOpen"] as? Bool == true, "\(grid)")
        #expect(grid["responseHeaders"] as? String == grid["expectedResponseHeaders"] as? String && (grid["responseHeaders"] as? String)?.isEmpty == false, "\(grid)")
        let hidden = grid["hiddenHost"] as? String ?? "?"
        #expect(grid["hideQuery"] as? String == "-domain:\(hidden)" && (grid["shownHosts"] as? [String])?.contains(hidden) == false, "\(grid)")
        #expect(grid["shownAfterHide"] as? Int == grid["expectedAfterHide"] as? Int && (grid["shownAfterHide"] as? Int ?? 0) > 0, "\(grid)")
        #expect((grid["axeList"] as? [String])?.isEmpty == true && (grid["axeMenu"] as? [String])?.isEmpty == true, "\(grid)")
        // A host with its port: "Show only 127.0.0.1:18080" keeps that host's rows (the NDJSON's count).
        #expect((grid["portHost"] as? String)?.contains(":") == true && grid["showOnlyPort"] as? Int == grid["expectedShowOnlyPort"] as? Int
                && (grid["showOnlyPort"] as? Int ?? 0) > 0, "\(grid)")
        // Group by domain: a line per host in the order of its first row with its count (the
        // NDJSON rows'), a click folds its rows and another unfolds them, the arrows never stop
        // on a line, and the grouping is kept in the page's address.
        let group = try #require(all["group"] as? [String: Any])
        let groups = group["groups"] as? [[Any]] ?? [], expectedGroups = group["expected"] as? [[Any]] ?? []
        #expect(groups.count == expectedGroups.count && groups.count >= 2 && "\(groups)" == "\(expectedGroups)", "\(group)")
        let shownRows = group["shown"] as? Int ?? 0, listed = group["listed"] as? Int ?? 0
        #expect(listed == shownRows + groups.count, "\(group)")
        let folded = group["folded"] as? [String: Any] ?? [:]
        let bigCount = (expectedGroups.first { "\($0.first ?? "")" == folded["domain"] as? String }?[1] as? Int) ?? -1
        #expect(folded["listed"] as? Int == listed - bigCount && group["unfolded"] as? Int == listed, "\(group)")
        #expect((folded["marks"] as? [String])?.filter { $0 == "▸" }.count == 1, "\(folded)")
        #expect((group["arrowKinds"] as? [String])?.allSatisfy { $0 == "t" } == true, "\(group)")
        #expect((group["hash"] as? String)?.contains("group=domain") == true, "\(group)")
        let regrouped = group["restored"] as? [String: Any] ?? [:]
        #expect(regrouped["checked"] as? Bool == true && regrouped["groups"] as? Int == groups.count, "\(regrouped)")
        #expect((group["axe"] as? [String])?.isEmpty == true, "\(group["axe"] ?? "")")
        #expect(keyless["h3-sample.pcap"]?["text"].map { "\($0)".contains("QUIC v1") } == true)
        #expect(keyless["tls-sample.pcap"]?["text"].map { "\($0)".contains("TLS 1.3") } == true)

        // Attacker-controlled text is shown as text and never run.
        let inject = try #require(all["inject"] as? [String: Any])
        #expect(inject["pwned"] is NSNull, "a planted script ran: window.pwned = \(inject["pwned"] ?? "")")
        #expect(inject["violations"] as? Int == 0 && inject["scripts"] as? Int == 1 && inject["images"] as? Int == 0)
        let detail = inject["detail"] as? String ?? ""
        #expect(detail.contains("<img src=x onerror=\"window.pwned=2\">"), "the request header, as text")
        #expect(detail.contains("<svg onload=\"window.pwned=4\">"), "the response header, as text")
        // A right-to-left override is written out, not obeyed (it showed the header reversed).
        #expect(detail.contains("file\u{27E8}U+202E\u{27E9}gpj.exe") && !detail.contains("\u{202E}"), "\(detail)")
        #expect(detail.contains("<script>window.pwned=3</script>"), "the body, as text")
        #expect((inject["urlCell"] as? String ?? "").contains("pwned=1"))
        let download = try #require(inject["bodyDownload"] as? [String: Any])
        #expect(download["type"] as? String == "application/octet-stream")
        #expect((download["csp"] as? String ?? "").hasPrefix("sandbox"))
        #expect((download["disposition"] as? String ?? "").hasPrefix("attachment"))
        #expect(download["bytes"] as? String == "<script>window.pwned=3</script><img src=x onerror=\"window.pwned=5\">")
        let csp = inject["pageCSP"] as? String ?? ""
        #expect(csp.contains("script-src 'self'") && csp.contains("default-src 'none'") && !csp.contains("unsafe"))

        // Beyond the loopback only with the token; on the loopback, only for the loopback's names.
        let token = try #require(all["token"] as? [String: Any])
        #expect(token["urlHasToken"] as? Bool == true && token["said"] as? Bool == true)
        #expect(token["withoutToken"] as? Int == 403 && token["wrongToken"] as? Int == 403 && token["pageWithoutToken"] as? Int == 403)
        #expect(token["withToken"] as? Int == 200 && token["rowsWithToken"] as? Int == file["expected"] as? Int)
        #expect(token["foreignHost"] as? Int == 403 && token["loopbackHost"] as? Int == 200)

        // Live (root): each kind of traffic is in the page while the capture runs.
        if CLI.isRoot {
            let live = try #require(all["live"] as? [String: Any])
            #expect(live["running"] as? Bool == true, "the rows came while the capture was running")
            #expect(live["rows"] as? [String] == ["GET /page.html 200 http/1.1", "GET /static/app.css 200 http/1.1",
                                                  "GET /static/logo.png 200 http/1.1", "GET /page.html 200 h2",
                                                  "GET /api/data.json 200 h2", "conn tls.icy.test TLS 1.3"])
            let delays = live["delays"] as? [String: Double] ?? [:]
            #expect(delays.count == 3 && delays.values.allSatisfy { $0 < 2 }, "\(delays)")
            #expect(live["exit"] as? Int == 0)
        }
    }
}
