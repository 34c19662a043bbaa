import Testing
@testable import IcySniffCore

/// The frame reader finds the same frames whatever the segmenting: every frame type (and an
/// unknown one), padding, priority fields, CONTINUATION, zero-length DATA, fed whole, cut at
/// every single position, and cut into pieces of every size.
@Suite struct HTTP2FrameReaderTests {
    final class Recorder: HTTP2FrameHandler {
        var events: [String] = []
        private var data: [UInt8] = []
        private var dataStream: UInt32 = 0

        private func flushData() {
            if !data.isEmpty { events.append("data \(dataStream) \(String(decoding: data, as: UTF8.self))"); data = [] }
        }
        func frame(_ h: HTTP2FrameHeader, payload: UnsafeRawBufferPointer, first: Timestamp, last: Timestamp, from direction: Direction) {
            flushData()
            events.append("frame type=\(h.type) flags=\(h.flags) stream=\(h.stream) payload=\(Array(payload))")
        }
        func dataBegan(_ h: HTTP2FrameHeader, at ts: Timestamp, from direction: Direction) {
            flushData()
            events.append("data-begin \(h.stream)")
        }
        func data(_ bytes: UnsafeRawBufferPointer, of h: HTTP2FrameHeader, at ts: Timestamp, from direction: Direction) {
            dataStream = h.stream
            data += bytes
        }
        func dataLost(_ length: UInt64, of h: HTTP2FrameHeader, at ts: Timestamp, from direction: Direction) {
            flushData()
            events.append("data-lost \(h.stream) \(length)")
        }
        func dataEnded(_ h: HTTP2FrameHeader, at ts: Timestamp, from direction: Direction) {
            flushData()
            events.append("data-end \(h.stream) end-stream=\(h.endStream)")
        }
        func frameLost(_ h: HTTP2FrameHeader, at ts: Timestamp, from direction: Direction) {
            flushData()
            events.append("frame-lost type=\(h.type) stream=\(h.stream)")
        }
        func framingLost(_ weird: Weird, at ts: Timestamp, from direction: Direction) {
            flushData()
            events.append("lost \(weird.rawValue)")
        }
        func finish() -> [String] { flushData(); return events }
    }

    static let bytes: [UInt8] = {
        var b = HTTP2FrameHeader.preface
        b += H2.settings([(1, 4096), (5, 16_384)])
        b += H2.frame(.headers, flags: H2.padded | H2.priority, stream: 1, [3] + [0, 0, 0, 0, 16] + Array("frag1".utf8) + [0, 0, 0])
        b += H2.frame(.continuation, flags: H2.endHeaders, stream: 1, Array("frag2".utf8))
        b += H2.frame(.data, flags: H2.padded, stream: 1, [4] + Array("hello ".utf8) + [0, 0, 0, 0])
        b += H2.frame(.data, flags: H2.endStream, stream: 1, Array("world".utf8))
        b += H2.frame(.ping, stream: 0, [1, 2, 3, 4, 5, 6, 7, 8])
        b += H2.frame(.windowUpdate, stream: 0, H2.u32(65_535))
        b += H2.frame(rawType: 0x0B, stream: 1, [9, 9, 9])
        b += H2.frame(.priority, stream: 3, [0, 0, 0, 1, 200])
        b += H2.frame(.pushPromise, flags: H2.endHeaders, stream: 1, H2.u32(2) + Array("promise".utf8))
        b += H2.frame(.rstStream, stream: 3, H2.u32(8))
        b += H2.frame(.data, flags: H2.endStream, stream: 5, [])
        b += H2.frame(.goaway, stream: 0, H2.u32(5) + H2.u32(0))
        return b
    }()

    static func read(_ pieces: [ArraySlice<UInt8>]) -> [String] {
        let recorder = Recorder()
        var reader = HTTP2FrameReader(direction: .fromClient, expectsPreface: true)
        for piece in pieces {
            Array(piece).withUnsafeBytes { reader.feed($0, at: .zero, to: recorder) }
        }
        return recorder.finish()
    }

    @Test func everyFrameTypeIsReadAsSent() {
        let events = Self.read([Self.bytes[...]])
        #expect(events.count == 18)
        #expect(events[0] == "frame type=4 flags=0 stream=0 payload=[0, 1, 0, 0, 16, 0, 0, 5, 0, 0, 64, 0]")
        #expect(events.contains("data 1 hello "), "padding removed")
        #expect(events.contains("data 1 world"))
        #expect(events.contains("data-end 5 end-stream=true"), "an empty DATA frame")
        #expect(events.contains { $0.hasPrefix("frame type=11 ") }, "an unknown type is handed on (and ignored by the session)")
        #expect(!events.contains { $0.hasPrefix("lost") })
    }

    @Test func theSegmentingNeverChangesTheFrames() {
        let whole = Self.read([Self.bytes[...]])
        for cut in 1..<Self.bytes.count {
            let events = Self.read([Self.bytes[..<cut], Self.bytes[cut...]])
            #expect(events == whole, "cut at \(cut)")
        }
        for size in 1...40 {
            let pieces = stride(from: 0, to: Self.bytes.count, by: size).map { Self.bytes[$0..<min($0 + size, Self.bytes.count)] }
            #expect(Self.read(pieces) == whole, "pieces of \(size)")
        }
    }

    @Test func gapsInsideAPayloadKeepTheFramingAndAcrossAHeaderLoseIt() {
        let recorder = Recorder()
        var reader = HTTP2FrameReader(direction: .fromServer, expectsPreface: false)
        let data = H2.frame(.data, stream: 1, Array("0123456789".utf8))
        let ping = H2.frame(.ping, stream: 0, [1, 2, 3, 4, 5, 6, 7, 8])
        Array(data[0..<12]).withUnsafeBytes { reader.feed($0, at: .zero, to: recorder) }
        reader.gap(4, at: .zero, to: recorder)
        Array(data[16...] + ping[0..<3]).withUnsafeBytes { reader.feed($0, at: .zero, to: recorder) }
        reader.gap(6, at: .zero, to: recorder)   // the rest of the PING payload... after 3 of its header bytes
        #expect(recorder.finish() == ["data-begin 1", "data 1 012", "data-lost 1 4", "data 1 789", "data-end 1 end-stream=false",
                                      "lost http2_framing_lost"])
        #expect(reader.isLost)
    }

    @Test func aClientThatDoesNotSendThePrefaceIsNotRead() {
        let events = Self.read([Array("GET / HTTP/1.1\r\n\r\n".utf8)[...]])
        #expect(events == ["lost http2_bad_preface"])
    }

    @Test func framesAreRecognisedOnAConnectionPickedUpMidStream() {
        let frames = H2.frame(.data, stream: 7, Array(repeating: 0x61, count: 100)) + H2.frame(.headers, flags: H2.endHeaders, stream: 9, [0x82])
        #expect(frames.withUnsafeBytes { HTTP2FrameHeader.looksLikeFrames($0) })
        #expect(Array("HTTP/1.1 200 OK\r\n\r\n".utf8).withUnsafeBytes { !HTTP2FrameHeader.looksLikeFrames($0) })
        #expect(Array("GET / HTTP/1.1\r\n\r\n".utf8).withUnsafeBytes { !HTTP2FrameHeader.looksLikeFrames($0) })
        #expect(H2.settings([(4, 65_535)]).withUnsafeBytes { HTTP2FrameHeader.looksLikeSettings($0) })
    }
}
