import Foundation
import Testing

/// Runs the shared checkers against the built binary: HAR 1.2 validity (schema and the rules the
/// schema cannot express) and a real HAR consumer for every capture of the corpus, the
/// transaction conformance corpus (at least 95%), and the cache-freshness corpus (every case).
///
/// These are the only tests that need `../shared` (beside the project's root, as CI has it). In a
/// clone of the repository alone they are skipped with that message; under CI they always run.
@Suite(.serialized, .enabled(if: CLI.hasShared || ProcessInfo.processInfo.environment["CI"] != nil,
                             "../shared (the conformance corpus and its checkers) is not beside the project: conformance tests skipped"))
struct ConformanceTests {
    static var allCaptures: [String] {
        let root = CLI.shared.appendingPathComponent("corpus")
        let walker = FileManager.default.enumerator(atPath: root.path)!
        var out: [String] = []
        while let p = walker.nextObject() as? String {
            if p.hasSuffix(".pcap") || p.hasSuffix(".pcapng") || p.hasSuffix(".pcap.gz") { out.append(root.appendingPathComponent(p).path) }
        }
        let captures = FileManager.default.enumerator(atPath: CLI.packageRoot.appendingPathComponent("captures").path)!
        while let p = captures.nextObject() as? String {
            if p.contains(".pcap") { out.append(CLI.capture(p)) }
        }
        return out.sorted()
    }

    func passed(_ output: String, label: String) -> (Int, Int)? {
        for line in output.split(separator: "\n").reversed() where line.hasPrefix(label) {
            let numbers = line.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
            if numbers.count >= 2 { return (numbers[0], numbers[1]) }
        }
        return nil
    }

    /// Runs a shared checker (`tools/NAME`) on the binary under test: its closing counts (the
    /// run fails when it printed none) and its FAIL lines.
    func check(_ tool: String, _ arguments: [String] = []) throws -> (passed: Int, failed: Int, failures: [Substring]) {
        let r = try CLI.run(arguments + ["--cmd", "\(CLI.binary) -r {pcap} --har --quiet"],
                            executable: CLI.shared.appendingPathComponent("tools/\(tool)").path)
        let counts = try #require(passed(r.text, label: "\(tool):"), "\(r.text.suffix(1000))")
        return (counts.0, counts.1, r.text.split(separator: "\n").filter { $0.hasPrefix("FAIL") })
    }

    @Test func everyHARIsValidAndReadableByHaralyzer() throws {
        let dir = CLI.temporaryDirectory()
        var files: [String] = []
        for (i, capture) in Self.allCaptures.enumerated() {
            let out = dir.appendingPathComponent("\(i).har").path
            // With its key log where it has one: the decrypted HTTP/1.1 and HTTP/2 entries too.
            let r = try CLI.run(["-r", capture, "--har", "--bodies", "-o", out, "--quiet"] + CLI.keyLogArguments(beside: capture))
            #expect(r.status == 0, "\(capture): \(r.stderr)")
            files.append(out)
        }
        #expect(files.count > 100)
        let validate = try CLI.run(files, executable: CLI.shared.appendingPathComponent("tools/har-validate").path)
        #expect(validate.status == 0, "\(validate.text.suffix(2000))")
        #expect(passed(validate.text, label: "har-validate")?.1 == 0)
        let script = """
        import sys, haralyzer
        n = 0
        for path in sys.argv[1:]:
            with open(path) as f:
                import json
                parser = haralyzer.HarParser(json.load(f))
                for page in parser.pages:
                    page.entries
                n += len(parser.har_data["entries"])
        print("entries", n)
        """
        let py = try CLI.run(["python3", "-c", script] + files, executable: "/usr/bin/env")
        #expect(py.status == 0, "\(py.stderr.suffix(2000))")
        #expect(py.text.hasPrefix("entries "))
    }

    /// The web view's HAR export (what its Export HAR button downloads) is valid HAR 1.2: every
    /// capture of captures/ read by one --serve run, with the key logs and --bodies (HTTP/1.x,
    /// h2, h3, WebSocket, tunnels, redirects), exported whole.
    @Test func theWebViewsHARExportIsValid() throws {
        let dir = CLI.temporaryDirectory()
        let captures = CLI.packageRoot.appendingPathComponent("captures").path
        let keys = try FileManager.default.contentsOfDirectory(atPath: captures).filter { $0.hasSuffix(".keys") }.sorted()
        let serve = Process()
        serve.executableURL = URL(fileURLWithPath: CLI.binary)
        serve.arguments = ["-r", captures, "--bodies", "--serve", "127.0.0.1:0"] + keys.flatMap { ["--keylog", "\(captures)/\($0)"] }
        let stderr = Pipe()
        serve.standardError = stderr
        serve.standardOutput = FileHandle.nullDevice
        try serve.run()
        // The test runner blocks SIGINT in its children: the server is killed.
        defer { kill(serve.processIdentifier, SIGKILL); serve.waitUntilExit() }
        var said = ""
        while !said.contains("read to the end") {
            let data = stderr.fileHandleForReading.availableData
            if data.isEmpty { break }
            said += String(decoding: data, as: UTF8.self)
        }
        let address = try #require(said.split(separator: "\n").first { $0.contains("the web view is at ") }?
            .split(separator: " ").last, "\(said)")
        let har = dir.appendingPathComponent("export.har").path
        let get = try CLI.run(["curl", "-sf", "-o", har, "\(address)api/export.har"], executable: "/usr/bin/env")
        #expect(get.status == 0, "\(get.stderr)")
        let entries = try #require(((try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: har))) as? [String: Any])?["log"] as? [String: Any])?["entries"] as? [Any])
        #expect(entries.count > 50, "every transaction of captures/")
        let validate = try CLI.run([har], executable: CLI.shared.appendingPathComponent("tools/har-validate").path)
        #expect(validate.status == 0 && passed(validate.text, label: "har-validate")?.1 == 0, "\(validate.text.suffix(2000))")
    }

    @Test func transactionConformanceAtLeast95Percent() throws {
        let r = try check("conformance")
        let total = r.passed + r.failed
        #expect(total >= 100)
        #expect(Double(r.passed) >= 0.95 * Double(total), "\(r.failures)")
    }

    @Test func cacheConformancePassesEveryCase() throws {
        let r = try check("cache-conformance")
        #expect(r.passed >= 54)
        #expect(r.failed == 0, "\(r.failures)")
    }

    static var tlsCorpus: String { CLI.shared.appendingPathComponent("corpus/tls").path }

    /// TLS metadata without keys (issue 15, first part): every keyless case of the TLS corpus.
    @Test func tlsMetadataWithoutKeysPassesEveryKeylessCase() throws {
        let r = try check("conformance", ["--corpus", Self.tlsCorpus, "--only", "nokeys"])
        #expect(r.passed >= 15)
        #expect(r.failed == 0, "\(r.failures)")
    }

    /// TLS decryption with the key logs (issue 15) and HTTP/2 (issue 16): every case of the TLS
    /// corpus — HTTP/1.1 and HTTP/2 over TLS 1.2 and 1.3, h2c, resumption and 0-RTT — with the
    /// TLS and ssl-timing checks.
    @Test func tlsAndHTTP2CorpusPassesEveryCase() throws {
        let r = try check("conformance", ["--corpus", Self.tlsCorpus, "--keylog-opt", "--keylog {keylog}"])
        #expect(r.passed >= 31)
        #expect(r.failed == 0, "\(r.failures)")
    }

    /// HTTP/3 over QUIC (issue 29): every case of the QUIC corpus, with and without the key logs:
    /// the QUIC metadata of every connection, the HTTP/3 transactions, the ssl-timing check.
    @Test func quicCorpusPassesEveryCase() throws {
        let r = try check("conformance", ["--corpus", CLI.shared.appendingPathComponent("corpus/quic").path,
                                          "--keylog-opt", "--keylog {keylog}"])
        #expect(r.passed >= 16)
        #expect(r.failed == 0, "\(r.failures)")
    }

    /// The two file readers (icy-sniff's mapped one and libpcap's, FileReaderTests) agree on every
    /// pcap file of the corpus: the same HAR (with bodies and, where there is one, the key log),
    /// the same messages, the same exit status.
    @Test func bothFileReadersAgreeOnTheCorpus() throws {
        let captures = Self.allCaptures.filter { $0.hasSuffix(".pcap") }
        #expect(captures.count > 100)
        for capture in captures {
            try FileReaderTests.expectSame(capture, ["--har", "--bodies", "--compact"])
        }
    }
}
