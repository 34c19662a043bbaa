import CZlib
import CBrotli
import CZstd

/// Streaming decoder for Content-Encoding: gzip, x-gzip, deflate (zlib-wrapped or raw), br and
/// zstd, also stacked. Uses the C libraries from Debian (zlib, libbrotlidec, libzstd) directly:
/// they are the reference implementations, stream with a fixed output buffer, and need no Swift
/// package on top. Output goes to a closure block by block; nothing is held whole in memory.
public final class ContentDecoder {
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
    let maxOutput: UInt64
    private var scratch: [UnsafeMutableRawBufferPointer] = []

    /// `encodings` as listed in Content-Encoding (applied in that order, so decoded in reverse).
    /// Returns nil when no decoding is needed; throws the first unsupported coding.
    public init?(encodings: [String], maxOutput: UInt64) throws(UnsupportedCoding) {
        let meaningful = encodings.filter { !$0.isEmpty && $0.lowercased() != "identity" }
        if meaningful.isEmpty { return nil }
        var stages: [Stage] = []
        for token in meaningful.reversed() {
            guard let coding = Coding(token: token) else { throw UnsupportedCoding(name: token) }
            stages.append(Stage(coding: coding))
        }
        self.stages = stages
        self.maxOutput = maxOutput
        for _ in 0..<stages.count { scratch.append(.allocate(byteCount: 32 * 1024, alignment: 8)) }
    }

    public struct UnsupportedCoding: Error { public let name: String }

    deinit {
        for s in stages { s.release() }
        for b in scratch { b.deallocate() }
    }

    /// Feeds encoded bytes; decoded output is handed to `output`. Returns false once decoding fails.
    @discardableResult
    public func feed(_ input: UnsafeRawBufferPointer, output: (UnsafeRawBufferPointer) -> Void) -> Bool {
        guard !failed, !capped, input.count > 0 else { return !failed }
        run(stage: 0, input: input, output: output)
        return !failed
    }

    private func run(stage index: Int, input: UnsafeRawBufferPointer, output: (UnsafeRawBufferPointer) -> Void) {
        if index == stages.count {
            var block = input
            if produced + UInt64(block.count) > maxOutput {
                block = UnsafeRawBufferPointer(rebasing: block[0..<Int(maxOutput - produced)])
                capped = true
            }
            produced += UInt64(block.count)
            if block.count > 0 { output(block) }
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
                let cmf = UInt16(sniff[0]), flg = UInt16(sniff[1])
                let zlibWrapped = cmf & 0x0f == 8 && (cmf << 8 | flg) % 31 == 0
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
        if ended { return input.count == 0 }   // trailing garbage after the end of the stream
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
