extension EntryEncoder {
    /// Bodies are written in slices of this many bytes (whole base64 groups), the writer drained
    /// into its record's destination between them: a 16 MiB body is never one 21–96 MiB buffer.
    static let bodySlice = 3 << 18
    /// Form bodies up to this size get their `params` listed.
    static let maxFormBytes = 256 << 10

    static func isUTF8(_ body: [UInt8]) -> Bool { (try? UTF8Span(validating: body.span)) != nil }

    /// `body` as a JSON string value, written in slices: UTF-8 (`utf8`, as the caller checked)
    /// escaped as needed, other bytes read as ISO-8859-1 (as `String(wireBytes:)` reads text
    /// from the wire).
    static func writeBodyText(_ body: [UInt8], utf8: Bool, to w: JSONWriter) {
        w.composedString { w in
            body.withUnsafeBufferPointer { b in
                var latin1: [UInt8] = []
                for start in stride(from: 0, to: b.count, by: bodySlice) {
                    let slice = UnsafeBufferPointer(rebasing: b[start..<min(b.count, start + bodySlice)])
                    if utf8 {
                        w.appendEscaped(slice)
                    } else {
                        latin1.removeAll(keepingCapacity: true)
                        for c in slice {
                            if c < 0x80 { latin1.append(c) } else { latin1.append(0xC0 | c >> 6); latin1.append(0x80 | c & 0x3F) }
                        }
                        latin1.withUnsafeBufferPointer { _ = w.appendEscaped($0) }
                    }
                    w.drainIfLarge()
                }
            }
        }
    }
}

enum Base64 {
    private static let table = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// `bytes` in base64 straight into `out` (no intermediate string: a 16 MiB body is one copy).
    static func append(_ b: UnsafeBufferPointer<UInt8>, to out: ByteBuffer) {
        let total = (b.count + 2) / 3 * 4
        let p = out.reserve(total)
        var o = 0
        var i = 0
        do {
            while i + 3 <= b.count {
                let v = UInt32(b[i]) << 16 | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2])
                p[o] = table[Int(v >> 18)]; p[o + 1] = table[Int(v >> 12 & 63)]
                p[o + 2] = table[Int(v >> 6 & 63)]; p[o + 3] = table[Int(v & 63)]
                i += 3
                o += 4
            }
            let rest = b.count - i
            if rest == 1 {
                let v = UInt32(b[i]) << 16
                p[o] = table[Int(v >> 18)]; p[o + 1] = table[Int(v >> 12 & 63)]; p[o + 2] = 0x3D; p[o + 3] = 0x3D
            } else if rest == 2 {
                let v = UInt32(b[i]) << 16 | UInt32(b[i + 1]) << 8
                p[o] = table[Int(v >> 18)]; p[o + 1] = table[Int(v >> 12 & 63)]; p[o + 2] = table[Int(v >> 6 & 63)]; p[o + 3] = 0x3D
            }
        }
        out.commit(total)
    }
}
