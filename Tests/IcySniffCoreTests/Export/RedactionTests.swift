import Testing
@testable import IcySniffCore

/// Secrets planted in a request and its response — a cookie, an Authorization header, a
/// Set-Cookie, secret query parameters in the URL, the Referer and the Location, a bearer token
/// offered as a WebSocket subprotocol (as wstunnel and Kubernetes send it) — appear in no
/// output: HAR (entries, `_requestTarget`, pages' titles), table, TSV, CSV, NDJSON (`url`,
/// `target`), heads (-V), the report (text and JSON); with `--keep-secrets`, everywhere
/// (issue 30). The secret query parameter names are `ExportOptions.secretParameters`.
@Suite struct RedactionTests {
    static let secrets = ["hunter2pw", "keyv4lue", "s3cr3tcookie", "t0ps3cr3t", "reft0ken", "setc00kie", "s1gvalue", "wst0ken",
                          "ap1k3yvalue", "pr1vt0ken", "amzs3ssion"]

    /// The same secrets over HTTP/2 (h2c): `:path`, cookie, authorization, referer; set-cookie
    /// and location in the response.
    static func http2Transactions() -> [Transaction] {
        let c = HPACKEncoder(), s = HPACKEncoder()
        var client = HTTP2FrameHeader.preface + H2.settings()
        client += H2.frame(.headers, flags: H2.endHeaders | H2.endStream, stream: 1, c.encode([
            (":method", "GET"), (":scheme", "http"), (":authority", "h.example"), (":path", "/index.html?password=hunter2pw&key=keyv4lue&q=ok"),
            ("cookie", "sid=s3cr3tcookie"), ("authorization", "Bearer t0ps3cr3t"), ("referer", "http://h.example/start?token=reft0ken"),
            ("sec-websocket-protocol", "v1, base64url.bearer.authorization.k8s.io.wst0ken"),
            ("x-api-key", "ap1k3yvalue"), ("private-token", "pr1vt0ken"), ("x-amz-security-token", "amzs3ssion")]))
        let server = H2.settings() + H2.settings(ack: true) + H2.frame(.headers, flags: H2.endHeaders | H2.endStream, stream: 1, s.encode([
            (":status", "302"), ("set-cookie", "sess=setc00kie; Path=/"), ("location", "/next?sig=s1gvalue&page=2")]))
        return Transcript(blocks: [(.client, client), (.server, server)]).run()
    }

    static func transactions() -> [Transaction] {
        Transcript("""
        >>>
        GET /index.html?password=hunter2pw&key=keyv4lue&q=ok HTTP/1.1
        Host: h.example
        Cookie: sid=s3cr3tcookie; theme=dark
        Authorization: Bearer t0ps3cr3t
        Referer: http://h.example/start?token=reft0ken
        Sec-WebSocket-Protocol: v1, authorization.bearer.eyJ0eXAiOi.wst0ken.sig
        X-Api-Key: ap1k3yvalue
        PRIVATE-TOKEN: pr1vt0ken
        X-Amz-Security-Token: amzs3ssion

        <<<
        HTTP/1.1 302 Found
        Set-Cookie: sess=setc00kie; Path=/
        Location: /next?sig=s1gvalue&page=2
        Content-Length: 0

        """).run()
    }

    /// Every output of the transactions, as one text.
    static func everyOutput(keepSecrets: Bool, http2: Bool = false) -> [(String, String)] {
        var options = ExportOptions()
        options.keepSecrets = keepSecrets
        let ts = http2 ? http2Transactions() : transactions()
        var outs: [(String, String)] = []
        let har = HARWriter(options: options)
        for t in ts { har.consume(t) }
        let harOut = OutputFile(memory: true)
        har.write(to: harOut)
        outs.append(("har", String(decoding: harOut.takeBytes(), as: UTF8.self)))
        for format in [TableFormat.table, .tsv, .csv, .ndjson, .heads] {
            let out = OutputFile(memory: true)
            let writer = TableWriter(format: format, output: out, options: options, width: 400)
            for t in ts { writer.consume(t) }
            writer.finish()
            outs.append(("\(format)", String(decoding: out.takeBytes(), as: UTF8.self)))
        }
        let report = ReportCollector(options: options)
        for t in ts { report.consume(t) }
        let r = report.report(capture: "test")
        outs.append(("report text", ReportWriter.text(r)))
        outs.append(("report json", String(decoding: ReportWriter.json([r]), as: UTF8.self)))
        return outs
    }

    @Test func noSecretInAnyOutput() {
        let outs = Self.everyOutput(keepSecrets: false)
        #expect(outs.count == 8)
        for (name, text) in outs {
            #expect(!text.isEmpty, "\(name)")
            for secret in Self.secrets { #expect(!text.contains(secret), "\(name) shows \(secret)") }
        }
        // What is not secret stays: the names, the other parameters, the lengths.
        let har = outs[0].1
        #expect(har.contains("q=ok") && har.contains("page=2") && har.contains("theme=dark") || har.contains("\"theme\""))
        #expect(har.contains("redacted 9 bytes"), "the password's length")
        // Authorization keeps its scheme and counts the token alone; an API key's field is counted whole.
        for (name, text) in outs where name == "har" || name == "heads" {
            #expect(text.contains("Bearer [redacted 9 bytes]"), "\(name)")
            #expect(text.contains("[redacted 11 bytes]") && text.contains("X-Api-Key"), "\(name): the key's length, the name kept")
        }
    }

    /// The marker reads as text where people read (table, TSV, CSV, -V, report) and stays
    /// percent-encoded where the URL must stay a URL (HAR, NDJSON).
    @Test func markersAreReadableWherePeopleReadThem() {
        for (name, text) in Self.everyOutput(keepSecrets: false) {
            let readable = ["table", "tsv", "csv", "heads", "report text", "report json"].contains(name)
            #expect(text.contains("password=[redacted 9 bytes]") == readable, "\(name)")
            if !readable { #expect(text.contains("password=%5Bredacted%209%20bytes%5D"), "\(name)") }
        }
        // A marker already there (a HAR read back by diff) is kept, not counted again.
        #expect(EntryEncoder.redactURL("http://a.test/x?token=%5Bredacted%2014%20bytes%5D", options: ExportOptions(), readable: true)
                == "http://a.test/x?token=[redacted 14 bytes]")
    }

    /// An 80-column table keeps a URL's host and its end; of an https URL it kept "https:/".
    @Test func aNarrowURLKeepsItsHost() {
        let url = "https://upload.wikimedia.org/wikipedia/commons/thumb/a/a9/Example.jpg/120px-Example.jpg"
        let cell = TableWriter.fit(url, 80, keepEnd: true)
        #expect(cell.hasPrefix("https://upload.wikimedia.org/…") && cell.hasSuffix("120px-Example.jpg"), "\(cell)")
        #expect(TableWriter.fit(url, 40, keepEnd: true).hasPrefix("https://upload.wiki"), "the host's first letters, after the scheme")
        #expect(TableWriter.fit("upload.wikimedia.org/wikipedia/commons/thumb/a/a9/Example.jpg/120px-Example-of-a-long-name.jpg", 70, keepEnd: true).hasPrefix("upload.wikimedia.org/…"))
    }

    @Test func noSecretInAnyOutputOverHTTP2() {
        let outs = Self.everyOutput(keepSecrets: false, http2: true)
        #expect(outs[0].1.contains("HTTP/2.0"), "the conversation was read as HTTP/2")
        for (name, text) in outs {
            for secret in Self.secrets { #expect(!text.contains(secret), "h2 \(name) shows \(secret)") }
        }
        for (name, text) in Self.everyOutput(keepSecrets: true, http2: true) where name == "har" || name == "heads" {
            for secret in Self.secrets { #expect(text.contains(secret), "h2 \(name) lacks \(secret)") }
        }
    }

    @Test func keepSecretsKeepsThemEverywhere() {
        for (name, text) in Self.everyOutput(keepSecrets: true) where name == "har" || name == "heads" {
            for secret in Self.secrets { #expect(text.contains(secret), "\(name) lacks \(secret)") }
        }
        for (name, text) in Self.everyOutput(keepSecrets: true) where ["ndjson", "tsv"].contains(name) {
            #expect(text.contains("hunter2pw") && text.contains("keyv4lue"), "\(name)")
        }
    }

    /// HTTP/2's and HTTP/3's `:path` (what -V and the HAR list) is a URL like any other.
    @Test func pseudoHeaderPath() {
        let h = HTTPHeader(name: ":path", value: "/api.json?token=abc123&x=1")
        let shown = EntryEncoder.redact(header: h, options: ExportOptions())
        #expect(!shown.contains("abc123") && shown.contains("x=1"))
        var keep = ExportOptions()
        keep.keepSecrets = true
        #expect(EntryEncoder.redact(header: h, options: keep) == h.value)
    }
}
