import Testing
@testable import IcySniffCore

/// QPACK through libnghttp3 with the passive rules (`QPACKDecoder`): RFC 9204 Appendix B's
/// examples, a section held until SETTINGS, a blocked section resumed by the encoder stream, and
/// a lost encoder stream that still lets static-only sections decode.
@Suite struct QPACKDecoderTests {
    static func hex(_ s: String) -> [UInt8] { KeyLog.hex(Array(s.filter { $0 != " " }.utf8)[...])! }

    static func text(_ fields: HeaderFields?) -> [String] {
        guard let fields else { return [] }
        return fields.indices.map { i in fields.withNameAndValueBytes(at: i) { String(decoding: $0, as: UTF8.self) + "=" + String(decoding: $1, as: UTF8.self) } }
    }

    /// B.1: a literal with a static name reference, no dynamic table.
    @Test func staticOnly() {
        let d = QPACKDecoder(maxHeaderBytes: 1 << 16, maxFields: 100)
        var got: [String]? = nil
        d.decode(Self.hex("0000 510b 2f69 6e64 6578 2e68 746d 6c"), stream: 0) { f, _ in got = Self.text(f) }
        // Held until the decoding side's SETTINGS say the table's capacity.
        #expect(got == nil)
        d.configure(capacity: 0, blockedStreams: 0)
        #expect(got == [":path=/index.html"])
    }

    /// B.2: the encoder stream inserts two entries; a section references them. Sent first, the
    /// section is blocked until the encoder stream's bytes arrive.
    @Test func dynamicTableBlockedThenResumed() {
        let d = QPACKDecoder(maxHeaderBytes: 1 << 16, maxFields: 100)
        d.configure(capacity: 220, blockedStreams: 16)
        var got: [String]? = nil
        d.decode(Self.hex("0381 10 11"), stream: 4) { f, _ in got = Self.text(f) }
        #expect(got == nil)
        Self.hex("3fbd01 c00f 7777 772e 6578 616d 706c 652e 636f 6d c10c 2f73 616d 706c 652f 7061 7468").withUnsafeBytes { d.encoderData($0) }
        #expect(got == [":authority=www.example.com", ":path=/sample/path"])
        #expect(d.blockedStreams == [4])
    }

    /// The receiver's SETTINGS_QPACK_BLOCKED_STREAMS (RFC 9204 §2.1.2): a section that would
    /// block one stream more is undecodable and named; another section of a stream already
    /// blocked is not a new stream; the others resume with the inserts.
    @Test func blockedStreamsBeyondTheSettingAreNamed() {
        let d = QPACKDecoder(maxHeaderBytes: 1 << 16, maxFields: 100)
        d.configure(capacity: 220, blockedStreams: 2)
        var got: [UInt64: ([String]?, Weird?)] = [:]
        for stream: UInt64 in [4, 8, 12] {
            d.decode(Self.hex("0381 10 11"), stream: stream) { f, w in got[stream] = (f.map { Self.text($0) }, w) }
        }
        #expect(got[4] == nil && got[8] == nil)
        #expect(got[12]?.0 == nil && got[12]?.1 == .qpackBlockedStreamsExceeded)
        var trailers: [String]? = nil
        d.decode(Self.hex("0381 10 11"), stream: 4) { f, _ in trailers = Self.text(f) }
        #expect(d.waitingSections == 3)
        Self.hex("3fbd01 c00f 7777 772e 6578 616d 706c 652e 636f 6d c10c 2f73 616d 706c 652f 7061 7468").withUnsafeBytes { d.encoderData($0) }
        #expect(got[4]?.0 == [":authority=www.example.com", ":path=/sample/path"] && got[8]?.0 == got[4]?.0)
        #expect(trailers == got[4]?.0 && d.waitingSections == 0)
    }

    /// Blocked sections are tried again only once the inserts they need have come: 2,000
    /// sections and inserts one at a time cost two attempts a section (trying every waiting
    /// section on every section and every insert cost 2,000 x 2,000: 125 s for 8,000).
    @Test func blockedSectionsAreTriedOnceTheirInsertsCome() {
        let d = QPACKDecoder(maxHeaderBytes: 1 << 16, maxFields: 100)
        d.configure(capacity: 220, blockedStreams: 4000)
        var decoded = 0
        for i in 0..<2000 { d.decode(Self.hex("0381 10 11"), stream: UInt64(4 * i)) { f, _ in if f != nil { decoded += 1 } } }
        #expect(d.attempts == 2000 && decoded == 0)
        Self.hex("3fbd01 c00f 7777 772e 6578 616d 706c 652e 636f 6d").withUnsafeBytes { d.encoderData($0) }
        #expect(d.attempts == 2000 && decoded == 0, "one insert of the two they need: none tried")
        Self.hex("c10c 2f73 616d 706c 652f 7061 7468").withUnsafeBytes { d.encoderData($0) }
        #expect(d.attempts == 4000 && decoded == 2000, "\(d.attempts) attempts, \(decoded) decoded")
    }

    /// The encoder stream lost: a section that needs the table is undecodable (nil), never
    /// guessed; one that does not still decodes.
    @Test func lostEncoderStream() {
        let d = QPACKDecoder(maxHeaderBytes: 1 << 16, maxFields: 100)
        d.configure(capacity: 220, blockedStreams: 16)
        d.encoderLost()
        var dynamic: [String]? = nil, plain: [String]? = nil
        d.decode(Self.hex("0381 10 11"), stream: 4) { f, _ in dynamic = f == nil ? ["undecodable"] : Self.text(f) }
        d.decode(Self.hex("0000 510b 2f69 6e64 6578 2e68 746d 6c"), stream: 8) { f, _ in plain = Self.text(f) }
        #expect(dynamic == ["undecodable"])
        #expect(plain == [":path=/index.html"])
    }
}
