import Testing
@testable import IcySniffCore

/// `--bodies` keeps each body up to its cap, and all bodies being received together up to the
/// pipeline's budget: connections each half-way through a large body cannot add up without end.
@Suite struct BodyBudgetTests {
    /// Two connections receive 600-byte bodies at once under a budget of 1,000 bytes: 500 bytes
    /// of each fill it, so the first is cut where the budget ended and says so; once it is
    /// emitted, its bytes are free again, the second is kept whole, and so is a third body.
    @Test func bodiesReceivedTogetherShareTheBudget() throws {
        let sink = CollectingSink()
        var options = PipelineOptions()
        options.http.keepBodies = true
        let budget = BodyBudget(limit: 1000)
        options.http.bodyBudget = budget
        let pipeline = Pipeline(sink: sink, options: options)
        let a = TCPWire(pipeline: pipeline, clientPort: 40001)
        let b = TCPWire(pipeline: pipeline, clientPort: 40002)
        let body = String(repeating: "a", count: 600)
        let head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 600\r\n\r\n"
        for w in [a, b] {
            w.send(fromClient: true, [.syn], seq: 0)
            w.send(fromClient: false, [.syn, .ack], seq: 0, ack: 1)
            w.send(fromClient: true, [.ack], seq: 1, ack: 1)
        }
        let get = "GET /x HTTP/1.1\r\nHost: h\r\n\r\n"
        a.send(fromClient: true, seq: 1, ack: 1, get)
        b.send(fromClient: true, seq: 1, ack: 1, get)
        // 500 bytes of each body: both are being received at once, the budget is full.
        a.send(fromClient: false, seq: 1, ack: 1 + UInt32(get.utf8.count), head + body.prefix(500))
        b.send(fromClient: false, seq: 1, ack: 1 + UInt32(get.utf8.count), head + body.prefix(500))
        #expect(budget.used == 1000)
        a.send(fromClient: false, seq: 1 + UInt32(head.utf8.count + 500), ack: 1 + UInt32(get.utf8.count), String(body.suffix(100)))
        #expect(budget.used == 500, "the first is emitted: its bytes no longer count")
        b.send(fromClient: false, seq: 1 + UInt32(head.utf8.count + 500), ack: 1 + UInt32(get.utf8.count), String(body.suffix(100)))
        #expect(sink.transactions.count == 2)
        #expect(budget.used == 0, "emitted bodies no longer count")
        let first = try #require(sink.transactions.first { $0.connection.client.port == 40001 }?.response)
        let second = try #require(sink.transactions.first { $0.connection.client.port == 40002 }?.response)
        #expect(first.body.kept?.count == 500 && first.body.truncated)
        #expect(first.body.bytes == 600, "sizes stay exact")
        #expect(first.weirds.contains(.bodiesBudgetExceeded))
        #expect(!first.weirds.contains(.bodyTruncatedInMemory))
        #expect(second.body.kept?.count == 600 && !second.body.truncated)
        // Free again: the next body on the first connection is kept whole.
        let next = 1 + UInt32(get.utf8.count)
        a.send(fromClient: true, seq: next, ack: 1 + UInt32(head.utf8.count + 600), get)
        a.send(fromClient: false, seq: 1 + UInt32(head.utf8.count + 600), ack: next + UInt32(get.utf8.count), head + body)
        pipeline.finish()
        let third = try #require(sink.transactions.dropFirst(2).first?.response)
        #expect(third.body.kept?.count == 600 && !third.body.truncated)
    }
}
