import Testing
@testable import IcySniffCore

/// The report's tables stay bounded whatever names the clients send: hosts past
/// `Report.hostsCounted` are counted together, a host name is kept to 255 bytes.
@Suite struct ReportBoundsTests {
    /// "Sent uncompressed" is said of a text response only when its request offered a coding
    /// the server could have used (it was said of every large text response).
    @Test func uncompressedTextOnlyWhereACodingWasOffered() {
        let body = String(repeating: "<p>text</p>", count: 200)
        let collector = ReportCollector()
        for offered in ["", "Accept-Encoding: identity\r\n", "Accept-Encoding: gzip, br\r\n"] {
            for t in Transcript(blocks: [(.client, Array("GET /page HTTP/1.1\r\nHost: a.test\r\n\(offered)\r\n".utf8)),
                                         (.server, Array("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)".utf8))]).run() {
                collector.consume(t)
            }
        }
        let r = collector.report(capture: "codings")
        #expect(r.opportunities.uncompressedText.count == 1 && r.opportunities.uncompressedTextBytes == UInt64(body.utf8.count))
    }

    @Test func hostNamesAreCutAt255Bytes() {
        #expect(Report.hostKey("Example.COM") == "example.com")
        let long = String(repeating: "a", count: 9000) + ".example"
        let key = Report.hostKey(long)
        #expect(key.utf8.count == 255 + "…".utf8.count && key.hasSuffix("…"))
        // Cut on a character, never inside one.
        let wide = String(repeating: "é", count: 200)
        let cut = Report.hostKey(wide)
        #expect(cut.unicodeScalars.allSatisfy { $0 == "é" || $0 == "…" } && cut.utf8.count <= 255 + 3)
    }

    /// 10,050 hosts each answering 404 on one connection: the first 10,000 are named, the rest
    /// are "other hosts"; every error and request is still counted.
    @Test func hostsPastTheLimitAreCountedTogether() {
        let collector = ReportCollector()
        let wire = TCPWire(sink: collector)
        wire.send(fromClient: true, [.syn], seq: 0)
        wire.send(fromClient: false, [.syn, .ack], seq: 0, ack: 1)
        wire.send(fromClient: true, [.ack], seq: 1, ack: 1)
        var c: UInt32 = 1, s: UInt32 = 1
        let n = Report.hostsCounted + 50
        for i in 0..<n {
            let request = "GET / HTTP/1.1\r\nHost: h\(i).example\r\n\r\n"
            let response = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"
            wire.send(fromClient: true, seq: c, ack: s, request, after: 0)
            c += UInt32(request.utf8.count)
            wire.send(fromClient: false, seq: s, ack: c, response, after: 0)
            s += UInt32(response.utf8.count)
        }
        wire.pipeline.finish()
        let r = collector.report(capture: "hosts")
        let names = Set(r.errorsByHost.map(\.host))
        #expect(names.count == Report.hostsCounted + 1 && names.contains(Report.otherHosts))
        #expect(r.errorsByHost.reduce(0) { $0 + $1.count } == n)
        #expect(r.errorsByHost.first { $0.host == Report.otherHosts }?.count == 50)
        #expect(r.overview.hosts == n)
    }
}
