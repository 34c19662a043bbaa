import CNghttp3

/// QPACK (RFC 9204) decoding of the field sections one endpoint sends, with libnghttp3's decoder
/// (Debian's libnghttp3-dev), the sibling of the HPACK inflater HTTP/2 uses.
///
/// Passive use has rules an endpoint never meets, and this type keeps them:
/// - The table's capacity limit comes from the decoding side's SETTINGS
///   (SETTINGS_QPACK_MAX_TABLE_CAPACITY); it fixes how the Required Insert Count is encoded, so
///   field sections and encoder-stream bytes are held until that SETTINGS frame is seen
///   (`configure`), or decoded at the end with the capacity a peer that sent none has: 0.
/// - A field section that needs entries the encoder stream has not delivered yet is blocked:
///   kept, and resumed when those bytes arrive (`encoderData`).
/// - When encoder-stream bytes are lost (`encoderLost`), the table is unknown from then on:
///   sections that reference it are reported undecodable (never guessed); sections that use the
///   static table and literals only (Required Insert Count 0) still decode.
final class QPACKDecoder {
    private var decoder: OpaquePointer? = nil
    private var heldEncoderBytes: [UInt8] = []
    private(set) var configured = false
    /// The encoder stream lost bytes, or libnghttp3 refused it: the dynamic table is unknown.
    private(set) var tableLost = false
    /// Field sections were blocked on the encoder stream at some point (the stream ids).
    private(set) var blockedStreams: [UInt64] = []

    typealias Completion = (HeaderFields?, Weird?) -> Void
    private struct Pending {
        var stream: UInt64
        var bytes: [UInt8]
        var context: OpaquePointer?
        var fields = HeaderFields()
        var decodedBytes = 0
        var dropped: Weird? = nil
        var completion: Completion
    }
    /// Sections waiting for SETTINGS or for encoder-stream bytes, in arrival order.
    private var waiting: [Pending] = []
    private let maxHeaderBytes: Int
    private let maxFields: Int
    /// Encoder-stream bytes held before SETTINGS, at most.
    static let maxHeldEncoderBytes = 1 << 20

    init(maxHeaderBytes: Int, maxFields: Int) {
        self.maxHeaderBytes = maxHeaderBytes
        self.maxFields = maxFields
    }

    deinit {
        for p in waiting { if let c = p.context { nghttp3_qpack_stream_context_del(c) } }
        if let decoder { nghttp3_qpack_decoder_del(decoder) }
    }

    /// The decoding side's SETTINGS arrived: its table capacity and blocked-streams limit.
    func configure(capacity: Int, blockedStreams: Int) {
        guard !configured else { return }
        configured = true
        var d: OpaquePointer? = nil
        if nghttp3_qpack_decoder_new(&d, capacity, max(blockedStreams, 1) + 64, nghttp3_mem_default()) != 0 {
            tableLost = true
        } else {
            decoder = d
        }
        let held = heldEncoderBytes
        heldEncoderBytes = []
        if !held.isEmpty { held.withUnsafeBytes { feedEncoder($0) } }
        resume()
    }

    /// Bytes of the sending side's encoder stream, in order.
    func encoderData(_ bytes: UnsafeRawBufferPointer) {
        guard !tableLost else { return }
        guard configured else {
            if heldEncoderBytes.count + bytes.count > Self.maxHeldEncoderBytes { tableLost = true; heldEncoderBytes = []; return }
            heldEncoderBytes.append(contentsOf: bytes)
            return
        }
        feedEncoder(bytes)
        resume()
    }

    private func feedEncoder(_ bytes: UnsafeRawBufferPointer) {
        guard let decoder, !bytes.isEmpty else { return }
        let n = nghttp3_qpack_decoder_read_encoder(decoder, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), bytes.count)
        if n < 0 || n != bytes.count { tableLost = true }
    }

    /// Encoder-stream bytes were not captured: the table is unknown from here.
    func encoderLost() {
        tableLost = true
        resume()
    }

    /// One field section (a HEADERS or PUSH_PROMISE frame's) of `stream`: `completion` gets its
    /// fields (and a cap that dropped some) when decoded, now or later, or nil when it cannot be.
    func decode(_ section: [UInt8], stream: UInt64, completion: @escaping Completion) {
        waiting.append(Pending(stream: stream, bytes: section, context: nil, completion: completion))
        if configured { resume() }
    }

    /// The end of the connection: what still waits is decoded as far as it can be, and the rest
    /// reported undecodable. A side that never sent SETTINGS allowed no dynamic table.
    func finish() {
        if !configured { configure(capacity: 0, blockedStreams: 0) }
        let left = waiting
        waiting = []
        for p in left {
            if let c = p.context { nghttp3_qpack_stream_context_del(c) }
            p.completion(nil, nil)
        }
    }

    /// Tries every waiting section in order; the blocked ones stay.
    private func resume() {
        guard configured else { return }
        var still: [Pending] = []
        for var p in waiting {
            if step(&p) { still.append(p) }
        }
        waiting = still
    }

    /// The Required Insert Count is encoded as 0 (RFC 9204 §4.5.1.1): the section does not use the
    /// dynamic table.
    private static func usesNoTable(_ bytes: [UInt8]) -> Bool { bytes.first == 0 }

    /// Decodes as far as it can; true when the section is blocked (keep it).
    private func step(_ p: inout Pending) -> Bool {
        guard let decoder, !(tableLost && !Self.usesNoTable(p.bytes) && p.context == nil) else {
            if let c = p.context { nghttp3_qpack_stream_context_del(c) }
            p.completion(nil, nil)
            return false
        }
        if p.context == nil {
            var c: OpaquePointer? = nil
            guard nghttp3_qpack_stream_context_new(&c, Int64(p.stream), nghttp3_mem_default()) == 0 else {
                p.completion(nil, nil)
                return false
            }
            p.context = c
        }
        var failed = false
        var done = false
        var blocked = false
        var offset = 0
        p.bytes.withUnsafeBufferPointer { buf in
            while true {
                var nv = nghttp3_qpack_nv()
                var flags: UInt8 = 0
                let n = nghttp3_qpack_decoder_read_request(decoder, p.context, &nv, &flags,
                                                            buf.baseAddress.map { $0 + offset }, buf.count - offset, 1)
                if n < 0 { failed = true; return }
                offset += n
                if flags & UInt8(NGHTTP3_QPACK_DECODE_FLAG_EMIT) != 0 {
                    let name = nghttp3_rcbuf_get_buf(nv.name), value = nghttp3_rcbuf_get_buf(nv.value)
                    p.decodedBytes += name.len + value.len + 32
                    if p.decodedBytes > maxHeaderBytes { p.dropped = .headerTooLarge }
                    else if p.fields.count >= maxFields { p.dropped = .tooManyHeaders }
                    else {
                        p.fields.append(name: UnsafeBufferPointer(start: name.base, count: name.len),
                                        value: UnsafeBufferPointer(start: value.base, count: value.len))
                    }
                    nghttp3_rcbuf_decref(nv.name)
                    nghttp3_rcbuf_decref(nv.value)
                }
                if flags & UInt8(NGHTTP3_QPACK_DECODE_FLAG_FINAL) != 0 { done = true; return }
                if flags & UInt8(NGHTTP3_QPACK_DECODE_FLAG_BLOCKED) != 0 { blocked = true; return }
                if flags & UInt8(NGHTTP3_QPACK_DECODE_FLAG_EMIT) == 0 && offset >= buf.count { failed = true; return }
            }
        }
        if blocked && !tableLost {
            // Keep what is left of the section; the context remembers where it stopped.
            p.bytes.removeFirst(offset)
            if !blockedStreams.contains(p.stream) { blockedStreams.append(p.stream) }
            return true
        }
        nghttp3_qpack_stream_context_del(p.context)
        p.context = nil
        if done && !failed { p.completion(p.fields, p.dropped) } else { p.completion(nil, nil) }
        return false
    }
}
