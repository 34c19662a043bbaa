import CZlib
import CZstd
#if canImport(Glibc)
import Glibc
#endif

/// Recognises capture files by their first bytes, not their names.
public enum CaptureFile {
    public enum Kind: Sendable {
        case pcap, pcapng, gzipPcap, gzipPcapng, zstdPcap, zstdPcapng

        /// Whether the kind is pcapng, compressed or not.
        public var isPcapng: Bool { self == .pcapng || self == .gzipPcapng || self == .zstdPcapng }
    }

    /// The kind of capture at `path`, or nil when it is not one (empty, text, another format, a
    /// gzip file that does not hold a capture).
    public static func kind(of path: String) -> Kind? {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return nil }
        var magic = [UInt8](repeating: 0, count: 4)
        let n = read(fd, &magic, 4)
        close(fd)
        guard n == 4 else { return nil }
        if magic[0] == 0x1f && magic[1] == 0x8b {
            guard let gz = gzopen(path, "rb") else { return nil }
            defer { gzclose(gz) }
            var inner = [UInt8](repeating: 0, count: 4)
            guard gzread(gz, &inner, 4) == 4 else { return nil }
            switch classify(inner) {
            case .pcap: return .gzipPcap
            case .pcapng: return .gzipPcapng
            default: return nil
            }
        }
        if magic == [0x28, 0xB5, 0x2F, 0xFD] {
            switch classify(zstdPrefix(path)) {
            case .pcap: return .zstdPcap
            case .pcapng: return .zstdPcapng
            default: return nil
            }
        }
        return classify(magic)
    }

    /// The first four decompressed bytes of a zstd file (fewer when it does not decompress).
    private static func zstdPrefix(_ path: String) -> [UInt8] {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        var input = [UInt8](repeating: 0, count: 1 << 16)
        let n = read(fd, &input, input.count)
        guard n > 0, let stream = ZSTD_createDStream() else { return [] }
        defer { ZSTD_freeDStream(stream) }
        ZSTD_initDStream(stream)
        var output = [UInt8](repeating: 0, count: 4)
        var produced = 0
        input.withUnsafeBytes { src in
            output.withUnsafeMutableBytes { dst in
                var inBuffer = ZSTD_inBuffer(src: src.baseAddress, size: n, pos: 0)
                var outBuffer = ZSTD_outBuffer(dst: dst.baseAddress, size: 4, pos: 0)
                while outBuffer.pos < 4 && inBuffer.pos < inBuffer.size {
                    if ZSTD_isError(ZSTD_decompressStream(stream, &outBuffer, &inBuffer)) != 0 { break }
                }
                produced = outBuffer.pos
            }
        }
        return Array(output.prefix(produced))
    }

    private static func classify(_ m: [UInt8]) -> Kind? {
        guard m.count == 4 else { return nil }
        let be = UInt32(m[0]) << 24 | UInt32(m[1]) << 16 | UInt32(m[2]) << 8 | UInt32(m[3])
        switch be {
        case 0xa1b2c3d4, 0xd4c3b2a1, 0xa1b23c4d, 0x4d3cb2a1: return .pcap
        case 0x0a0d0d0a: return .pcapng
        default: return nil
        }
    }
}
