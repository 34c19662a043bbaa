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
/// - At most as many streams are blocked at once as the decoding side's SETTINGS allow
///   (SETTINGS_QPACK_BLOCKED_STREAMS, RFC 9204 §2.1.2; a decoder that meets more treats it as a
///   connection error): a section that would block one more is reported undecodable, named
///   `qpack_blocked_streams_exceeded`. Blocked sections wait by their Required Insert Count and
///   are tried again only when the encoder stream has made that many inserts: each section is
///   decoded once, whatever the number of sections and of inserts (every waiting section tried on
///   every insert took 125 s for 8,000 sections).
final class QPACKDecoder {
    private var decoder: OpaquePointer? = nil
    private var heldEncoderBytes: [UInt8] = []
    private(set) var configured = false
    /// The encoder stream lost bytes, or libnghttp3 refused it: the dynamic table is unknown.
    private(set) var tableLost = false
    /// Field sections were blocked on the encoder stream at some point (the stream ids, in the
    /// order they first were; the set answers whether one was, without a walk of the list).
    private(set) var blockedStreams: [UInt64] = []
    private var everBlocked = Set<UInt64>()

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
    /// Sections waiting for SETTINGS, in arrival order.
    private var waiting: [Pending] = []
    /// Sections blocked on encoder-stream bytes, by arrival number, and the same arrival numbers
    /// in a min-heap on the Required Insert Count each waits for.
    private var blocked: [Int: Pending] = [:]
    private var byInsertCount = MinHeap<Waiter>()
    private struct Waiter: HeapOrdered {
        var ricnt: UInt64
        var arrival: Int
        static func before(_ a: Waiter, _ b: Waiter) -> Bool { a.ricnt != b.ricnt ? a.ricnt < b.ricnt : a.arrival < b.arrival }
    }
    /// Blocked sections per stream (the limit counts streams), and the limit.
    private var blockedPerStream: [UInt64: Int] = [:]
    private var maxBlockedStreams = 0
    private var arrivals = 0
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
        for p in blocked.values { if let c = p.context { nghttp3_qpack_stream_context_del(c) } }
        if let decoder { nghttp3_qpack_decoder_del(decoder) }
    }

    /// The decoding side's SETTINGS arrived: its table capacity and blocked-streams limit.
    func configure(capacity: Int, blockedStreams: Int) {
        guard !configured else { return }
        configured = true
        maxBlockedStreams = blockedStreams
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
        unblock()
    }

    private func feedEncoder(_ bytes: UnsafeRawBufferPointer) {
        guard let decoder, !bytes.isEmpty else { return }
        let n = nghttp3_qpack_decoder_read_encoder(decoder, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), bytes.count)
        if n < 0 || n != bytes.count { tableLost = true }
    }

    /// Encoder-stream bytes were not captured: the table is unknown from here.
    func encoderLost() {
        tableLost = true
        unblock()
    }

    /// One field section (a HEADERS or PUSH_PROMISE frame's) of `stream`: `completion` gets its
    /// fields (and a cap that dropped some) when decoded, now or later, or nil when it cannot be.
    func decode(_ section: [UInt8], stream: UInt64, completion: @escaping Completion) {
        waiting.append(Pending(stream: stream, bytes: section, context: nil, completion: completion))
        if configured { resume() }
    }

    /// Sections waiting now (for SETTINGS or for inserts).
    var waitingSections: Int { waiting.count + blocked.count }

    /// The end of the connection: what still waits is decoded as far as it can be, and the rest
    /// reported undecodable. A side that never sent SETTINGS allowed no dynamic table.
    func finish() {
        if !configured { configure(capacity: 0, blockedStreams: 0) }
        let left = waiting + blocked.keys.sorted().map { blocked[$0]! }
        waiting = []
        blocked = [:]
        byInsertCount.removeAll()
        blockedPerStream = [:]
        for p in left {
            if let c = p.context { nghttp3_qpack_stream_context_del(c) }
            p.completion(nil, nil)
        }
    }

    /// Decodes the sections held for SETTINGS, in order; those that block wait in `blocked`.
    private func resume() {
        guard configured else { return }
        let held = waiting
        waiting = []
        for var p in held {
            arrivals += 1
            if step(&p) { block(p, arrival: arrivals) }
        }
    }

    /// Keeps a section that is blocked, within the peer's limit on blocked streams.
    private func block(_ p: Pending, arrival: Int) {
        guard let c = p.context else { return }
        if blockedPerStream[p.stream] == nil && blockedPerStream.count >= maxBlockedStreams {
            nghttp3_qpack_stream_context_del(c)
            p.completion(nil, .qpackBlockedStreamsExceeded)
            return
        }
        blockedPerStream[p.stream, default: 0] += 1
        if everBlocked.insert(p.stream).inserted { blockedStreams.append(p.stream) }
        blocked[arrival] = p
        byInsertCount.push(Waiter(ricnt: nghttp3_qpack_stream_context_get_ricnt(c), arrival: arrival))
    }

    /// Decodes the blocked sections the encoder stream's inserts now allow (all of them, as
    /// undecodable, once the table is lost), in arrival order.
    private func unblock() {
        guard configured, !blocked.isEmpty else { return }
        var ready: [Int] = []
        if tableLost || decoder == nil {
            ready = Array(blocked.keys)
            byInsertCount.removeAll()
        } else {
            let inserted = nghttp3_qpack_decoder_get_icnt(decoder)
            while let top = byInsertCount.minimum, top.ricnt <= inserted {
                _ = byInsertCount.popMinimum()
                ready.append(top.arrival)
            }
        }
        for arrival in ready.sorted() {
            guard var p = blocked.removeValue(forKey: arrival) else { continue }
            if let n = blockedPerStream[p.stream], n > 1 { blockedPerStream[p.stream] = n - 1 } else { blockedPerStream[p.stream] = nil }
            if step(&p) { block(p, arrival: arrival) }
        }
    }

    /// The Required Insert Count is encoded as 0 (RFC 9204 §4.5.1.1): the section does not use the
    /// dynamic table.
    private static func usesNoTable(_ bytes: [UInt8]) -> Bool { bytes.first == 0 }

    /// Drops what libnghttp3 has queued for the decoder stream (Section Acknowledgments, Insert
    /// Count Increments): an endpoint sends them, an observer has no one to send them to, and
    /// left queued they grow until libnghttp3 fails every later section (NGHTTP3_ERR_QPACK_FATAL
    /// after ~700 sections that used the dynamic table).
    private func discardDecoderStream() {
        guard let decoder else { return }
        let n = nghttp3_qpack_decoder_get_decoder_streamlen(decoder)
        guard n > 0 else { return }
        if scratch.count < n { scratch = [UInt8](repeating: 0, count: max(n, 256)) }
        scratch.withUnsafeMutableBufferPointer { b in
            var buf = nghttp3_buf(begin: b.baseAddress, end: b.baseAddress! + b.count, pos: b.baseAddress, last: b.baseAddress)
            nghttp3_qpack_decoder_write_decoder(decoder, &buf)
        }
    }
    private var scratch: [UInt8] = []

    /// Times a section was given to libnghttp3 (at most twice each: when it came, and once the
    /// inserts it waits for have come).
    private(set) var attempts = 0

    /// Decodes as far as it can; true when the section is blocked (keep it).
    private func step(_ p: inout Pending) -> Bool {
        attempts += 1
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
            return true
        }
        nghttp3_qpack_stream_context_del(p.context)
        p.context = nil
        discardDecoderStream()
        if done && !failed { p.completion(p.fields, p.dropped) } else { p.completion(nil, nil) }
        return false
    }
}
