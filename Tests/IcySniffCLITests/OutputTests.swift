import Foundation
import Testing

@Suite struct OutputTests {
    @Test func tsvIsTheDefaultInAPipeWithAHeaderLine() throws {
        let r = try CLI.run(["-r", CLI.capture("nginx-cache-demo.pcap.gz"), "--quiet"])
        #expect(r.status == 0)
        let lines = r.text.split(separator: "\n")
        #expect(lines.first == "time\tclient\tmethod\turl\tstatus\tprotocol\ttype\tsize\tduration\tcache\tflags")
        #expect(lines.count == 13)
        #expect(lines.filter { $0.contains("\tAVOIDABLE\t") }.count == 2)
    }

    @Test func ndjsonLinesAreJSONWithStableFields() throws {
        let r = try CLI.run(["-r", CLI.capture("wikipedia.pcap"), "--format", "ndjson", "--quiet"])
        let lines = r.text.split(separator: "\n")
        #expect(lines.count == 15)
        for line in lines {
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            for key in ["ts", "connection", "method", "host", "url", "status", "response_body_len", "time_ms", "flags"] {
                #expect(object?[key] != nil, "\(key) in \(line)")
            }
        }
    }

    @Test func standardInputPlainAndCompressed() throws {
        for name in ["wikipedia.pcap", "nginx-cache-demo.pcap.gz"] {
            let data = try Data(contentsOf: URL(fileURLWithPath: CLI.capture(name)))
            let r = try CLI.run(["-r", "-", "--format", "ndjson", "--quiet"], stdin: data)
            #expect(r.status == 0, "\(name): \(r.stderr)")
            #expect(r.text.split(separator: "\n").count >= 12, "\(name)")
        }
    }

    /// `-o x.har` without --har writes HAR (it wrote TSV into the .har file); .ndjson, .jsonl,
    /// .csv and .tsv likewise; --format still wins.
    @Test func outputFormatFollowsTheExtension() throws {
        let dir = CLI.temporaryDirectory()
        for (name, check) in [("w.har", { (t: String) in t.hasPrefix("{") && t.contains("\"entries\"") }),
                              ("w.ndjson", { (t: String) in t.hasPrefix("{\"") && t.split(separator: "\n").count == 15 }),
                              ("w.jsonl", { (t: String) in t.hasPrefix("{\"") }),
                              ("w.csv", { (t: String) in t.hasPrefix("time,client,method") }),
                              ("w.tsv", { (t: String) in t.hasPrefix("time\tclient\tmethod") })] {
            let path = dir.appendingPathComponent(name).path
            let r = try CLI.run(["-r", CLI.capture("wikipedia.pcap"), "-o", path, "--quiet"])
            #expect(r.status == 0, "\(r.stderr)")
            let text = try String(contentsOfFile: path, encoding: .utf8)
            #expect(check(text), "\(name): \(text.prefix(80))")
        }
        let forced = dir.appendingPathComponent("x.har").path
        let r = try CLI.run(["-r", CLI.capture("wikipedia.pcap"), "-o", forced, "--format", "tsv", "--quiet"])
        #expect(r.status == 0)
        #expect(try String(contentsOfFile: forced, encoding: .utf8).hasPrefix("time\t"))
    }

    /// Options that would be ignored are refused with one line: --fields with NDJSON, HAR or -V,
    /// --bodies with -V (issue 30).
    @Test func ignoredCombinationsAreRefused() throws {
        for args in [["--format", "ndjson", "--fields", "url"], ["--har", "--fields", "url"], ["-V", "--fields", "url"],
                     ["-o", "/tmp/icy-x.ndjson", "--fields", "url"], ["-V", "--bodies"]] {
            let r = try CLI.run(["-r", CLI.capture("wikipedia.pcap")] + args)
            #expect(r.status != 0, "\(args)")
            #expect(r.stderr.contains("--fields") || r.stderr.contains("--bodies"), "\(args): \(r.stderr)")
        }
        let ok = try CLI.run(["-r", CLI.capture("wikipedia.pcap"), "--format", "tsv", "--fields", "url", "--quiet"])
        #expect(ok.status == 0 && ok.text.hasPrefix("url\n"))
    }

    @Test func connectionsListing() throws {
        let r = try CLI.run(["-r", CLI.corpus("zeek/get.pcap"), "--connections", "--format", "tsv", "--quiet"])
        let lines = r.text.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false) }
        try #require(lines.count == 2 && lines[1].count >= 8, "\(r.text) \(r.stderr)")
        #expect(lines[0][1] == "transport" && lines[1][1] == "tcp")
        #expect(lines[1][3] == "141.142.228.5:59856")
        #expect(lines[1][4] == "192.150.187.43:80")
        #expect(lines[1][5] == "70.034")         // SYN → handshake ACK
        #expect(lines[1][6] == "136" && lines[1][7] == "5007")
    }

    @Test func outputFileIsWrittenAtomically() throws {
        let dir = CLI.temporaryDirectory()
        let out = dir.appendingPathComponent("w.har").path
        let r = try CLI.run(["-r", CLI.capture("wikipedia.pcap"), "--har", "-o", out, "--quiet"])
        #expect(r.status == 0)
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path)
        #expect(names == ["w.har"], "no temporary file is left behind")
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: out))) as? [String: Any]
        #expect(((json?["log"] as? [String: Any])?["entries"] as? [Any])?.count == 15)
    }

    /// `-o` on something that is not a regular file (a FIFO here; /dev/null in real use) writes
    /// into it: renaming a temporary file over it would replace the device with a plain file,
    /// which is what `-o /dev/null` once did to /dev/null.
    @Test func outputIntoAFIFOKeepsTheFIFO() throws {
        let dir = CLI.temporaryDirectory()
        let fifo = dir.appendingPathComponent("pipe").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let copy = dir.appendingPathComponent("copy.tsv")
        let reader = Process()
        reader.executableURL = URL(fileURLWithPath: "/bin/sh")
        reader.arguments = ["-c", "cat \"$0\" > \"$1\"", fifo, copy.path]
        try reader.run()
        let r = try CLI.run(["-r", CLI.capture("wikipedia.pcap"), "--format", "tsv", "-o", fifo, "--quiet"])
        reader.waitUntilExit()
        #expect(r.status == 0)
        var info = stat()
        #expect(lstat(fifo, &info) == 0 && (info.st_mode & S_IFMT) == S_IFIFO, "still a FIFO")
        let rows = try String(contentsOf: copy, encoding: .utf8).split(separator: "\n")
        #expect(rows.count == 16, "header and 15 transactions came through the FIFO")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() == ["copy.tsv", "pipe"])
    }

    /// The cache verdict is made once, before any filter or writer: under `--status 304` the TSV
    /// and the HAR agree with each other and with the unfiltered run (the HAR said false when
    /// filtered, because its writer judged only what the filter let through).
    @Test func cacheVerdictIsTheSameFilteredOrNotInEveryFormat() throws {
        let capture = CLI.capture("nginx-cache-demo.pcap.gz")
        let tsv = try CLI.run(["-r", capture, "--status", "304", "--format", "tsv", "--fields", "status,cache", "--quiet"])
        #expect(tsv.text == "status\tcache\n304\tAVOIDABLE\n", "\(tsv.text)")
        func avoidable(_ args: [String]) throws -> [Bool] {
            let r = try CLI.run(["-r", capture, "--har", "--quiet"] + args)
            let har = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any])
            let entries = try #require((har["log"] as? [String: Any])?["entries"] as? [[String: Any]])
            return entries.filter { (($0["response"] as? [String: Any])?["status"] as? Int) == 304 }
                .map { (($0["_cache"] as? [String: Any])?["avoidable"] as? Bool) ?? false }
        }
        #expect(try avoidable(["--status", "304"]) == [true])
        #expect(try avoidable([]) == [true])
    }

    /// `--fields` picks `--connections`'s columns in TSV and CSV (it knew the transactions'
    /// only: "unknown field 'id'"); a name of neither list is one line, exit 64.
    @Test func fieldsPickConnectionColumns() throws {
        let r = try CLI.run(["-r", CLI.capture("tls-sample.pcap"), "--connections", "--format", "tsv", "--fields", "sni,id,bytes_from_server", "--quiet"])
        #expect(r.status == 0, "\(r.stderr)")
        let rows = r.text.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false) }
        #expect(rows.first == ["sni", "id", "bytes_from_server"] && rows.count > 1 && rows.dropFirst().allSatisfy { $0.count == 3 && $0[1].hasPrefix("C") }, "\(r.text)")
        let csv = try CLI.run(["-r", CLI.capture("tls-sample.pcap"), "--connections", "--format", "csv", "--fields", "id", "--quiet"])
        #expect(csv.text.split(separator: "\n").first == "id")
        let bad = try CLI.run(["-r", CLI.capture("tls-sample.pcap"), "--connections", "--fields", "url"])
        #expect(bad.status == 64 && bad.stderr.contains("unknown field 'url' of --connections"), "\(bad.stderr)")
    }

    /// `--client`: one device's transactions and connections; a client that is no address is
    /// the user's error, said in one line.
    @Test func clientFilterKeepsOneDevice() throws {
        let capture = CLI.capture("wikipedia.pcap")
        let all = try CLI.run(["-r", capture, "--connections", "--format", "tsv", "--quiet"])
        let mine = try CLI.run(["-r", capture, "--connections", "--format", "tsv", "--quiet", "--client", "141.142.220.118"])
        let clients = { (text: String) in text.split(separator: "\n").dropFirst().map { $0.split(separator: "\t")[3].split(separator: ":")[0] } }
        #expect(Set(clients(all.text)).count > 1, "the capture has more than one client")
        #expect(!clients(mine.text).isEmpty && Set(clients(mine.text)) == ["141.142.220.118"])
        let rows = try CLI.run(["-r", capture, "--format", "tsv", "--fields", "client", "--quiet", "--client", "141.142.220.0/24"])
        #expect(rows.text.split(separator: "\n").dropFirst().allSatisfy { $0.hasPrefix("141.142.220.") })
        let bad = try CLI.run(["-r", capture, "--client", "141.142.220.999"])
        #expect(bad.status == 64 && bad.stderr.contains("invalid client '141.142.220.999'"))
        // A word is a device's name (a glob); one no device gave is said, not an error.
        let unnamed = try CLI.run(["-r", capture, "--client", "phone"])
        #expect(unnamed.status == 0 && unnamed.stderr.contains("--client 'phone': no device gave itself that name"))
        // The summary says what the filter kept of how many (it said "15 HTTP transactions"
        // under fewer rows).
        let demo = CLI.capture("nginx-cache-demo.pcap.gz")
        let kept = try CLI.run(["-r", demo, "--format", "tsv", "--fields", "url", "--status", "4xx"])
        #expect(kept.text.split(separator: "\n").count == 3 && kept.stderr.contains(" 2 of 12 HTTP transactions shown"), "\(kept.stderr)")
        let unfiltered = try CLI.run(["-r", demo, "--format", "tsv"])
        #expect(!unfiltered.stderr.contains("shown") && unfiltered.stderr.contains(" 12 HTTP transactions"))
    }

    /// A new output file gets 0666 less the umask, as any program's file would: under `umask 077`
    /// a HAR with secrets kept is readable by its owner only (defect: it was 0644 whatever the umask).
    @Test(arguments: [("077", 0o600), ("022", 0o644), ("027", 0o640)])
    func newOutputFilesFollowTheUmask(_ mask: String, _ expected: Int) throws {
        let dir = CLI.temporaryDirectory()
        let har = dir.appendingPathComponent("secret.har").path
        let batch = dir.appendingPathComponent("batch").path
        let script = "umask \(mask); exec \"$0\" \"$@\""
        let r = try CLI.run(["-c", script, CLI.binary, "-r", CLI.capture("wikipedia.pcap"), "--har", "--keep-secrets", "-o", har, "--quiet"],
                            executable: "/bin/sh")
        #expect(r.status == 0, "\(r.stderr)")
        let b = try CLI.run(["-c", script, CLI.binary, "-r", CLI.packageRoot.appendingPathComponent("captures").path,
                             "--out-dir", batch, "--quiet"], executable: "/bin/sh")
        #expect(b.status == 0, "\(b.stderr)")
        for path in [har, batch + "/wikipedia.har"] {
            var info = stat()
            #expect(stat(path, &info) == 0 && Int(info.st_mode & 0o777) == expected,
                    "\(path): mode \(String(info.st_mode & 0o777, radix: 8)) under umask \(mask)")
        }
    }

    /// Through a symbolic link the file it names is replaced (atomically) and the link stays; an
    /// existing file keeps its permissions.
    @Test func outputThroughASymlinkKeepsTheLinkAndTheMode() throws {
        let dir = CLI.temporaryDirectory()
        let real = dir.appendingPathComponent("real.har").path
        let link = dir.appendingPathComponent("link.har").path
        #expect(FileManager.default.createFile(atPath: real, contents: Data("old".utf8)))
        #expect(chmod(real, 0o600) == 0)
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: real)
        let r = try CLI.run(["-r", CLI.capture("wikipedia.pcap"), "--har", "-o", link, "--quiet"])
        #expect(r.status == 0)
        var info = stat()
        #expect(lstat(link, &info) == 0 && (info.st_mode & S_IFMT) == S_IFLNK, "the link is still a link")
        #expect(stat(real, &info) == 0 && info.st_mode & 0o777 == 0o600, "the file kept its mode")
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: real))) as? [String: Any]
        #expect(((json?["log"] as? [String: Any])?["entries"] as? [Any])?.count == 15)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() == ["link.har", "real.har"])
    }

    @Test func secretsAreRedactedUnlessKept() throws {
        let r = try CLI.run(["-r", CLI.corpus("zeek/basic-auth-with-colon.pcap"), "--har", "--quiet"])
        #expect(r.text.contains("\"Authorization\""))
        #expect(r.text.contains("Basic [redacted"))
        let kept = try CLI.run(["-r", CLI.corpus("zeek/basic-auth-with-colon.pcap"), "--har", "--keep-secrets", "--quiet"])
        #expect(!kept.text.contains("[redacted"))
        // Cookies keep their names and the length of their values.
        let cookies = try CLI.run(["-r", CLI.corpus("pcap2har/fhs.pcap"), "--har", "--quiet"])
        #expect(cookies.text.contains("__utma=[redacted 56 bytes]; __utmz=[redacted 123 bytes]"))
    }
}

@Suite struct DelimitedOutputTests {
    /// One exchange whose fields hold every character TSV and CSV must escape, and a non-ASCII
    /// reason phrase.
    func capture() throws -> String {
        var pcap = PcapBuilder()
        var c: UInt32 = 1000, s: UInt32 = 9000
        pcap.tcp(clientIP, 40000, serverIP, 80, seq: c, ack: 0, flags: SYN); c += 1
        pcap.tcp(serverIP, 80, clientIP, 40000, seq: s, ack: c, flags: SYN | ACK); s += 1
        pcap.tcp(clientIP, 40000, serverIP, 80, seq: c, ack: s, flags: ACK)
        let request = Array("GET /a\\b\"c,d HTTP/1.1\r\nHost: example.com\r\n\r\n".utf8)
        pcap.tcp(clientIP, 40000, serverIP, 80, seq: c, ack: s, flags: PSH_ACK, payload: request[...]); c += UInt32(request.count)
        let response = Array("HTTP/1.1 200 Tab\there caf\u{E9}\r\nContent-Type:  text/x,y ; charset=a\r\nContent-Length: 2\r\n\r\nok".utf8)
        pcap.tcp(serverIP, 80, clientIP, 40000, seq: s, ack: c, flags: PSH_ACK, payload: response[...])
        let file = CLI.temporaryDirectory().appendingPathComponent("escapes.pcap")
        try pcap.write(to: file)
        return file.path
    }

    @Test func tsvEscapesBackslashAndTab() throws {
        let r = try CLI.run(["-r", try capture(), "--format", "tsv", "--fields", "path,reason,type,status,size,client", "--quiet"])
        let rows = r.text.split(separator: "\n").map(String.init)
        #expect(rows.count == 2)
        #expect(rows.last == "/a\\\\b\"c,d\tTab\\there caf\u{E9}\ttext/x,y\t200\t2\t10.0.0.2:40000")
    }

    @Test func csvQuotesCellsWithCommasAndQuotes() throws {
        let r = try CLI.run(["-r", try capture(), "--format", "csv", "--fields", "path,reason,type,status,size", "--quiet"])
        let rows = r.text.split(separator: "\n").map(String.init)
        #expect(rows.count == 2)
        #expect(rows.last == "\"/a\\b\"\"c,d\",Tab\there caf\u{E9},\"text/x,y\",200,2")
    }
}

@Suite struct SummaryLineTests {
    /// Anomalies with equal counts are listed by name, so the line does not change between runs
    /// (it once followed the per-process hash seed of a dictionary).
    @Test func anomalyTiesAreOrderedByName() throws {
        var lines: Set<String> = []
        for _ in 0..<4 {
            let r = try CLI.run(["-r", CLI.corpus("zeek/get-to-ssh-server.pcap"), "--format", "ndjson"])
            lines.insert(r.stderr)
        }
        #expect(lines.count == 1)
        #expect(lines.first?.contains("anomalies: connection_reset×1, unexpected_server_data×1") == true)
    }
}

@Suite struct DocsTests {
    @Test func anomalyCatalogueInDocsIsCurrent() throws {
        let r = try CLI.run(["--list-anomalies"])
        let doc = try String(contentsOf: CLI.packageRoot.appendingPathComponent("docs/ANOMALIES.md"), encoding: .utf8)
        #expect(r.text == doc, "regenerate with: icy-sniff --list-anomalies > docs/ANOMALIES.md")
    }
}

/// HAR fields every HAR reader needs (issue 19): `serverIPAddress`, and `postData.text`, which
/// HAR 1.2 requires with `mimeType` (mitmproxy, har2warc and harview fail with KeyError without it).
@Suite struct HARReaderFieldsTests {
    @Test func serverAddressAndPostDataTextAreAlwaysThere() throws {
        for bodies in [false, true] {
            let r = try CLI.run(["-r", CLI.corpus("zeek/100-continue.pcap"), "--har"] + (bodies ? ["--bodies"] : []))
            let har = try JSONSerialization.jsonObject(with: r.stdout) as! [String: Any]
            let entry = try #require(((har["log"] as! [String: Any])["entries"] as! [[String: Any]]).first)
            #expect(entry["serverIPAddress"] as? String == "128.146.216.51")
            let post = try #require((entry["request"] as! [String: Any])["postData"] as? [String: Any])
            let text = try #require(post["text"] as? String)
            if bodies {
                #expect(text.utf8.count == 2001)
            } else {
                #expect(text.isEmpty)
                #expect(post["comment"] as? String == "body of 2001 bytes not kept (--bodies keeps it)")
            }
        }
        // IPv6 too.
        let v6 = try CLI.run(["-r", CLI.corpus("zeek/1000-requests-one-dropped-response.pcap.gz"), "--har"])
        let har = try JSONSerialization.jsonObject(with: v6.stdout) as! [String: Any]
        let entry = try #require(((har["log"] as! [String: Any])["entries"] as! [[String: Any]]).first)
        #expect(entry["serverIPAddress"] as? String == "::1")
    }
}

/// NDJSON for analytics tools (issue 19): a phase that did not happen is null, not -1, so that
/// an average over a column counts only the transactions that had it.
@Suite struct NDJSONPhaseTests {
    @Test func connectIsNullOnReusedConnectionsAndAveragesRight() throws {
        let r = try CLI.run(["-r", CLI.capture("nginx-cache-demo.pcap.gz"), "--format", "ndjson"])
        let rows = r.text.split(separator: "\n").map { try! JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
        #expect(rows.count == 12)
        let connects = rows.compactMap { $0["connect_ms"] as? Double }
        #expect(connects.count == 9, "one per connection: the first request of each of the 9")
        #expect(connects.allSatisfy { $0 >= 0 })
        #expect(rows.filter { $0["connect_ms"] is NSNull }.count == 3, "requests on a reused connection")
        #expect(rows.allSatisfy { $0["dns_ms"] is NSNull }, "no DNS in this capture")
    }
}

/// TSV and CSV for analytics tools (issue 19): a missing value is an empty cell, not "-", so that
/// a status or size column is typed as a number; the terminal table keeps "-".
@Suite struct DelimitedMissingValueTests {
    @Test func missingStatusAndSizeAreEmptyCells() throws {
        let capture = CLI.corpus("zeek/1000-requests-one-dropped-response.pcap.gz")
        let fields = ["--fields", "method,status,size,type,cache,flags"]
        let csv = try CLI.run(["-r", capture, "--format", "csv"] + fields)
        // The first request's response was dropped (TCP's acknowledgements say so): its row has
        // no status and no size.
        let unanswered = csv.text.split(separator: "\n").filter { $0.contains("response_lost_in_gap") }
        #expect(unanswered == ["GET,,,,,response_lost_in_gap"])
        let tsv = try CLI.run(["-r", capture, "--format", "tsv"] + fields)
        let rows = tsv.text.split(separator: "\n", omittingEmptySubsequences: false).dropFirst().filter { !$0.isEmpty }
        #expect(rows.count == 1000)
        for row in rows {
            let cells = row.split(separator: "\t", omittingEmptySubsequences: false)
            #expect(cells[1].isEmpty || Int(cells[1]) != nil, "status: a number or empty, \(row)")
            #expect(cells[2].isEmpty || Int(cells[2]) != nil, "size: a number or empty, \(row)")
            #expect(!cells.contains("-"))
        }
        let table = try CLI.run(["-r", capture, "--format", "table"] + fields)
        #expect(table.text.contains(" - "), "the terminal table keeps its dashes")
    }
}
