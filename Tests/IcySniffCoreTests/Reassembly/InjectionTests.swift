import Foundation
import Testing
@testable import IcySniffCore

/// Retransmissions whose bytes differ from bytes already delivered (issue 18): on a carrier or a
/// censored network, a forged response races the real one; the client reads whichever comes
/// first, and the real one arrives after it with the same sequence numbers. icy-sniff shows what
/// came first (what the client read), flags the connection, and flags the entry the forged bytes
/// are in (`injection_suspected`) — on every output when the copy comes before the transaction
/// is written, in the HAR and the report when it comes after.
@Suite struct InjectionTests {
    /// Every sink at once: the transactions, a HAR and a report.
    final class Sinks: TransactionSink {
        let collected = CollectingSink()
        let har = HARWriter()
        let report = ReportCollector()
        var finished: [Connection] = []
        func consume(_ t: Transaction) { collected.consume(t); har.consume(t); report.consume(t) }
        func connectionFinished(_ c: Connection) {
            collected.connectionFinished(c); har.connectionFinished(c); report.connectionFinished(c)
            finished.append(c)
        }
        func harEntries() throws -> [[String: Any]] {
            let out = OutputFile(memory: true)
            har.write(to: out)
            let doc = try JSONSerialization.jsonObject(with: Data(out.takeBytes())) as! [String: Any]
            return (doc["log"] as! [String: Any])["entries"] as! [[String: Any]]
        }
    }

    final class Wire: TCPWire {
        let sinks: Sinks

        init() {
            let sinks = Sinks()
            self.sinks = sinks
            super.init(sink: sinks)
        }

        /// The handshake (client 1000, server 5000) and the request: the server's next sequence.
        func open(_ request: String = InjectionTests.request) -> UInt32 {
            send(fromClient: true, [.syn], seq: 1000)
            send(fromClient: false, [.syn, .ack], seq: 5000, ack: 1001)
            send(fromClient: true, [.ack], seq: 1001, ack: 5001)
            send(fromClient: true, seq: 1001, ack: 5001, request)
            return 5001
        }

        func close(serverAt seq: UInt32) {
            let requestEnd = 1001 + UInt32(InjectionTests.request.utf8.count)
            send(fromClient: false, [.fin, .ack], seq: seq, ack: requestEnd)
            send(fromClient: true, [.fin, .ack], seq: requestEnd, ack: seq + 1)
            pipeline.finish()
        }
    }

    static let request = "GET /news HTTP/1.1\r\nHost: example.com\r\n\r\n"
    static let forged = "HTTP/1.1 302 Found\r\nLocation: http://blocked.example/\r\nContent-Length: 0\r\n\r\n"
    static let real = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"

    @Test func aForgedResponseRacingTheRealOneIsFlaggedWhereItLands() throws {
        let w = Wire()
        let seq = w.open()
        // The forged 302 comes first and is complete: the transaction is written at once.
        w.send(fromClient: false, seq: seq, Self.forged)
        // The real answer, with the same sequence numbers, a moment later.
        w.send(fromClient: false, seq: seq, Self.real, after: 20)
        w.close(serverAt: seq + UInt32(Self.forged.utf8.count))

        let transactions = w.sinks.collected.transactions
        try #require(transactions.count == 1)
        #expect(transactions[0].response?.status == 302, "what the client read is shown")
        let c = try #require(w.sinks.finished.first)
        #expect(c.weirds[.retransmissionInconsistency] == 1)
        #expect(c.contradictedTransactions == [transactions[0].sequence])
        // Written before the copy came: the HAR entry and the report carry the flag.
        let entry = try #require(try w.sinks.harEntries().first)
        #expect(entry["_injection_suspected"] as? Bool == true)
        let report = w.sinks.report.report(capture: "test")
        #expect(report.injectionSuspected.count == 1 && report.injectionSuspected.prefix(1).first?.status == 302)
        #expect(ReportWriter.text(report).contains("injection suspected"))
    }

    @Test func aCopyThatComesBeforeTheResponseEndsFlagsItEverywhere() throws {
        let w = Wire()
        let seq = w.open()
        let head = "HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\n"
        w.send(fromClient: false, seq: seq, head + "0123456789")
        // Another copy of the same bytes, different: the response is still open.
        w.send(fromClient: false, seq: seq, "HTTP/1.1 403 Forbidden\r\n", after: 5)
        w.send(fromClient: false, seq: seq + UInt32(head.utf8.count) + 10, "abcdefghij")
        // And once more after it was written: it is flagged already, once is enough.
        w.send(fromClient: false, seq: seq + UInt32(head.utf8.count) + 10, "ABCDEFGHIJ", after: 5)
        w.close(serverAt: seq + UInt32(head.utf8.count) + 20)
        #expect(w.sinks.finished.first?.contradictedTransactions == [])
        let transactions = w.sinks.collected.transactions
        try #require(transactions.count == 1)
        #expect(transactions[0].allWeirds.contains(.injectionSuspected), "in every output, NDJSON and TSV too")
        #expect(transactions[0].response?.body.bytes == 20)
        let out = OutputFile(memory: true)
        w.sinks.har.write(to: out)
        let text = String(decoding: out.takeBytes(), as: UTF8.self)
        #expect(text.components(separatedBy: "\"_injection_suspected\"").count == 2, "the key once: \(text)")
        let entries = try w.sinks.harEntries()
        #expect(entries.first?["_injection_suspected"] as? Bool == true)
        #expect((entries.first?["_flags"] as? [String])?.contains("injection_suspected") == true)
        #expect(w.sinks.report.report(capture: "test").injectionSuspected.count == 1)
    }

    @Test func sameBytesAgainAndKeepAliveProbesAreNoInjection() throws {
        let w = Wire()
        let seq = w.open()
        w.send(fromClient: false, seq: seq, Self.real)
        w.send(fromClient: false, seq: seq, Self.real, after: 200)            // an ordinary retransmission
        let end = seq + UInt32(Self.real.utf8.count)
        w.send(fromClient: false, [.ack], seq: end - 1, "\u{0}", after: 7200)   // a keep-alive probe: any byte
        w.close(serverAt: end)
        let c = try #require(w.sinks.finished.first)
        #expect(c.weirds[.retransmissionInconsistency] == nil)
        #expect(c.contradictedTransactions.isEmpty)
        #expect(!(try w.sinks.harEntries().first?.keys.contains("_injection_suspected") ?? true))
        #expect(w.sinks.report.report(capture: "test").injectionSuspected.isEmpty)
    }

    @Test func onlyTheDeliveredHistoryIsCompared() throws {
        // A copy reaching further back than the history (128 bytes) is compared where it can be.
        let w = Wire()
        let seq = w.open()
        let body = String(repeating: "x", count: 400)
        let response = "HTTP/1.1 200 OK\r\nContent-Length: 400\r\n\r\n" + body
        w.send(fromClient: false, seq: seq, response)
        var altered = Array(response.utf8)
        altered[10] = UInt8(ascii: "!")                  // before the history: cannot be seen
        w.send(fromClient: false, seq: seq, String(decoding: altered, as: UTF8.self), after: 10)
        altered[altered.count - 3] = UInt8(ascii: "!")    // inside it: seen
        w.send(fromClient: false, seq: seq, String(decoding: altered, as: UTF8.self), after: 10)
        w.close(serverAt: seq + UInt32(response.utf8.count))
        let c = try #require(w.sinks.finished.first)
        #expect(c.weirds[.retransmissionInconsistency] == 1)
        #expect(c.contradictedTransactions.count == 1)
    }
}
