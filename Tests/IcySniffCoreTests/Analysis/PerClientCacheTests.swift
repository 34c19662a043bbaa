import Testing
@testable import IcySniffCore

/// The cache model is one private cache per client (address and User-Agent): what one device
/// fetched does not make another device's first download avoidable.
@Suite struct PerClientCacheTests {
    /// One GET of /app.js with a fresh response, from `address` with `agent`, at `time` seconds.
    static func fetch(_ pipeline: Pipeline, port: UInt16, address: UInt32, agent: String, at time: Int64) {
        let w = TCPWire(pipeline: pipeline, clientPort: port, clientAddress: address)
        w.t = 1_700_000_000_000_000_000 + time * 1_000_000_000
        w.send(fromClient: true, [.syn], seq: 0)
        w.send(fromClient: false, [.syn, .ack], seq: 0, ack: 1)
        w.send(fromClient: true, [.ack], seq: 1, ack: 1)
        let get = "GET /app.js HTTP/1.1\r\nHost: example.com\r\nUser-Agent: \(agent)\r\n\r\n"
        let reply = "HTTP/1.1 200 OK\r\nCache-Control: max-age=3600\r\nETag: \"v1\"\r\nContent-Length: 2\r\n\r\nok"
        w.send(fromClient: true, seq: 1, ack: 1, get)
        w.send(fromClient: false, seq: 1, ack: 1 + UInt32(get.utf8.count), reply)
        w.send(fromClient: true, [.fin, .ack], seq: 1 + UInt32(get.utf8.count), ack: 1 + UInt32(reply.utf8.count))
        w.send(fromClient: false, [.fin, .ack], seq: 1 + UInt32(reply.utf8.count), ack: 2 + UInt32(get.utf8.count))
    }

    @Test func eachClientHasACacheOfItsOwn() throws {
        let collected = CollectingSink()
        let pipeline = Pipeline(sink: CacheJudgingSink(next: collected))
        let phoneA: UInt32 = 0x0A00_0002, phoneB: UInt32 = 0x0A00_0003
        Self.fetch(pipeline, port: 40001, address: phoneA, agent: "App/1.0", at: 0)
        Self.fetch(pipeline, port: 40002, address: phoneB, agent: "App/1.0", at: 60)     // another phone
        Self.fetch(pipeline, port: 40003, address: phoneA, agent: "Browser/2.0", at: 90) // another app on A
        Self.fetch(pipeline, port: 40004, address: phoneA, agent: "App/1.0", at: 120)    // A's app again
        Self.fetch(pipeline, port: 40005, address: phoneB, agent: "App/1.0", at: 150)    // B's app again
        pipeline.finish()
        let verdicts = collected.transactions.sorted { $0.startTime < $1.startTime }.map { $0.cache?.avoidable }
        #expect(verdicts == [false, false, false, true, true])
    }

    /// The report's "re-downloaded unchanged" and "avoidable" lists are per client too.
    @Test func theReportBlamesOnlyTheDeviceThatRefetched() throws {
        let report = ReportCollector()
        let pipeline = Pipeline(sink: CacheJudgingSink(next: report))
        Self.fetch(pipeline, port: 40001, address: 0x0A00_0002, agent: "App/1.0", at: 0)
        Self.fetch(pipeline, port: 40002, address: 0x0A00_0003, agent: "App/1.0", at: 60)
        Self.fetch(pipeline, port: 40003, address: 0x0A00_0002, agent: "App/1.0", at: 90)
        Self.fetch(pipeline, port: 40004, address: 0x0A00_0002, agent: "Browser/2.0", at: 95)
        pipeline.finish()
        let r = report.report(capture: "two phones")
        #expect(r.opportunities.avoidable.count == 1, "only phone A's own refetch")
        #expect(r.opportunities.unchangedRedownloads.count == 0)
        // Each device apart: its requests, bytes, avoidable downloads and apps.
        #expect(r.devices.map(\.client) == ["10.0.0.2", "10.0.0.3"], "most bytes first")
        let a = try #require(r.devices.first), b = try #require(r.devices.last)
        #expect(a.requests == 3 && a.connections == 3 && a.avoidable == 1 && a.avoidableBytes > 0 && b.requests == 1 && b.avoidable == 0)
        #expect(a.wireBytes > b.wireBytes && b.wireBytes > 0)
        #expect(a.userAgents.map(\.agent) == ["App/1.0", "Browser/2.0"] && a.userAgents.map(\.requests) == [2, 1])
        let text = ReportWriter.text(r, width: 160)
        #expect(text.contains("Devices (2), most bytes first:"))
        // Side by side: one row per device under one header.
        let rows = text.split(separator: "\n").drop { !$0.hasPrefix("Devices (2)") }.dropFirst().prefix(3).map(String.init)
        #expect(rows.first?.split(separator: " ").map(String.init) == ["device", "wire", "conns", "encrypted", "requests", "failed", "avoidable", "wasted", "apps"])
        let rowA = rows.dropFirst().first?.split(separator: " ").map(String.init) ?? []
        #expect(rowA.first == "10.0.0.2" && rowA.dropFirst(3).prefix(4) == ["3", "0", "3", "0"] && rowA.dropFirst(7).first == "1", "\(rows)")
        #expect(rows.dropFirst().first?.hasSuffix("App/1.0 (2), Browser/2.0 (1)") == true)
        #expect(rows.last?.hasPrefix("  10.0.0.3") == true)
        let json = String(decoding: ReportWriter.json([r]), as: UTF8.self)
        #expect(json.contains("\"devices\"") && json.contains("\"userAgent\""))
    }
}
