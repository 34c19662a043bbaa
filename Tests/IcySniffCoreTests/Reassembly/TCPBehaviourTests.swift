import Testing
@testable import IcySniffCore

/// TCP as real traffic does it (issue 18): several SYNs before one is answered, retransmissions
/// after the end, data in a SYN, simultaneous open, data in a RST, a body cut by a RST, and
/// keep-alive probes.
@Suite struct TCPBehaviourTests {
    final class Wire: CollectingWire {
        /// SYN 1000, SYN/ACK 5000, then `request` and `response`: where each side's sequence
        /// numbers stand after them.
        @discardableResult
        func openAndExchange() -> (requestEnd: UInt32, responseEnd: UInt32) {
            let requestEnd = 1001 + UInt32(TCPBehaviourTests.request.utf8.count)
            send(fromClient: true, [.syn], seq: 1000)
            send(fromClient: false, [.syn, .ack], seq: 5000, ack: 1001)
            send(fromClient: true, [.ack, .psh], seq: 1001, ack: 5001, TCPBehaviourTests.request)
            send(fromClient: false, [.ack, .psh], seq: 5001, ack: requestEnd, TCPBehaviourTests.response)
            return (requestEnd, 5001 + UInt32(TCPBehaviourTests.response.utf8.count))
        }

        func finish() -> (transactions: [Transaction], connections: [ConnectionSummary], stats: RunStats) {
            pipeline.finish()
            return (sink.transactions, sink.connections, pipeline.stats)
        }
    }

    static let request = "GET /a HTTP/1.1\r\nHost: h\r\n\r\n"
    static let response = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"

    @Test func theSYNTheSYNACKAnswersSetsTheSequenceSpace() {
        let w = Wire()
        w.send(fromClient: true, [.syn], seq: 1000)
        w.send(fromClient: true, [.syn], seq: 90_000, after: 1000)     // a retry with another ISN
        w.send(fromClient: false, [.syn, .ack], seq: 5000, ack: 90_001)
        w.send(fromClient: true, [.ack], seq: 90_001, ack: 5001)
        w.send(fromClient: true, [.ack, .psh], seq: 90_001, ack: 5001, Self.request)
        w.send(fromClient: false, [.ack, .psh], seq: 5001, ack: 90_001 + UInt32(Self.request.utf8.count), Self.response)
        let (transactions, connections, _) = w.finish()
        #expect(transactions.map(summary) == ["GET /a HTTP/1.1 body=0 -> 200 body=5/5 []"])
        #expect(connections.count == 1)
        #expect(connections[0].gaps == 0 && connections[0].weirds.isEmpty, "\(connections[0].weirds)")
    }

    /// Two SYN/ACKs with different initial sequence numbers (issue 32: a capture of another
    /// project's had them, and the 200 was lost as request_without_response): the client's
    /// ACK, or else the server's first data, says which one the server went on with.
    @Test(arguments: [true, false])
    func twoSYNACKsAndTheClientAnswersTheFirst(clientACKCaptured: Bool) {
        let w = Wire()
        let requestEnd = 1001 + UInt32(Self.request.utf8.count)
        w.send(fromClient: true, [.syn], seq: 1000)
        w.send(fromClient: false, [.syn, .ack], seq: 5000, ack: 1001)
        w.send(fromClient: false, [.syn, .ack], seq: 77_000, ack: 1001)
        if clientACKCaptured {
            w.send(fromClient: true, [.ack], seq: 1001, ack: 5001)
            w.send(fromClient: true, [.ack, .psh], seq: 1001, ack: 5001, Self.request)
        } else {
            // Only the server's side after the handshake: its data shows the sequence space.
            w.send(fromClient: false, [.ack, .psh], seq: 5001, ack: requestEnd, Self.response)
            let (transactions, connections, _) = w.finish()
            #expect(transactions.map(summary) == ["- -> 200 body=5/5 [response_without_request]"])
            #expect(connections.first?.gaps == 0)
            return
        }
        w.send(fromClient: false, [.ack, .psh], seq: 5001, ack: requestEnd, Self.response)
        let (transactions, connections, _) = w.finish()
        #expect(transactions.map(summary) == ["GET /a HTTP/1.1 body=0 -> 200 body=5/5 []"])
        #expect(connections.first?.gaps == 0)
    }

    @Test func aRetransmissionAfterTheEndIsNotASecondConnection() {
        let w = Wire()
        let (requestEnd, responseEnd) = w.openAndExchange()
        w.send(fromClient: true, [.fin, .ack], seq: requestEnd, ack: responseEnd)
        w.send(fromClient: false, [.fin, .ack], seq: responseEnd, ack: requestEnd + 1)
        // The response again, and the request again, after both FINs.
        w.send(fromClient: false, [.ack, .psh], seq: 5001, ack: requestEnd, Self.response, after: 200)
        w.send(fromClient: true, [.ack, .psh], seq: 1001, ack: 5001, Self.request, after: 10)
        let (transactions, connections, stats) = w.finish()
        #expect(transactions.count == 1)
        #expect(connections.count == 1)
        #expect(stats.weirds[.retransmissionAfterEnd] == 2)
    }

    @Test func dataInTheSYNAndSimultaneousOpen() {
        // TCP Fast Open: the request rides in the SYN.
        let fast = Wire()
        fast.send(fromClient: true, [.syn], seq: 1000, Self.request)
        let requestEnd = 1001 + UInt32(Self.request.utf8.count)
        fast.send(fromClient: false, [.syn, .ack], seq: 5000, ack: requestEnd)
        fast.send(fromClient: false, [.ack, .psh], seq: 5001, ack: requestEnd, Self.response)
        #expect(fast.finish().transactions.map(summary) == ["GET /a HTTP/1.1 body=0 -> 200 body=5/5 []"])

        // Both ends send a SYN, then both a SYN/ACK (RFC 9293 §3.5, figure 8).
        let both = Wire()
        both.send(fromClient: true, [.syn], seq: 1000)
        both.send(fromClient: false, [.syn], seq: 5000)
        both.send(fromClient: true, [.syn, .ack], seq: 1000, ack: 5001)
        both.send(fromClient: false, [.syn, .ack], seq: 5000, ack: 1001)
        both.send(fromClient: true, [.ack, .psh], seq: 1001, ack: 5001, Self.request)
        both.send(fromClient: false, [.ack, .psh], seq: 5001, ack: 1001 + UInt32(Self.request.utf8.count), Self.response)
        let (transactions, connections, _) = both.finish()
        #expect(transactions.map(summary) == ["GET /a HTTP/1.1 body=0 -> 200 body=5/5 []"])
        #expect(connections.count == 1)
    }

    @Test func dataInARSTIsNotStreamDataAndARSTCutsTheBodyShort() {
        let w = Wire()
        let requestEnd = 1001 + UInt32(Self.request.utf8.count)
        w.send(fromClient: true, [.syn], seq: 1000)
        w.send(fromClient: false, [.syn, .ack], seq: 5000, ack: 1001)
        w.send(fromClient: true, [.ack, .psh], seq: 1001, ack: 5001, Self.request)
        w.send(fromClient: false, [.rst, .ack], seq: 5001, ack: requestEnd, "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
        let (transactions, connections, _) = w.finish()
        #expect(transactions.count == 1)
        #expect(transactions.first?.response == nil)
        #expect(connections.first?.weirds.contains { $0.0 == .rstWithData } == true)

        let cut = Wire()
        cut.send(fromClient: true, [.syn], seq: 1000)
        cut.send(fromClient: false, [.syn, .ack], seq: 5000, ack: 1001)
        cut.send(fromClient: true, [.ack, .psh], seq: 1001, ack: 5001, Self.request)
        let head = "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + String(repeating: "x", count: 400)
        cut.send(fromClient: false, [.ack, .psh], seq: 5001, ack: requestEnd, head)
        cut.send(fromClient: false, [.rst], seq: 5001 + UInt32(head.utf8.count))
        let t = cut.finish().transactions
        #expect(t.count == 1)
        #expect(t.first?.response?.body.bytes == 400)
        #expect(t.first?.allWeirds.contains(.responseIncomplete) == true, "\(t.first?.allWeirds ?? [])")
    }

    @Test func keepAliveProbesAreNotStreamData() {
        let w = Wire()
        let (requestEnd, responseEnd) = w.openAndExchange()
        // A keep-alive probe: one (garbage) byte just below the next sequence number.
        w.send(fromClient: true, [.ack], seq: requestEnd - 1, ack: responseEnd, "\0", after: 45_000)
        w.send(fromClient: false, [.ack], seq: responseEnd, ack: requestEnd)
        w.send(fromClient: true, [.ack, .psh], seq: requestEnd, ack: responseEnd, Self.request)
        w.send(fromClient: false, [.ack, .psh], seq: responseEnd, ack: requestEnd + UInt32(Self.request.utf8.count), Self.response)
        let (transactions, connections, _) = w.finish()
        #expect(transactions.map(summary) == ["GET /a HTTP/1.1 body=0 -> 200 body=5/5 []", "GET /a HTTP/1.1 body=0 -> 200 body=5/5 []"])
        #expect(connections.first?.weirds.isEmpty == true, "\(connections.first?.weirds ?? [])")
    }
}
