#if canImport(Glibc)
import Glibc
#endif
import CZlib
import CBrotli
import CZstd
import CDeflate

/// Streaming decoder for Content-Encoding: gzip, x-gzip, deflate (zlib-wrapped or raw), br and
/// zstd, also stacked. Uses the C libraries from Debian (zlib, libbrotlidec, libzstd) directly:
/// they are the reference implementations, stream with a fixed output buffer, and need no Swift
/// package on top. Output goes to a closure block by block.
///
/// Fast path: a body with a single gzip or deflate coding is held (compressed) until `finish`, up
/// to `wholeBodyLimit`, and, when it is a checksummed stream (gzip or zlib-wrapped), inflated in
/// one call by libdeflate, which is 2-3 times faster than zlib's streaming inflate. Raw deflate, a
/// body that grows past the limit, or any case libdeflate does not settle exactly (several gzip
/// members, trailing bytes, a truncated or corrupt stream, output larger than `wholeOutputLimit`)
/// is replayed through the streaming decoder, so results never depend on the path taken.
///
/// A decoder made with `keepsOutput: false` only counts (`decodedCount`); its fast path then
/// inflates into a per-thread buffer and remembers the decoded size of bodies it inflated, so a
/// byte-for-byte identical body (compared in full) seen again is not inflated again — see
/// `InflateMemo`.
public final class ContentDecoder {
    /// Compressed bytes held for the whole-body fast path, per message.
    public static let wholeBodyLimit = 256 << 10
    /// Largest output the fast path produces in one buffer; beyond it, streaming.
    public static let wholeOutputLimit = 16 << 20

    enum Coding: Equatable {
        case gzip, deflate, brotli, zstd
        init?(token: String) {
            switch token.lowercased() {
            case "gzip", "x-gzip": self = .gzip
            case "deflate": self = .deflate
            case "br": self = .brotli
            case "zstd": self = .zstd
            default: return nil
            }
        }
    }

    private var stages: [Stage]
    public private(set) var failed = false
    public private(set) var capped = false
    private(set) var produced: UInt64 = 0
    /// Encoded bytes decoded so far (streaming).
    private var consumed: UInt64 = 0
    let maxOutput: UInt64
    /// Past `ratioFloor` decoded bytes, decoding stops when the output passes `maxRatio` times
    /// the input: real content compresses 3-30 times (100 for the most repetitive JSON); 1 GB
    /// of zeros in 1 MB of gzip cost 2.5 s of CPU to count, one second for every 400 KB a
    /// hostile server sends. Such a body's decoded size is then a lower bound, flagged.
    static let ratioFloor: UInt64 = 16 << 20
    static let maxRatio: UInt64 = 256
    /// False: the caller only needs the decoded size; `output` closures are not called.
    let keepsOutput: Bool
    private var scratch: [UnsafeMutableRawBufferPointer] = []

    /// `encodings` as listed in Content-Encoding (applied in that order, so decoded in reverse).
    /// Returns nil when no decoding is needed; throws the first unsupported coding.
    /// `wholeBody: false` always streams (output as input arrives, nothing held).
    /// `keepsOutput: false` only counts decoded bytes (`decodedCount`) and never calls `output`.
    public init?(encodings: [String], maxOutput: UInt64, wholeBody: Bool = true,
                 keepsOutput: Bool = true) throws(UnsupportedCoding) {
        let meaningful = encodings.filter { !$0.isEmpty && $0.lowercased() != "identity" }
        if meaningful.isEmpty { return nil }
        var stages: [Stage] = []
        for token in meaningful.reversed() {
            guard let coding = Coding(token: token) else { throw UnsupportedCoding(name: token) }
            stages.append(Stage(coding: coding))
        }
        self.stages = stages
        self.maxOutput = maxOutput
        self.keepsOutput = keepsOutput
        if wholeBody, stages.count == 1, stages[0].coding == .gzip || stages[0].coding == .deflate { held = [] }
    }

    /// Decoded bytes so far (up to `maxOutput`).
    public var decodedCount: UInt64 { produced }
    /// The body was decoded by the whole-body fast path (for tests and counters).
    public private(set) var decodedWhole = false
    /// The fast path took the size from the memo of identical bodies (for tests).
    public private(set) var decodedFromMemo = false
    /// Compressed input held for the fast path (nil: streaming).
    private var held: [UInt8]? = nil
    /// Compressed bytes held for the fast path, still to be inflated by `finish` (0: none).
    var heldCount: Int { held?.count ?? 0 }

    public struct UnsupportedCoding: Error { public let name: String }

    deinit {
        for s in stages { s.release() }
        for b in scratch { b.deallocate() }
    }

    /// Feeds encoded bytes; decoded output is handed to `output`. Returns false once decoding fails.
    /// Output may come later, from `finish`, when the body is held for the fast path.
    @discardableResult
    public func feed(_ input: UnsafeRawBufferPointer, output: (UnsafeRawBufferPointer) -> Void) -> Bool {
        guard !failed, !capped, input.count > 0 else { return !failed }
        if held != nil {
            if held!.count + input.count <= Self.wholeBodyLimit {
                held!.append(contentsOf: input)
                return true
            }
            releaseHeld(output: output)
            if failed || capped { return !failed }
        }
        stream(input, output: output)
        return !failed
    }

    /// The body ended (complete or not): decodes what is still held. Returns false if decoding failed.
    @discardableResult
    public func finish(output: (UnsafeRawBufferPointer) -> Void) -> Bool {
        guard let h = held else { return !failed }
        held = nil
        guard !h.isEmpty, !failed else { return !failed }
        let whole = h.withUnsafeBytes { input in
            Self.inflateWhole(input, maxOutput: maxOutput, countOnly: !keepsOutput) { out in
                run(stage: stages.count, input: out, output: output)
            }
        }
        if let whole {
            stages[0].markEnded()
            decodedWhole = true
            decodedFromMemo = whole.remembered
            // Output of the fast path is at most maxOutput: nothing to cap.
            if !keepsOutput { produced = UInt64(whole.size) }
        } else {
            h.withUnsafeBytes { stream($0, output: output) }
        }
        return !failed
    }

    private func releaseHeld(output: (UnsafeRawBufferPointer) -> Void) {
        guard let h = held else { return }
        held = nil
        if !h.isEmpty { h.withUnsafeBytes { stream($0, output: output) } }
    }

    private func stream(_ input: UnsafeRawBufferPointer, output: (UnsafeRawBufferPointer) -> Void) {
        if scratch.isEmpty {
            for _ in 0..<stages.count { scratch.append(.allocate(byteCount: 32 * 1024, alignment: 8)) }
        }
        consumed += UInt64(input.count)
        run(stage: 0, input: input, output: output)
    }

    /// The fast path's per-thread state (batch runs analyse captures on several threads at once).
    private static let contextKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { p in
            if let p { Unmanaged<InflateContext>.fromOpaque(p).release() }
        }
        return key
    }()

    private static func threadContext() -> InflateContext? {
        if let p = pthread_getspecific(contextKey) { return Unmanaged<InflateContext>.fromOpaque(p).takeUnretainedValue() }
        guard let context = InflateContext() else { return nil }
        pthread_setspecific(contextKey, Unmanaged.passRetained(context).toOpaque())
        return context
    }

    /// RFC 1950 §2.2: CM = 8 (deflate) and the first two bytes, read big-endian, a multiple of 31.
    static func isZlibHeader(_ cmf: UInt8, _ flg: UInt8) -> Bool {
        cmf & 0x0f == 8 && (UInt16(cmf) << 8 | UInt16(flg)) % 31 == 0
    }

    /// One libdeflate call over a whole single-member gzip or zlib stream. Returns the decoded size
    /// when it decoded exactly all of `input` (output handed to `emit`, unless `countOnly`); nil
    /// leaves everything to the streaming decoder. Raw deflate has no checksum, and libdeflate
    /// accepts some raw streams zlib rejects as invalid (found by the differential fuzz target: a
    /// fixed-Huffman block with an invalid literal/length code), so only CRC-32 (gzip) or Adler-32
    /// (zlib) guarded streams come here. `countOnly` inflates into the thread's reused buffer and
    /// goes through the memo: `remembered` says the size came from an identical earlier body.
    static func inflateWhole(_ input: UnsafeRawBufferPointer, maxOutput: UInt64, countOnly: Bool = false,
                             emit: (UnsafeRawBufferPointer) -> Void) -> (size: Int, remembered: Bool)? {
        guard input.count >= 2, let inBase = input.baseAddress else { return nil }
        let b0 = input[0], b1 = input[1]
        let gzip = b0 == 0x1f && b1 == 0x8b
        guard gzip || isZlibHeader(b0, b1) else { return nil }
        let limit = Int(min(UInt64(wholeOutputLimit), maxOutput))
        guard let context = Self.threadContext() else { return nil }
        if countOnly, let size = context.memo.decodedSize(of: input), size <= limit {
            return (size, true)
        }
        var capacity: Int
        if gzip, input.count >= 18 {
            // ISIZE, the last four bytes: the size mod 2^32 of a single member (a hint only).
            let n = input.count
            let isize = Int(input[n - 4]) | Int(input[n - 3]) << 8 | Int(input[n - 2]) << 16 | Int(input[n - 1]) << 24
            capacity = max(isize, 1)
        } else {
            capacity = max(input.count * 4, 64 << 10)
        }
        let d = context.decompressor
        while capacity <= limit {
            let out = countOnly ? context.buffer(atLeast: capacity)
                                : UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 16)
            defer { if !countOnly { out.deallocate() } }
            var inUsed = 0, outUsed = 0
            let rc = gzip
                ? libdeflate_gzip_decompress_ex(d, inBase, input.count, out.baseAddress, capacity, &inUsed, &outUsed)
                : libdeflate_zlib_decompress_ex(d, inBase, input.count, out.baseAddress, capacity, &inUsed, &outUsed)
            if rc == LIBDEFLATE_SUCCESS {
                guard inUsed == input.count else { return nil }
                if countOnly {
                    context.memo.remember(input, decodedSize: outUsed)
                } else if outUsed > 0 {
                    emit(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(out)[0..<outUsed]))
                }
                return (outUsed, false)
            }
            guard rc == LIBDEFLATE_INSUFFICIENT_SPACE, capacity < limit else { return nil }
            capacity = min(limit, capacity * 4)
        }
        return nil
    }

    private func run(stage index: Int, input: UnsafeRawBufferPointer, output: (UnsafeRawBufferPointer) -> Void) {
        if index == stages.count {
            var block = input
            let limit = min(maxOutput, max(Self.ratioFloor, consumed &* Self.maxRatio))
            if produced + UInt64(block.count) > limit {
                block = UnsafeRawBufferPointer(rebasing: block[0..<Int(limit - min(limit, produced))])
                capped = true
            }
            produced += UInt64(block.count)
            if block.count > 0 && keepsOutput { output(block) }
            return
        }
        let stage = stages[index]
        let buffer = scratch[index]
        let ok = stage.decode(input, into: buffer) { produced in
            guard !capped, !failed else { return false }
            run(stage: index + 1, input: produced, output: output)
            return !capped && !failed
        }
        if !ok && !capped { failed = true }
    }

    /// Whether every stage reached the end of its stream.
    var finishedCleanly: Bool { !failed && stages.allSatisfy { $0.ended } }
}

/// Per-thread state of the whole-body fast path: libdeflate's decompressor (about 10 KiB, zeroed
/// on allocation, so made once), the output buffer of count-only decoding, and the memo.
final class InflateContext {
    let decompressor: OpaquePointer
    private var scratch = UnsafeMutableRawBufferPointer(start: nil, count: 0)
    var memo = InflateMemo()

    init?() {
        guard let d = libdeflate_alloc_decompressor() else { return nil }
        decompressor = d
    }

    deinit {
        libdeflate_free_decompressor(decompressor)
        scratch.deallocate()
    }

    /// A buffer of at least `count` bytes, valid until the next call (kept between bodies, so the
    /// large ones do not cost a fresh mapping each).
    func buffer(atLeast count: Int) -> UnsafeMutableRawBufferPointer {
        if scratch.count < count {
            scratch.deallocate()
            scratch = .allocate(byteCount: max(count, 64 << 10), alignment: 16)
        }
        return UnsafeMutableRawBufferPointer(rebasing: scratch[0..<count])
    }
}

/// Decoded sizes of compressed bodies already inflated by this thread, keyed by their bytes.
///
/// Apps fetch the same resource again and again (polling an API, re-downloading what should have
/// come from the cache), and a server sends the same compressed bytes each time. Inflating them is
/// deterministic, so a body whose bytes equal — compared in full, not by hash — a remembered one
/// has the same decoded size and the same outcome (only successful inflations are remembered).
/// Direct-mapped by length and the last eight bytes (gzip's CRC-32 and size of the decoded data,
/// zlib's Adler-32): a collision only costs an inflate. At most `byteBudget` bytes are held.
struct InflateMemo {
    static let slotCount = 1024
    static let byteBudget = 8 << 20

    private struct Entry {
        var input: [UInt8]
        var decodedSize: Int
    }

    private var slots: [Entry?] = []
    private var heldBytes = 0

    private static func slot(of input: UnsafeRawBufferPointer) -> Int {
        var tail: UInt64 = 0
        let n = min(8, input.count)
        withUnsafeMutableBytes(of: &tail) { t in
            t.copyMemory(from: UnsafeRawBufferPointer(rebasing: input[(input.count - n)...]))
        }
        let h = (tail ^ UInt64(truncatingIfNeeded: input.count) &* 0x9E37_79B9_7F4A_7C15) &* 0xBF58_476D_1CE4_E5B9
        return Int(truncatingIfNeeded: h >> 54) & (slotCount - 1)
    }

    mutating func decodedSize(of input: UnsafeRawBufferPointer) -> Int? {
        guard !slots.isEmpty, let entry = slots[Self.slot(of: input)], entry.input.count == input.count else { return nil }
        let same = entry.input.withUnsafeBytes { memcmp($0.baseAddress!, input.baseAddress!, input.count) == 0 }
        return same ? entry.decodedSize : nil
    }

    mutating func remember(_ input: UnsafeRawBufferPointer, decodedSize: Int) {
        if slots.isEmpty { slots = Array(repeating: nil, count: Self.slotCount) }
        let i = Self.slot(of: input)
        let replaced = slots[i]?.input.count ?? 0
        guard heldBytes - replaced + input.count <= Self.byteBudget else { return }
        heldBytes += input.count - replaced
        slots[i] = Entry(input: Array(input), decodedSize: decodedSize)
    }
}

/// One decoding stage with its C state.
private final class Stage {
    let coding: ContentDecoder.Coding
    private var zstream: UnsafeMutablePointer<z_stream>? = nil
    private var brotli: OpaquePointer? = nil
    private var zstd: OpaquePointer? = nil
    private var initialised = false
    private(set) var ended = false
    /// Bytes seen before a deflate stream could be classified (zlib-wrapped or raw).
    private var sniff: [UInt8] = []

    init(coding: ContentDecoder.Coding) { self.coding = coding }

    /// The fast path decoded the whole stream.
    func markEnded() { ended = true }

    func release() {
        if let z = zstream { inflateEnd(z); z.deallocate() }
        if let b = brotli { BrotliDecoderDestroyInstance(b) }
        if let d = zstd { ZSTD_freeDStream(d) }
    }

    private func startZlib(windowBits: Int32) -> Bool {
        let z = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        z.initialize(to: z_stream())
        guard inflateInit2_(z, windowBits, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            z.deallocate()
            return false
        }
        zstream = z
        return true
    }

    /// Decodes `input`, handing each filled output block to `emit` (which returns false to stop).
    func decode(_ input: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer,
                emit: (UnsafeRawBufferPointer) -> Bool) -> Bool {
        if !initialised {
            switch coding {
            case .gzip:
                guard startZlib(windowBits: 15 + 32) else { return false }   // gzip or zlib, detected
            case .deflate:
                // RFC 9110 says zlib format; many servers send raw deflate. Look at the first two bytes.
                sniff.append(contentsOf: input)
                guard sniff.count >= 2 else { return true }
                let zlibWrapped = ContentDecoder.isZlibHeader(sniff[0], sniff[1])
                guard startZlib(windowBits: zlibWrapped ? 15 : -15) else { return false }
                initialised = true
                let held = sniff
                sniff = []
                return held.withUnsafeBytes { decode($0, into: out, emit: emit) }
            case .brotli:
                guard let b = BrotliDecoderCreateInstance(nil, nil, nil) else { return false }
                brotli = b
            case .zstd:
                guard let d = ZSTD_createDStream() else { return false }
                ZSTD_initDStream(d)
                zstd = d
            }
            initialised = true
        }
        if ended {
            // After the end of a stream: a gzip body may hold another member (tried; garbage fails,
            // as when it comes in the same block); other codings ignore what follows, whatever
            // block it arrives in, so the result never depends on where the input was split.
            guard coding == .gzip, input.count > 0, let z = zstream else { return true }
            inflateReset(z)
            ended = false
        }
        switch coding {
        case .gzip, .deflate: return inflate(input, out, emit)
        case .brotli: return brotliDecode(input, out, emit)
        case .zstd: return zstdDecode(input, out, emit)
        }
    }

    private func inflate(_ input: UnsafeRawBufferPointer, _ out: UnsafeMutableRawBufferPointer,
                         _ emit: (UnsafeRawBufferPointer) -> Bool) -> Bool {
        guard let z = zstream, let base = input.baseAddress else { return true }
        z.pointee.next_in = UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: UInt8.self))
        z.pointee.avail_in = UInt32(input.count)
        while true {
            z.pointee.next_out = out.baseAddress!.assumingMemoryBound(to: UInt8.self)
            z.pointee.avail_out = UInt32(out.count)
            let rc = CZlib.inflate(z, Z_NO_FLUSH)
            let n = out.count - Int(z.pointee.avail_out)
            if n > 0, !emit(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(out)[0..<n])) { return true }
            switch rc {
            case Z_OK:
                if z.pointee.avail_in == 0 && z.pointee.avail_out != 0 { return true }
            case Z_STREAM_END:
                // A gzip body may hold several members one after another.
                if coding == .gzip && z.pointee.avail_in > 0 {
                    inflateReset(z)
                    continue
                }
                ended = true
                return true
            case Z_BUF_ERROR:
                return true
            default:
                return false
            }
        }
    }

    private func brotliDecode(_ input: UnsafeRawBufferPointer, _ out: UnsafeMutableRawBufferPointer,
                              _ emit: (UnsafeRawBufferPointer) -> Bool) -> Bool {
        guard let b = brotli, let base = input.baseAddress else { return true }
        var availIn = input.count
        var nextIn: UnsafePointer<UInt8>? = base.assumingMemoryBound(to: UInt8.self)
        while true {
            var availOut = out.count
            var nextOut: UnsafeMutablePointer<UInt8>? = out.baseAddress!.assumingMemoryBound(to: UInt8.self)
            let rc = BrotliDecoderDecompressStream(b, &availIn, &nextIn, &availOut, &nextOut, nil)
            let n = out.count - availOut
            if n > 0, !emit(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(out)[0..<n])) { return true }
            switch rc {
            case BROTLI_DECODER_RESULT_SUCCESS: ended = true; return true
            case BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT: return true
            case BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT: continue
            default: return false
            }
        }
    }

    private func zstdDecode(_ input: UnsafeRawBufferPointer, _ out: UnsafeMutableRawBufferPointer,
                            _ emit: (UnsafeRawBufferPointer) -> Bool) -> Bool {
        guard let d = zstd, let base = input.baseAddress else { return true }
        var inBuffer = ZSTD_inBuffer(src: base, size: input.count, pos: 0)
        while true {
            var outBuffer = ZSTD_outBuffer(dst: out.baseAddress, size: out.count, pos: 0)
            let rc = ZSTD_decompressStream(d, &outBuffer, &inBuffer)
            if ZSTD_isError(rc) != 0 { return false }
            let n = outBuffer.pos
            if n > 0, !emit(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(out)[0..<n])) { return true }
            if rc == 0 && inBuffer.pos == inBuffer.size { ended = true; return true }
            if inBuffer.pos == inBuffer.size && outBuffer.pos < outBuffer.size { return true }
        }
    }
}
