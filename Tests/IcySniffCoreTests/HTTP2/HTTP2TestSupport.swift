import CNghttp2
@testable import IcySniffCore

/// Builds HTTP/2 bytes for tests: frames, and header blocks encoded by libnghttp2's deflater
/// (a real HPACK encoder: dynamic table entries, Huffman where it pays).
enum H2 {
    static func frame(_ type: HTTP2FrameType, flags: UInt8 = 0, stream: UInt32, _ payload: [UInt8]) -> [UInt8] {
        frame(rawType: type.rawValue, flags: flags, stream: stream, payload)
    }

    static func frame(rawType: UInt8, flags: UInt8 = 0, stream: UInt32, _ payload: [UInt8]) -> [UInt8] {
        let n = payload.count
        return [UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF), rawType, flags,
                UInt8(stream >> 24 & 0x7F), UInt8(stream >> 16 & 0xFF), UInt8(stream >> 8 & 0xFF), UInt8(stream & 0xFF)] + payload
    }

    static func u32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }

    static let endStream: UInt8 = 0x1, endHeaders: UInt8 = 0x4, padded: UInt8 = 0x8, priority: UInt8 = 0x20

    static func settings(_ pairs: [(UInt16, UInt32)] = [], ack: Bool = false) -> [UInt8] {
        var payload: [UInt8] = []
        for (id, value) in pairs { payload += [UInt8(id >> 8), UInt8(id & 0xFF)] + u32(value) }
        return frame(.settings, flags: ack ? 1 : 0, stream: 0, payload)
    }
}

/// One direction's HPACK encoder.
final class HPACKEncoder {
    private var deflater: OpaquePointer?

    init(tableSize: Int = 4096) { nghttp2_hd_deflate_new(&deflater, tableSize) }
    deinit { nghttp2_hd_deflate_del(deflater) }

    func encode(_ fields: [(String, String)]) -> [UInt8] {
        let names = fields.map { Array($0.0.utf8) }
        let values = fields.map { Array($0.1.utf8) }
        let namePointers = names.map { n -> UnsafeMutablePointer<UInt8> in
            let p = UnsafeMutablePointer<UInt8>.allocate(capacity: max(1, n.count)); p.initialize(from: n, count: n.count); return p
        }
        let valuePointers = values.map { v -> UnsafeMutablePointer<UInt8> in
            let p = UnsafeMutablePointer<UInt8>.allocate(capacity: max(1, v.count)); p.initialize(from: v, count: v.count); return p
        }
        defer { namePointers.forEach { $0.deallocate() }; valuePointers.forEach { $0.deallocate() } }
        var nvs = (0..<fields.count).map { i in
            nghttp2_nv(name: namePointers[i], value: valuePointers[i], namelen: names[i].count, valuelen: values[i].count,
                       flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
        }
        let bound = nghttp2_hd_deflate_bound(deflater, &nvs, nvs.count)
        var out = [UInt8](repeating: 0, count: bound)
        let n = nghttp2_hd_deflate_hd(deflater, &out, bound, &nvs, nvs.count)
        precondition(n >= 0)
        return Array(out[0..<n])
    }
}
