import Benchmark
import IcySniffCore

// One benchmark per pipeline stage, on inputs built here (no capture file needed). Each reports
// wall time, throughput and mallocs per iteration: the per-packet stages (decode, reassembly)
// should allocate nothing per packet; the HTTP parser and JSON writer a bounded number per message.

/// An Ethernet + IPv4 + TCP frame carrying `payload` bytes.
func frame(payload: Int) -> [UInt8] {
    var f: [UInt8] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x08, 0x00]
    let total = 20 + 20 + payload
    f += [0x45, 0, UInt8(total >> 8), UInt8(total & 0xff), 0, 1, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 2, 10, 0, 0, 1]
    f += [0xb4, 0x6e, 0x1f, 0x90, 0, 0, 0x10, 0, 0, 0, 0, 1, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0]
    f += [UInt8](repeating: 0x61, count: payload)
    return f
}

/// `count` keep-alive responses of `bodySize` bytes each, as one byte stream.
func responses(count: Int, bodySize: Int) -> [UInt8] {
    var out: [UInt8] = []
    let body = [UInt8](repeating: 0x62, count: bodySize)
    for i in 0..<count {
        out += Array("""
        HTTP/1.1 200 OK\r
        Server: nginx/1.22.1\r
        Date: Sun, 22 Nov 2026 19:03:25 GMT\r
        Content-Type: application/json\r
        Content-Length: \(bodySize)\r
        Last-Modified: Sun, 22 Nov 2026 18:00:0\(i % 10) GMT\r
        Connection: keep-alive\r
        ETag: "6740a1b2-\(i)"\r
        Cache-Control: max-age=60\r
        Accept-Ranges: bytes\r
        \r

        """.utf8)
        out += body
    }
    return out
}

final class NullHandler: StreamHandler {
    var bytes = 0
    func received(_ chunk: StreamChunk, from direction: Direction, on connection: Connection) { bytes &+= chunk.bytes.count }
    func missed(_ gap: StreamGap, from direction: Direction, on connection: Connection) {}
    func ended(_ direction: Direction, reason: CloseReason, at timestamp: Timestamp, on connection: Connection) {}
    func finished(_ connection: Connection, at timestamp: Timestamp) {}
}

final class CountingDelegate: HTTPParserDelegate {
    var messages = 0
    func parserBegan(_ message: HTTPMessage) {}
    func parserCompletedHead(_ message: HTTPMessage) {}
    func parserEnded(_ message: HTTPMessage) { messages += 1 }
    func parserRequestBeingAnswered() -> RequestContext { .unknown }
    func parserSkipped(_ weird: Weird, bytes: Int) {}
}

let metrics: [BenchmarkMetric] = [.wallClock, .throughput, .mallocCountTotal]

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(metrics: metrics, scalingFactor: .kilo, maxDuration: .seconds(2))

    // Decode: one 1448-byte Ethernet/IPv4/TCP frame, link header to TCP segment.
    Benchmark("decode ethernet-ipv4-tcp frame") { benchmark in
        let bytes = frame(payload: 1448)
        var decoder = PacketDecoder(linkType: .ethernet)
        bytes.withUnsafeBytes { raw in
            let packet = CapturedPacket(bytes: raw, timestamp: Timestamp(nanoseconds: 1), wireLength: raw.count)
            for _ in benchmark.scaledIterations { blackHole(decoder.decode(packet)) }
        }
    }

    // Reassembly: one connection (handshake, 1000 in-order 1448-byte segments, every tenth
    // delivered after its successor, FIN) per iteration.
    Benchmark("reassembly 1000 segments, 10% reordered", configuration: .init(scalingFactor: .one)) { benchmark in
        let client = Endpoint(address: IPAddress(ipv4: 0x0a00_0002), port: 46_190)
        let server = Endpoint(address: IPAddress(ipv4: 0x0a00_0001), port: 8080)
        let payload = [UInt8](repeating: 0x61, count: 1448)
        var order = Array(0..<1000)
        for i in stride(from: 0, to: 999, by: 10) { order.swapAt(i, i + 1) }
        payload.withUnsafeBytes { data in
            let empty = UnsafeRawBufferPointer(rebasing: data[0..<0])
            for iteration in benchmark.scaledIterations {
                let table = ConnectionTable<NullHandler> { _ in NullHandler() }
                let port = UInt16(truncatingIfNeeded: 1024 + iteration)
                let c = Endpoint(address: client.address, port: port)
                var t: Int64 = 1
                func seg(_ from: Endpoint, _ to: Endpoint, _ seq: UInt32, _ ack: UInt32, _ flags: TCPFlags, _ p: UnsafeRawBufferPointer) {
                    t += 1000
                    table.ingest(TCPSegment(source: from, destination: to, sequence: seq, acknowledgement: ack, flags: flags,
                                            payload: p, timestamp: Timestamp(nanoseconds: t)))
                }
                seg(c, server, 100, 0, [.syn], empty)
                seg(server, c, 500, 101, [.syn, .ack], empty)
                seg(c, server, 101, 501, [.ack], empty)
                for k in order { seg(server, c, 501 &+ UInt32(k * 1448), 101, [.ack], data) }
                seg(server, c, 501 &+ UInt32(1000 * 1448), 101, [.fin, .ack], empty)
                table.flushAll(at: Timestamp(nanoseconds: t))
                blackHole(table)
            }
        }
    }

    // HTTP parser: 100 keep-alive responses (10 header fields, 2 KiB bodies) in 1448-byte chunks.
    Benchmark("http parser 100 responses", configuration: .init(scalingFactor: .one)) { benchmark in
        let stream = responses(count: 100, bodySize: 2048)
        stream.withUnsafeBytes { raw in
            for _ in benchmark.scaledIterations {
                let delegate = CountingDelegate()
                let parser = HTTPStreamParser(role: .response, options: HTTPParserOptions(), delegate: delegate)
                var offset = 0
                while offset < raw.count {
                    let end = min(raw.count, offset + 1448)
                    parser.parse(StreamChunk(offset: UInt64(offset), bytes: UnsafeRawBufferPointer(rebasing: raw[offset..<end]),
                                             timestamp: Timestamp(nanoseconds: Int64(offset))))
                    offset = end
                }
                parser.finish(at: Timestamp(nanoseconds: Int64(raw.count)), reason: .fin)
                precondition(delegate.messages == 100)
            }
        }
    }

    // JSON writer: one NDJSON-like record of 40 fields (strings, integers, decimals, null).
    Benchmark("json writer 40-field record") { benchmark in
        let w = JSONWriter()
        for i in benchmark.scaledIterations {
            w.reset()
            w.beginObject()
            w.string("ts", "2026-11-22T19:03:25.043797Z")
            w.string("url", "http://api.icy.test:8080/api/item-044.json?page=\(i & 7)")
            w.string("method", "GET")
            w.string("content_type", "application/json; charset=utf-8")
            for _ in 0..<8 {
                w.int("status", 200); w.int("response_body_len", 48_213)
                w.number("wait_ms", 12.345); w.bool("cache_avoidable", false)
            }
            w.optionalString("location", nil)
            w.string("user_agent", "Mozilla/5.0 (\"quoted\") \\ tab\there")
            w.endObject()
            blackHole(w.count)
        }
    }
}
