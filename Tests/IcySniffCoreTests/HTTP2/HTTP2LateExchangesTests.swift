import Foundation
import Testing
@testable import IcySniffCore

/// HTTP/2 exchanges that come in an order RFC 9113 allows or a passive tool must still follow
/// (issue 32): a request body sent after the server answered and reset the stream with
/// NO_ERROR (§8.1, as nginx answers a POST), and a request on a stream id below one the client
/// already used (§5.1.1), which vanished with its response.
@Suite struct HTTP2LateExchangesTests {
    static let upload = Array(repeating: UInt8(ascii: "u"), count: 632)

    static func post(_ c: HPACKEncoder, stream: UInt32) -> [UInt8] {
        H2.frame(.headers, flags: H2.endHeaders, stream: stream,
                 c.encode([(":method", "POST"), (":scheme", "http"), (":authority", "example.test"), (":path", "/form"),
                           ("content-length", "632"), ("content-type", "application/octet-stream")]))
    }

    /// The server answers 201 in full and resets with NO_ERROR; the client's DATA follows.
    static func answeredBeforeItsBody(clientFinishes: Bool) -> [(Transcript.Side, [UInt8])] {
        let c = HPACKEncoder(), s = HPACKEncoder()
        let client = HTTP2FrameHeader.preface + H2.settings() + post(c, stream: 1)
        var server = H2.settings() + H2.settings(ack: true)
        server += H2.frame(.headers, flags: H2.endHeaders, stream: 1, s.encode([(":status", "201"), ("content-length", "7")]))
        server += H2.frame(.data, flags: H2.endStream, stream: 1, Array("created".utf8))
        server += H2.frame(.rstStream, stream: 1, H2.u32(0))
        let body = clientFinishes ? upload : Array(upload[..<300])
        let data = H2.frame(.data, flags: clientFinishes ? H2.endStream : 0, stream: 1, body)
        return [(.client, client), (.server, server), (.client, H2.settings(ack: true) + data)]
    }

    @Test func aRequestBodyAfterTheServersNoErrorResetIsRecorded() throws {
        for size in [0, 1, 7, 100] {
            let t = try #require(Transcript(blocks: Self.answeredBeforeItsBody(clientFinishes: true)).run(segmentSize: size).first)
            #expect(summary(t) == "POST /form HTTP/2.0 body=632 -> 201 body=7/7 []", "segments of \(size)")
        }
    }

    @Test func aRequestCutShortByTheResetKeepsWhatCameAndSaysItIsIncomplete() throws {
        let sink = Transcript(blocks: Self.answeredBeforeItsBody(clientFinishes: false)).collect()
        let t = try #require(sink.transactions.first)
        #expect(summary(t) == "POST /form HTTP/2.0 body=300 -> 201 body=7/7 [request_incomplete]")
    }

    @Test func aResetWithAnErrorIsStillAReset() throws {
        var blocks = Self.answeredBeforeItsBody(clientFinishes: true)
        // The same exchange reset with INTERNAL_ERROR (2): the stream ends there, flagged.
        let s = blocks[1].1
        blocks[1].1 = Array(s[..<(s.count - 4)]) + H2.u32(2)
        let t = try #require(Transcript(blocks: blocks).run().first)
        #expect(summary(t) == "POST /form HTTP/2.0 body=0 -> 201 body=7/7 [http2_stream_reset,request_incomplete]")
    }

    @Test func aRequestOnALowerStreamIdIsShownAndNamed() throws {
        let c = HPACKEncoder(), s = HPACKEncoder()
        func get(_ path: String, _ stream: UInt32) -> [UInt8] {
            H2.frame(.headers, flags: H2.endHeaders | H2.endStream, stream: stream,
                     c.encode([(":method", "GET"), (":scheme", "http"), (":authority", "example.test"), (":path", path)]))
        }
        func ok(_ stream: UInt32, _ body: String) -> [UInt8] {
            H2.frame(.headers, flags: H2.endHeaders, stream: stream, s.encode([(":status", "200")]))
                + H2.frame(.data, flags: H2.endStream, stream: stream, Array(body.utf8))
        }
        let blocks: [(Transcript.Side, [UInt8])] = [
            (.client, HTTP2FrameHeader.preface + H2.settings() + get("/five", 5)),
            (.server, H2.settings() + ok(5, "five")),
            (.client, get("/three", 3)),
            (.server, ok(3, "three")),
        ]
        let sink = Transcript(blocks: blocks).collect()
        let byStream = Dictionary(uniqueKeysWithValues: sink.transactions.map { ($0.streamID ?? 0, $0) })
        #expect(byStream.count == 2)
        #expect(byStream[5].map(summary) == "GET /five HTTP/2.0 body=0 -> 200 body=4/4 []")
        #expect(byStream[3].map(summary) == "GET /three HTTP/2.0 body=0 -> 200 body=5/5 [http2_stream_id_out_of_order]")
        #expect(sink.connections.first?.weirds.map(\.0).contains(.http2StreamIDOutOfOrder) == true)
    }

    /// HAR replayers (Playwright's route_from_har) time out on an HTTP/2 response that lists
    /// `:status` among its headers; Chrome's export leaves it out and keeps the request's
    /// pseudo-headers. So does icy-sniff's.
    @Test func harResponseHeadersLeaveOutStatusAsChromeDoes() throws {
        let transactions = Transcript(blocks: Self.answeredBeforeItsBody(clientFinishes: true)).run()
        let har = HARWriter(options: ExportOptions())
        for t in transactions { har.consume(t) }
        let out = OutputFile(memory: true)
        har.write(to: out)
        let doc = try #require(try JSONSerialization.jsonObject(with: Data(out.takeBytes())) as? [String: Any])
        let entry = try #require(((doc["log"] as? [String: Any])?["entries"] as? [[String: Any]])?.first)
        func names(_ side: String) -> [String] {
            ((entry[side] as? [String: Any])?["headers"] as? [[String: Any]])?.compactMap { $0["name"] as? String } ?? []
        }
        #expect(names("request").prefix(4) == [":method", ":scheme", ":authority", ":path"])
        #expect(names("response") == ["content-length"])
        #expect((entry["response"] as? [String: Any])?["status"] as? Int == 201)
    }
}
