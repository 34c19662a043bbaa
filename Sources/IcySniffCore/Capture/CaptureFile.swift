import CIcyShims
#if canImport(Glibc)
import Glibc
#endif

/// Recognises capture files by their first bytes, not their names: pcap or pcapng, plain or
/// compressed (gzip, zstd, LZ4, xz, bzip2 — the compressions tshark reads).
public enum CaptureFile {
    public struct Kind: Sendable, Equatable {
        /// pcapng (else pcap), compressed or not.
        public var isPcapng: Bool
    }

    /// Bytes read to recognise a compression (xz's magic is the longest).
    static let magicLength = 6

    /// The compression whose magic bytes `bytes` start with (`ICY_PLAIN` when none).
    static func compression(of bytes: [UInt8]) -> Int32 {
        icy_compression_of(bytes, bytes.count)
    }

    /// The kind of capture at `path`, or nil when it is not one (empty, text, another format, a
    /// compressed file that does not hold a capture).
    public static func kind(of path: String) -> Kind? {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return nil }
        var magic = [UInt8](repeating: 0, count: magicLength)
        let n = read(fd, &magic, magicLength)
        guard n >= 4 else { close(fd); return nil }
        let compression = compression(of: Array(magic.prefix(n)))
        if compression == Int32(ICY_PLAIN) {
            close(fd)
            return classify(Array(magic.prefix(4))).map { Kind(isPcapng: $0) }
        }
        // The first four decompressed bytes (the descriptor owns `fd` from here).
        guard let file = magic.withUnsafeBufferPointer({ icy_decompress_fdopen(fd, compression, $0.baseAddress, n, nil) }) else {
            close(fd)
            return nil
        }
        defer { fclose(file) }
        var inner = [UInt8](repeating: 0, count: 4)
        guard fread(&inner, 1, 4, file) == 4 else { return nil }
        return classify(inner).map { Kind(isPcapng: $0) }
    }

    /// A classic pcap file's byte order and timestamp unit, from its magic number read as a
    /// little-endian word; nil for any other (pcapng, the patched "Kuznetzov" header).
    static func pcapForm(magic: UInt32) -> (swapped: Bool, nanosecond: Bool)? {
        switch magic {
        case 0xa1b2c3d4: return (false, false)
        case 0xa1b23c4d: return (false, true)
        case 0xd4c3b2a1: return (true, false)
        case 0x4d3cb2a1: return (true, true)
        default: return nil
        }
    }

    /// pcap (false) or pcapng (true) by the first four bytes; nil: neither.
    static func classify(_ m: [UInt8]) -> Bool? {
        guard m.count == 4 else { return nil }
        let be = UInt32(m[0]) << 24 | UInt32(m[1]) << 16 | UInt32(m[2]) << 8 | UInt32(m[3])
        switch be {
        case 0xa1b2c3d4, 0xd4c3b2a1, 0xa1b23c4d, 0x4d3cb2a1: return false
        case 0x0a0d0d0a: return true
        default: return nil
        }
    }
}
