import Testing
import Foundation
@testable import IcySniffCore

/// Bodies larger than the writer's drain threshold are written into the HAR in slices: the
/// document must be the same JSON, every byte of every body where it was.
@Suite struct LargeBodyTests {
    /// One transaction: a POST whose body is `request`, answered with `response` as `type`.
    static func har(request: [UInt8], requestType: String, response: [UInt8], type: String) throws -> [String: Any] {
        var options = PipelineOptions()
        options.http.keepBodies = true
        let writer = HARWriter(options: { var o = ExportOptions(); o.includeBodies = true; return o }(), spill: SpillStore(memoryLimit: 1 << 20))
        let pipeline = Pipeline(sink: writer, options: options)
        let wire = TCPWire(pipeline: pipeline, clientPort: 40100)
        let head = Array("POST /up HTTP/1.1\r\nHost: h\r\nContent-Type: \(requestType)\r\nContent-Length: \(request.count)\r\n\r\n".utf8) + request
        let reply = Array("HTTP/1.1 200 OK\r\nContent-Type: \(type)\r\nContent-Length: \(response.count)\r\n\r\n".utf8) + response
        func send(_ bytes: [UInt8], fromClient: Bool, seq: UInt32, ack: UInt32) {
            var at = 0
            while at < bytes.count {
                let piece = Array(bytes[at..<min(bytes.count, at + 60_000)])
                wire.t += 1_000_000
                piece.withUnsafeBytes { raw in
                    pipeline.ingest(TCPSegment(source: fromClient ? wire.client : wire.server, destination: fromClient ? wire.server : wire.client,
                                               sequence: seq &+ UInt32(at), acknowledgement: ack, flags: [.ack, .psh], payload: raw,
                                               timestamp: Timestamp(nanoseconds: wire.t)))
                }
                at += piece.count
            }
        }
        wire.send(fromClient: true, [.syn], seq: 0)
        wire.send(fromClient: false, [.syn, .ack], seq: 0, ack: 1)
        wire.send(fromClient: true, [.ack], seq: 1, ack: 1)
        send(head, fromClient: true, seq: 1, ack: 1)
        send(reply, fromClient: false, seq: 1, ack: 1 &+ UInt32(head.count))
        pipeline.finish()
        let out = OutputFile(memory: true)
        writer.write(to: out)
        let bytes = out.takeBytes()
        return try #require(JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    static func entry(_ har: [String: Any]) -> [String: Any] {
        (((har["log"] as? [String: Any])?["entries"] as? [[String: Any]]) ?? []).first ?? [:]
    }

    @Test func textAndBinaryBodiesComeBackWhole() throws {
        // 3 MiB of UTF-8 text with multi-byte characters and escapes on every slice boundary,
        // and 5 MiB of binary (base64).
        let unit = Array("é\"\\\n€ plain text 😀 ".utf8)
        var text: [UInt8] = []
        while text.count < 3 << 20 { text += unit }
        var rng = SplitMix(state: 9)
        let binary = (0..<(5 << 20)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        let har = try Self.har(request: text, requestType: "text/plain; charset=utf-8", response: binary, type: "application/octet-stream")
        let e = Self.entry(har)
        let post = try #require((e["request"] as? [String: Any])?["postData"] as? [String: Any])
        #expect((post["text"] as? String).map { Array($0.utf8) } == text)
        let content = try #require((e["response"] as? [String: Any])?["content"] as? [String: Any])
        #expect(content["encoding"] as? String == "base64")
        #expect((content["text"] as? String).flatMap { Data(base64Encoded: $0) } == Data(binary))
    }

    /// A request body that is not UTF-8 is read as ISO-8859-1, slice by slice, as before.
    @Test func latin1RequestBodyIsTranscoded() throws {
        let body: [UInt8] = (0..<(3 << 20)).map { $0 % 3 == 0 ? 0xE9 : 0x41 }   // é (ISO-8859-1), A, A, …
        let har = try Self.har(request: body, requestType: "text/plain", response: Array("ok".utf8), type: "text/plain")
        let post = try #require((Self.entry(har)["request"] as? [String: Any])?["postData"] as? [String: Any])
        let expected = String(body.map { Character(Unicode.Scalar($0)) })
        #expect(post["text"] as? String == expected)
        #expect(expected.utf8.count == body.count + body.count / 3, "each é is two bytes of UTF-8")
    }
}
