import Testing
@testable import IcySniffCore

/// Resync from anything (issue 18): a connection picked up inside a body, or whose head was
/// lost, finds the next message even when the body's end runs straight into it (no line end):
/// a message usually starts a TCP segment of its own, so a segment that begins with a start
/// line ends the garbage before it.
@Suite struct ResyncTests {
    @Test func pickedUpInsideABodyTheNextSegmentsMessageIsFound() {
        let w = CollectingWire()
        // No handshake: the capture starts in the middle of a response body, then a request and
        // its response; neither the body's end nor the previous request ends with a line end.
        w.send(fromClient: false, seq: 9000, ack: 2000, "...the end of a body\u{1}\u{2}")
        w.send(fromClient: true, seq: 2000, ack: 9022, "GET /next HTTP/1.1\r\nHost: example.com\r\n\r\n")
        w.send(fromClient: false, seq: 9022, ack: 2042, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        w.pipeline.finish()
        let rows = w.sink.transactions.map(summary)
        // The garbage is the end of a message not seen: the connection says so, not the transaction.
        #expect(rows == ["GET /next HTTP/1.1 body=0 -> 200 body=2/2 []"], "\(rows)")
        #expect(w.sink.connections.first?.weirds.contains { $0.0 == .unexpectedServerData } == true)
    }

    @Test func aRequestStartingASegmentAfterGarbageIsFound() {
        let w = CollectingWire()
        w.send(fromClient: true, seq: 2000, ack: 9000, "\u{0}\u{7}tail of an upload")
        w.send(fromClient: true, seq: 2019, ack: 9000, "POST /form HTTP/1.1\r\nHost: example.com\r\nContent-Length: 1\r\n\r\nx")
        w.send(fromClient: false, seq: 9000, ack: 2086, "HTTP/1.1 204 No Content\r\n\r\n")
        w.pipeline.finish()
        let rows = w.sink.transactions.map(summary)
        #expect(rows == ["POST /form HTTP/1.1 body=1 -> 204 body=0/0 []"], "\(rows)")
        #expect(w.sink.connections.first?.weirds.contains { $0.0 == .unexpectedClientData } == true)
    }

    @Test func aStartLineFoundAcrossSegmentsStartsWhereItBegan() throws {
        let w = CollectingWire()
        w.send(fromClient: true, seq: 2000, ack: 9000, "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n")
        // Picked up mid-stream: a line of garbage, then a status line cut between two segments.
        w.send(fromClient: false, seq: 9000, ack: 2035, "garbage\r\nHTTP/1.1 2")
        w.send(fromClient: false, seq: 9019, ack: 2035, "00 OK\r\nContent-Length: 0\r\n\r\n")
        w.pipeline.finish()
        let response = try #require(w.sink.transactions.first?.response)
        #expect(response.status == 200)
        #expect(response.arrival.startOffset == 9, "the status line begins after \"garbage\\r\\n\", in the first segment")
    }
}
