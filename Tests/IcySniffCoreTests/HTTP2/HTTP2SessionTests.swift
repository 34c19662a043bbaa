import Testing
@testable import IcySniffCore

/// HTTP/2 through the whole pipeline (reassembly, session, pairing by stream id): concurrent
/// streams with interleaved DATA, an upload, a 100 Continue, trailers, server push, a reset, a
/// GOAWAY, gzip bodies, cut into TCP segments of every size from 1 byte; then capture gaps.
@Suite struct HTTP2SessionTests {
    static let body = Array("The quick brown fox jumps over the lazy dog. ".utf8) + Array(repeating: 0x7A, count: 3000)

    static func request(_ c: HPACKEncoder, _ method: String, _ path: String, _ extra: [(String, String)] = []) -> [UInt8] {
        c.encode([(":method", method), (":scheme", "http"), (":authority", "example.test"), (":path", path)] + extra)
    }

    /// Client and server blocks of a conversation on one h2c connection.
    static func conversation() -> [(Transcript.Side, [UInt8])] {
        let c = HPACKEncoder(), s = HPACKEncoder()
        let gz = DefectRegressionTests.gzip(body)
        let half = gz.count / 2
        var client = HTTP2FrameHeader.preface + H2.settings([(1, 4096), (4, 65_535)])
        client += H2.frame(.headers, flags: H2.endHeaders | H2.endStream, stream: 1, request(c, "GET", "/a", [("accept-encoding", "gzip")]))
        client += H2.frame(.headers, flags: H2.endHeaders, stream: 3, request(c, "POST", "/upload", [("expect", "100-continue")]))
        let server1 = H2.settings([(3, 100)]) + H2.settings(ack: true)
            + H2.frame(.headers, flags: H2.endHeaders, stream: 3, s.encode([(":status", "100")]))
        var client2 = H2.settings(ack: true)
        client2 += H2.frame(.data, stream: 3, Array(repeating: 0x41, count: 60))
        client2 += H2.frame(.data, flags: H2.padded | H2.endStream, stream: 3, [5] + Array(repeating: 0x42, count: 40) + [0, 0, 0, 0, 0])
        client2 += H2.frame(.headers, flags: H2.endHeaders | H2.endStream, stream: 5, request(c, "GET", "/slow"))
        client2 += H2.frame(.headers, flags: H2.endHeaders | H2.endStream, stream: 7, request(c, "GET", "/late"))
        var server2 = H2.frame(.pushPromise, flags: H2.endHeaders, stream: 1,
                               H2.u32(2) + s.encode([(":method", "GET"), (":scheme", "http"), (":authority", "example.test"), (":path", "/pushed.css")]))
        server2 += H2.frame(.headers, flags: H2.endHeaders, stream: 1, s.encode([(":status", "200"), ("content-type", "text/plain"), ("content-encoding", "gzip")]))
        server2 += H2.frame(.headers, flags: H2.endHeaders, stream: 3, s.encode([(":status", "201"), ("content-type", "text/plain")]))
        server2 += H2.frame(.data, stream: 1, Array(gz[..<half]))
        server2 += H2.frame(.data, flags: H2.padded, stream: 3, [2] + Array("created".utf8) + [0, 0])
        server2 += H2.frame(.data, flags: H2.endStream, stream: 1, Array(gz[half...]))
        server2 += H2.frame(.headers, flags: H2.endHeaders | H2.endStream, stream: 3, s.encode([("x-checksum", "abc")]))
        server2 += H2.frame(.headers, flags: H2.endHeaders, stream: 2, s.encode([(":status", "200"), ("content-type", "text/css")]))
        server2 += H2.frame(.data, flags: H2.endStream, stream: 2, Array("body{}".utf8))
        server2 += H2.frame(.rstStream, stream: 5, H2.u32(8))
        server2 += H2.frame(.goaway, stream: 0, H2.u32(5) + H2.u32(0))
        return [(.client, client), (.server, server1), (.client, client2), (.server, server2)]
    }

    static func summaries(_ transactions: [Transaction]) -> [String] {
        transactions.sorted { $0.streamID ?? 0 < $1.streamID ?? 0 }.map { t in
            "\(t.streamID ?? 0)\(t.pushed ? " pushed" : "") \(t.url) " + summary(t)
        }
    }

    static let expected = [
        "1 http://example.test/a GET /a HTTP/2.0 body=0 -> 200 body=\(body.count)/\(DefectRegressionTests.gzip(body).count) []",
        "2 pushed http://example.test/pushed.css GET /pushed.css HTTP/2.0 body=0 -> 200 body=6/6 []",
        "3 http://example.test/upload POST /upload HTTP/2.0 body=100 -> 201 body=7/7 []",
        "5 http://example.test/slow GET /slow HTTP/2.0 body=0 -> - [http2_stream_reset]",
        "7 http://example.test/late GET /late HTTP/2.0 body=0 -> - [http2_refused_by_goaway]",
    ]

    @Test func everyStreamIsATransactionWhateverTheSegmenting() throws {
        let transcript = Transcript(blocks: Self.conversation())
        let whole = transcript.collect()
        #expect(Self.summaries(whole.transactions) == Self.expected)
        let byStream = Dictionary(uniqueKeysWithValues: whole.transactions.map { ($0.streamID!, $0) })
        let upload = try #require(byStream[3])
        #expect(upload.interimResponses.map(\.status) == [100])
        #expect(upload.response?.trailers.first("x-checksum") == "abc")
        #expect(upload.depth == 2 && byStream[1]?.depth == 1 && byStream[2]?.depth == 5, "streams in the order they opened (the promise came after 5 and 7)")
        #expect(byStream[1]?.request?.headers.first(.authority) == "example.test")
        #expect(byStream[1]?.response?.headersSize ?? 0 > 0, "the HPACK-encoded size")
        #expect(whole.connections.first?.weirds.isEmpty ?? false, "\(whole.connections.first?.weirds.map(\.0) ?? [])")
        for size in [1, 2, 3, 5, 7, 9, 10, 13, 17, 24, 31, 64, 100, 1000] {
            let cut = Transcript(blocks: Self.conversation()).run(segmentSize: size)
            #expect(Self.summaries(cut) == Self.expected, "segments of \(size) bytes")
        }
    }

    @Test func keptBodiesAreTheDecodedDataOfTheirStream() throws {
        var options = HTTPParserOptions()
        options.keepBodies = true
        let transactions = Transcript(blocks: Self.conversation()).run(segmentSize: 11, options: options)
        let byStream = Dictionary(uniqueKeysWithValues: transactions.map { ($0.streamID!, $0) })
        #expect(byStream[1]?.response?.body.kept == Self.body)
        #expect(byStream[3]?.request?.body.kept == Array(repeating: 0x41, count: 60) + Array(repeating: 0x42, count: 40))
    }

    /// A gap inside a response header block: that direction's HPACK table is unknown from there,
    /// so the headers of that response and every later one are flagged unknown, never guessed;
    /// the DATA of the streams is still counted.
    @Test func aGapInAHeaderBlockLeavesLaterHeadersUnknownButCountsData() throws {
        let c = HPACKEncoder(), s = HPACKEncoder()
        let client = HTTP2FrameHeader.preface + H2.settings()
            + H2.frame(.headers, flags: H2.endHeaders | H2.endStream, stream: 1, Self.request(c, "GET", "/one"))
            + H2.frame(.headers, flags: H2.endHeaders | H2.endStream, stream: 3, Self.request(c, "GET", "/two"))
        let head1 = H2.frame(.headers, flags: H2.endHeaders, stream: 1, s.encode([(":status", "200"), ("server", "test-server-with-a-long-name")]))
        let rest = H2.frame(.data, flags: H2.endStream, stream: 1, Array(repeating: 0x31, count: 500))
            + H2.frame(.headers, flags: H2.endHeaders, stream: 3, s.encode([(":status", "404"), ("server", "test-server-with-a-long-name")]))
            + H2.frame(.data, flags: H2.endStream, stream: 3, Array(repeating: 0x32, count: 77))
        var transcript = Transcript(blocks: [(.client, client), (.server, H2.settings()), (.server, Array(head1[..<12])),
                                             (.server, Array(head1[12...])), (.server, rest)])
        transcript.lostBlocks = [3]
        let sink = transcript.collect()
        let byStream = Dictionary(uniqueKeysWithValues: sink.transactions.map { ($0.streamID!, $0) })
        let one = try #require(byStream[1]), two = try #require(byStream[3])
        #expect(one.request?.targetString == "/one" && two.request?.targetString == "/two", "the client's side is intact")
        #expect(one.response?.status == 0 && two.response?.status == 0, "statuses unknown, not guessed")
        #expect(one.allWeirds.contains(.http2HeadersUndecodable) && two.allWeirds.contains(.http2HeadersUndecodable))
        #expect(one.response?.body.bytes == 500 && two.response?.body.bytes == 77, "DATA still counted")
        #expect(sink.connections.first?.weirds.contains { $0.0 == .http2HeaderBlockLost } ?? false)
    }

    /// A gap across frame headers: the rest of that direction cannot be delimited; the streams
    /// are reported with what arrived, flagged.
    @Test func aGapAcrossFrameHeadersEndsTheDirectionFlagged() throws {
        let c = HPACKEncoder(), s = HPACKEncoder()
        let client = HTTP2FrameHeader.preface + H2.settings()
            + H2.frame(.headers, flags: H2.endHeaders | H2.endStream, stream: 1, Self.request(c, "GET", "/one"))
        let lost = H2.frame(.headers, flags: H2.endHeaders, stream: 1, s.encode([(":status", "200")]))
        let after = H2.frame(.data, flags: H2.endStream, stream: 1, Array(repeating: 0x31, count: 50))
        var transcript = Transcript(blocks: [(.client, client), (.server, H2.settings()), (.server, lost), (.server, after)])
        transcript.lostBlocks = [2]
        let sink = transcript.collect()
        #expect(sink.transactions.count == 1)
        let t = try #require(sink.transactions.first)
        #expect(t.request?.method == "GET" && t.response == nil)
        #expect(t.allWeirds.contains(.responseMissing))
        #expect(sink.connections.first?.weirds.contains { $0.0 == .http2FramingLost } ?? false)
    }

    /// CONNECT names its target by :authority alone (RFC 9113 §8.5); extended CONNECT (RFC 8441,
    /// WebSocket over HTTP/2) has :protocol and :path. Their DATA is the tunnel, flagged so.
    @Test func connectAndExtendedConnectAreTunnels() throws {
        let c = HPACKEncoder(), s = HPACKEncoder()
        let client = HTTP2FrameHeader.preface + H2.settings()
            + H2.frame(.headers, flags: H2.endHeaders, stream: 1, c.encode([(":method", "CONNECT"), (":authority", "backend.test:443")]))
            + H2.frame(.headers, flags: H2.endHeaders, stream: 3, c.encode([(":method", "CONNECT"), (":protocol", "websocket"),
                                                                             (":scheme", "http"), (":path", "/chat"), (":authority", "example.test")]))
        let server = H2.settings([(8, 1)])
            + H2.frame(.headers, flags: H2.endHeaders, stream: 1, s.encode([(":status", "200")]))
            + H2.frame(.headers, flags: H2.endHeaders, stream: 3, s.encode([(":status", "200")]))
        let client2 = H2.frame(.data, flags: H2.endStream, stream: 1, Array(repeating: 0x16, count: 300))
            + H2.frame(.data, flags: H2.endStream, stream: 3, [0x81, 0x82, 1, 2, 3, 4, 0x68 ^ 1, 0x69 ^ 2])   // "hi", masked
        let server2 = H2.frame(.data, flags: H2.endStream, stream: 1, Array(repeating: 0x17, count: 900))
            + H2.frame(.data, flags: H2.endStream, stream: 3, [0x81, 0x00])
        let transactions = Transcript(blocks: [(.client, client), (.server, server), (.client, client2), (.server, server2)]).run()
        let byStream = Dictionary(uniqueKeysWithValues: transactions.map { ($0.streamID!, $0) })
        let connect = try #require(byStream[1]), websocket = try #require(byStream[3])
        #expect(connect.url == "https://backend.test:443" && connect.allWeirds == [.tunnel])
        #expect(connect.request?.body.bytes == 300 && connect.response?.body.bytes == 900)
        #expect(websocket.url == "ws://example.test/chat" && websocket.allWeirds == [.tunnel], "a WebSocket's scheme")
        #expect(websocket.request?.headers.first(":protocol") == "websocket")
    }

    /// Picked up mid-stream (no handshake, no preface): the frames are recognised; headers that
    /// use only the static table and literals decode, a reference to an unseen entry does not.
    @Test func aConnectionPickedUpMidStreamIsReadFromItsFrames() throws {
        let literal: [UInt8] = [0x82, 0x86, 0x04, 0x02] + Array("/m".utf8)   // GET, http, :path "/m" (literal, not indexed)
        let client = H2.frame(.headers, flags: H2.endHeaders | H2.endStream, stream: 9, literal)
        let server = H2.frame(.headers, flags: H2.endHeaders, stream: 9, [0x88])  // :status 200
            + H2.frame(.data, flags: H2.endStream, stream: 9, Array(repeating: 0x30, count: 10))
        let transactions = Transcript(blocks: [(.client, client), (.server, server)]).run(handshake: false)
        #expect(transactions.count == 1)
        let t = try #require(transactions.first)
        #expect(t.streamID == 9 && t.request?.targetString == "/m" && t.response?.status == 200 && t.response?.body.bytes == 10)
    }
}

/// A real capture (captures/h2c-sample.pcap, made by scripts/record-h2-sample with nghttp2's
/// nghttp, nghttpd and nghttpx and with curl): padded frames both ways, a request header block
/// in HEADERS + CONTINUATION frames, server push, `Upgrade: h2c`, an upload.
@Suite struct HTTP2CaptureTests {
    @Test func nghttp2sCaptureEndToEnd() throws {
        let (sink, _, _) = try analyse(Paths.captures.appendingPathComponent("h2c-sample.pcap").path)
        let byPath = Dictionary(sink.transactions.map { ($0.request?.targetString ?? "", $0) }, uniquingKeysWith: { first, _ in first })
        #expect(sink.transactions.count == 5)
        let index = try #require(byPath["/index.html"])
        #expect(index.response?.status == 200 && index.response?.body.decodedBytes == 5000 && index.protocolName == "h2c")
        #expect(index.request?.headers.all("continuation-test-1").first?.count == 4096)
        #expect(index.request?.headersSize ?? 0 > 16_384, "a header block over several frames")
        let pushed = try #require(byPath["/style.css"])
        #expect(pushed.pushed && pushed.streamID.map { $0 % 2 == 0 } == true)
        #expect(pushed.response?.status == 200 && pushed.response?.body.decodedBytes == 3000)
        #expect(byPath["/app.js"]?.response?.body.decodedBytes == 12_000)
        let upgraded = try #require(sink.transactions.first { $0.request?.versionText == "HTTP/1.1" })
        #expect(upgraded.request?.targetString == "/data.json" && upgraded.streamID == 1)
        #expect(upgraded.interimResponses.map(\.status) == [101])
        #expect(upgraded.response?.versionText == "HTTP/2.0" && upgraded.response?.status == 200 && upgraded.response?.body.decodedBytes == 700)
        let upload = try #require(sink.transactions.first { $0.request?.method == "POST" })
        #expect(upload.request?.body.decodedBytes == 20_000 && upload.response?.status == 200)
        for t in sink.transactions { #expect(t.allWeirds.isEmpty, "\(t.url): \(t.allWeirds)") }
    }
}

/// What a peer can make icy-sniff hold is bounded as for HTTP/1.x heads.
@Suite struct HTTP2LimitsTests {
    /// An HPACK bomb: a large table entry referenced by one-byte indices, many times. The fields
    /// past the cap are dropped and flagged; the table stays right for the next block.
    @Test func decodedHeadersAreCappedAndTheTableStaysRight() throws {
        var options = HTTPParserOptions()
        options.maxHeaderBytes = 4096
        let c = HPACKEncoder(), s = HPACKEncoder()
        let big = String(repeating: "x", count: 1000)
        let client = HTTP2FrameHeader.preface + H2.settings()
            + H2.frame(.headers, flags: H2.endHeaders | H2.endStream, stream: 1, HTTP2SessionTests.request(c, "GET", "/big", [("x-big", big)]))
            + H2.frame(.headers, flags: H2.endHeaders | H2.endStream, stream: 3,
                       HTTP2SessionTests.request(c, "GET", "/bomb", Array(repeating: ("x-big", big), count: 50)))
            + H2.frame(.headers, flags: H2.endHeaders | H2.endStream, stream: 5, HTTP2SessionTests.request(c, "GET", "/after", [("x-big", big)]))
        let server = H2.settings() + [1, 3, 5].flatMap { stream in
            H2.frame(.headers, flags: H2.endHeaders | H2.endStream, stream: UInt32(stream), s.encode([(":status", "204")]))
        }
        let transactions = Transcript(blocks: [(.client, client), (.server, server)]).run(options: options)
        let byPath = Dictionary(uniqueKeysWithValues: transactions.map { ($0.request?.targetString ?? "", $0) })
        let bomb = try #require(byPath["/bomb"])
        #expect(bomb.allWeirds.contains(.headerTooLarge))
        #expect(bomb.request?.headers.all("x-big").count ?? 99 < 5)
        #expect(byPath["/after"]?.request?.headers.first("x-big") == big, "the next block decodes")
        #expect(byPath["/after"]?.allWeirds.isEmpty == true && byPath["/big"]?.allWeirds.isEmpty == true)
    }

    /// A header block that never ends (CONTINUATION after CONTINUATION) is not collected past
    /// the cap: the stream's headers are unknown, flagged, and memory stays bounded.
    @Test func aContinuationFloodIsCutAtTheCap() throws {
        var options = HTTPParserOptions()
        options.maxHeaderBytes = 10_000
        let c = HPACKEncoder()
        let first = HTTP2SessionTests.request(c, "GET", "/flood")
        var client = HTTP2FrameHeader.preface + H2.settings() + H2.frame(.headers, flags: H2.endStream, stream: 1, first)
        for _ in 0..<40 { client += H2.frame(.continuation, stream: 1, Array(repeating: 0x40, count: 1000)) }
        let sink = Transcript(blocks: [(.client, client), (.server, H2.settings())]).collect(options: options)
        let t = try #require(sink.transactions.first)
        #expect(t.allWeirds.contains(.http2HeadersUndecodable))
        #expect(sink.connections.first?.weirds.contains { $0.0 == .headerTooLarge } ?? false)
    }
}
