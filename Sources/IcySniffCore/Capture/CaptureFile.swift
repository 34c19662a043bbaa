import CZlib
#if canImport(Glibc)
import Glibc
#endif

/// Recognises capture files by their first bytes, not their names.
public enum CaptureFile {
    public enum Kind: Sendable { case pcap, pcapng, gzipPcap, gzipPcapng }

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
        return classify(magic)
    }

    private static func classify(_ m: [UInt8]) -> Kind? {
        let be = UInt32(m[0]) << 24 | UInt32(m[1]) << 16 | UInt32(m[2]) << 8 | UInt32(m[3])
        switch be {
        case 0xa1b2c3d4, 0xd4c3b2a1, 0xa1b23c4d, 0x4d3cb2a1: return .pcap
        case 0x0a0d0d0a: return .pcapng
        default: return nil
        }
    }
}

/// TLS key logs embedded in a pcapng file: Decryption Secrets Blocks (block type 0x0A, secrets
/// type `TLSK`: NSS key log text), as `editcap --inject-secrets tls,KEYS` writes them. They are
/// used without any option. libpcap does not hand them out, so the blocks before the first
/// packet are read here (that is where editcap puts them; a block further on is not read).
public enum CaptureSecrets {
    /// The key log text of the Decryption Secrets Blocks before the first packet, or nil. Plain and
    /// gzip-compressed files alike (zlib reads both); never standard input.
    public static func tlsKeyLog(in path: String) -> String? {
        guard path != "-", let kind = CaptureFile.kind(of: path), kind == .pcapng || kind == .gzipPcapng,
              let gz = gzopen(path, "rb") else { return nil }
        defer { gzclose(gz) }
        var text = ""
        var bigEndian = false
        var header = [UInt8](repeating: 0, count: 8)
        for _ in 0..<64 {
            guard gzread(gz, &header, 8) == 8 else { break }
            func u32(_ b: [UInt8], _ at: Int) -> UInt32 {
                let v = UInt32(b[at]) | UInt32(b[at + 1]) << 8 | UInt32(b[at + 2]) << 16 | UInt32(b[at + 3]) << 24
                return bigEndian ? v.byteSwapped : v
            }
            var type = u32(header, 0)
            if type == 0x0A0D0D0A {
                // Section Header Block: its byte-order magic says how to read the rest.
                var magic = [UInt8](repeating: 0, count: 4)
                guard gzread(gz, &magic, 4) == 4 else { break }
                bigEndian = magic == [0x1A, 0x2B, 0x3C, 0x4D]
                type = 0x0A0D0D0A
                let length = Int(u32(header, 4))
                guard length >= 16, length % 4 == 0, length <= 1 << 24 else { break }
                guard skip(gz, length - 12) else { break }
                continue
            }
            let length = Int(u32(header, 4))
            guard length >= 12, length % 4 == 0, length <= 1 << 24 else { break }
            if type == 2 || type == 3 || type == 6 { break }          // the first packet: stop
            guard type == 0x0000000A else {
                guard skip(gz, length - 8) else { break }
                continue
            }
            var body = [UInt8](repeating: 0, count: length - 8)
            guard gzread(gz, &body, UInt32(body.count)) == Int32(body.count), body.count >= 8 else { break }
            let secretsType = u32(body, 0), secretsLength = Int(u32(body, 4))
            guard secretsType == 0x544C_534B, secretsLength <= body.count - 8 else { continue }
            text += String(decoding: body[8..<(8 + secretsLength)], as: UTF8.self) + "\n"
        }
        return text.isEmpty ? nil : text
    }

    private static func skip(_ gz: gzFile, _ n: Int) -> Bool {
        guard n > 0 else { return true }
        var scratch = [UInt8](repeating: 0, count: min(n, 1 << 16))
        var left = n
        while left > 0 {
            let chunk = min(left, scratch.count)
            guard gzread(gz, &scratch, UInt32(chunk)) == Int32(chunk) else { return false }
            left -= chunk
        }
        return true
    }
}
